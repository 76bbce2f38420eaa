"""Learning-rate schedules shared by SFT and DAPO: linear warmup, then constant or cosine.

The factor is a pure function of the step, so a resumed run sets the same rate as the run it
continues without storing scheduler state.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

MIN_FACTOR = 0.1  # cosine decays to 10% of the peak rate, not to zero


def lr_factor(
    step: int, total: int, *, warmup: int, schedule: Literal["constant", "cosine"]
) -> float:
    """Multiplier of the peak rate at 1-based `step` of `total`.

    >>> [round(lr_factor(s, 10, warmup=2, schedule="cosine"), 2) for s in (1, 2, 3, 10)]
    [0.5, 1.0, 1.0, 0.1]
    """
    if warmup and step <= warmup:
        return step / warmup
    if schedule == "constant" or total <= warmup + 1:
        return 1.0
    progress = (step - warmup - 1) / (total - warmup - 1)  # 0 right after warmup, 1 at the end
    return MIN_FACTOR + (1.0 - MIN_FACTOR) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
