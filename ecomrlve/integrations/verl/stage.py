"""The pipeline's train stage when `training.engine: verl`: verl's trainer on the curriculum.

Writes the verl config from ours (`launch`), checks it with verl's own
loader before anything runs, then runs `python -m verl.trainer.main_ppo ...` on this machine's
GPUs. Not cached: verl keeps its own checkpoints under OUTPUT/verl/checkpoints.
"""

from __future__ import annotations

from typing import Any

from prefect import task

from ecomrlve.config import EcomConfig
from ecomrlve.integrations.verl import launch as launcher


def visible_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@task(name="train_verl")
def verl_train_stage(
    config: EcomConfig, data_dir: str, output: str, curriculum: str
) -> dict[str, Any]:
    """Run verl's trainer; returns {"run_id", "output", "engine", "command", "held_out"}.

    Raises RuntimeError without GPUs (verl's rollout needs vLLM on CUDA) or when verl exits
    with an error.
    """
    gpus = visible_gpus()
    if gpus < 1:
        raise RuntimeError(
            "training.engine verl needs CUDA GPUs (verl rolls out with vLLM); use "
            "`ecomrlve train --engine verl --print-only` to see the config on this machine"
        )
    launch = launcher.verl_launch(config, data_dir, curriculum, output, gpus=gpus)
    launcher.compose_verl_config(launch)  # verl's own loader accepts it before anything runs
    launch.write_files()
    status = launch.run(data_dir)  # ends with the stage, even on kill -9
    if status != 0:
        raise RuntimeError(f"verl's trainer exited with status {status}")
    return {
        "run_id": f"verl-{curriculum}",
        "output": str(output),
        "engine": "verl",
        "command": launch.shell(),
        "held_out": {},
    }
