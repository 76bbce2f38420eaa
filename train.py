"""The article's entry point: `python train.py --config configs/ecom_rlve.yaml --output DIR`.

A thin forward to `ecomrlve train` (same options, e.g. `--data`, `--dry-run`); for several GPUs
use `torchrun --nproc_per_node N -m ecomrlve train ...`.
"""

import sys

from ecomrlve.cli import app

if __name__ == "__main__":
    app(args=["train", *sys.argv[1:]], prog_name="ecomrlve train.py")
