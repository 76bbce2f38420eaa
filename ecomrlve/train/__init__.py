"""Training: SFT warm-start, DAPO, rollout engines, evaluation.

Everything that needs torch/transformers lives under this package, so `import ecomrlve` stays
light. Importing it switches the Hugging Face libraries offline for this process: weights are
only ever read from a local folder or the local cache, never downloaded.
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Our rich progress bar covers loading and saving; tqdm bars per shard only clutter the terminal.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
