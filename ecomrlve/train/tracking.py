"""Experiment tracking where RL users look: `training.loggers` (verl's `trainer.logger`).

The DuckDB tables (`train_steps`, `train_scenarios`, `eval_episodes`, ... written by
`results.RunLog`) are the run's record and are always written; `loggers` names where the same
metrics also go, one class per backend:

* `console`: one INFO log line per record with every metric (`rl step 3 | rl/loss -0.012 | ...`;
  the CLI shows INFO with `ecomrlve -v`);
* `tensorboard`: event files under `OUTPUT/tensorboard` (`tensorboard --logdir OUTPUT`);
* `wandb`: a W&B run named after the run id; `WANDB_MODE` picks online or offline, and without
  it the run is offline (a folder under `WANDB_DIR`, default `OUTPUT`, that `wandb sync`
  uploads later), so nothing leaves the machine unless asked. `WANDB_PROJECT` names the
  project (default `ecomrlve`).

Three step axes, each its own x-axis in both tools: `rl/*` by DAPO step, `sft/*` by SFT
optimizer step, and `eval/<stage>/*` (held-out base, sft, final) by the DAPO steps done when it
ran. tensorboard and wandb are optional extras, imported only when listed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

LOGGER_NAMES = ("console", "duckdb", "tensorboard", "wandb")
# logger -> (module it imports, the pyproject extra that installs it)
OPTIONAL_LOGGERS: dict[str, tuple[str, str]] = {
    "tensorboard": ("tensorboard", "tensorboard"),
    "wandb": ("wandb", "wandb"),
}
AXES = ("rl", "sft", "eval")


class MetricLogger(Protocol):
    """One backend: `log(axis, step, metrics)` with `metrics` already named `axis/...`."""

    def log(self, axis: str, step: int, metrics: Mapping[str, float]) -> None: ...

    def close(self) -> None: ...


def check_loggers(names: Sequence[str]) -> None:
    """Raise ValueError naming the extra to install when a listed backend is missing (called
    before a run writes anything)."""
    for name in names:
        if name not in LOGGER_NAMES:
            raise ValueError(f"training.loggers: unknown logger {name!r}; one of {LOGGER_NAMES}")
        module, extra = OPTIONAL_LOGGERS.get(name, (None, None))
        if module and importlib.util.find_spec(module) is None:
            raise ValueError(
                f"training.loggers lists {name} but the {module} package is not installed: "
                f"pip install 'ecomrlve[{extra}]'"
            )


def scalars(metrics: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """The numeric entries of `metrics` as `prefix/key` floats: bools as 0/1, a mapping (e.g.
    `success_by_scenario`) one level down as `prefix/key/name`; strings and None dropped, and
    a JSON-encoded mapping read back first."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, str) and value.startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, Mapping):
            for name, inner in value.items():
                if isinstance(inner, int | float):
                    out[f"{prefix}/{key}/{name}"] = float(inner)
        elif isinstance(value, bool | int | float):
            out[f"{prefix}/{key}"] = float(value)
    return {k: v for k, v in out.items() if math.isfinite(v)}


class ConsoleLogger:
    """Every metric of a record on one log line (verl's console logger)."""

    def log(self, axis: str, step: int, metrics: Mapping[str, float]) -> None:
        shown = " | ".join(f"{key} {value:.4g}" for key, value in sorted(metrics.items()))
        log.info("%s step %d | %s", axis, step, shown)

    def close(self) -> None:
        return None


class TensorBoardLogger:
    """Scalars in TensorBoard event files under `log_dir` (torch's `SummaryWriter`); the config
    as a text entry. Flushed after each record, so a crashed run keeps its curves."""

    def __init__(self, log_dir: Path, config: Mapping[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))
        self.writer.add_text("config", f"```\n{json.dumps(config, indent=2, sort_keys=True)}\n```")

    def log(self, axis: str, step: int, metrics: Mapping[str, float]) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLogger:
    """A W&B run: offline unless `WANDB_MODE` says otherwise; each axis its own step metric
    (`rl/step`, `sft/step`, `eval/step`), so SFT and RL curves do not share an x-axis."""

    def __init__(self, directory: Path, run_id: str, config: Mapping[str, Any]) -> None:
        import wandb

        directory = Path(os.environ.get("WANDB_DIR") or directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "ecomrlve"),
            name=run_id,
            dir=str(directory),
            config=dict(config),
            mode=os.environ.get("WANDB_MODE", "offline"),
            reinit="finish_previous",
        )
        for axis in AXES:
            self.run.define_metric(f"{axis}/step")
            self.run.define_metric(f"{axis}/*", step_metric=f"{axis}/step")

    def log(self, axis: str, step: int, metrics: Mapping[str, float]) -> None:
        self.run.log({f"{axis}/step": step, **metrics})

    def close(self) -> None:
        self.run.finish()


class Tracking:
    """The run's loggers (rank 0 only; other ranks hold an empty one)."""

    def __init__(self, loggers: Sequence[MetricLogger] = ()) -> None:
        self.loggers = list(loggers)

    def log_rl_step(self, metrics: Mapping[str, Any]) -> None:
        """One DAPO step's row (what `train_steps` stores), by its `step`."""
        step = int(metrics["step"])
        self._emit("rl", step, scalars({k: v for k, v in metrics.items() if k != "step"}, "rl"))

    def log_rl_quarters(self, quarters: Mapping[str, float], rl_step: int) -> None:
        """Training-rollout success, first vs last quarter of RL (`metrics.quarter_gain`)."""
        self._emit("rl", rl_step, scalars(quarters, "rl/success_quarters"))

    def log_sft(self, losses: Sequence[float]) -> None:
        """The SFT loss curve, one record per optimizer step (1-based)."""
        for step, loss in enumerate(losses, start=1):
            self._emit("sft", step, scalars({"loss": loss}, "sft"))

    def log_eval(self, stage: str, overall: Mapping[str, float], rl_step: int) -> None:
        """Held-out results of `stage` (base, sft, final) after `rl_step` DAPO steps."""
        self._emit("eval", rl_step, scalars(overall, f"eval/{stage}"))

    def _emit(self, axis: str, step: int, metrics: dict[str, float]) -> None:
        if not metrics:
            return
        for logger in self.loggers:
            logger.log(axis, step, metrics)

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()
        self.loggers = []


def open_tracking(
    names: Sequence[str], output: Path, run_id: str, config: Mapping[str, Any]
) -> Tracking:
    """The loggers `training.loggers` names, writing under the run folder `output`."""
    check_loggers(names)
    loggers: list[MetricLogger] = []
    for name in dict.fromkeys(names):
        if name == "console":
            loggers.append(ConsoleLogger())
        elif name == "tensorboard":
            loggers.append(TensorBoardLogger(output / "tensorboard", config))
        elif name == "wandb":
            loggers.append(WandbLogger(output, run_id, config))
    return Tracking(loggers)
