"""Checkpoints that resume a DAPO run exactly: weights, optimizer, every RNG, and trainer state.

A checkpoint is one folder `ROOT/step-NNNNNNNN/`:

    model + optimizer   torch.distributed.checkpoint shards (`.metadata`, `__R_0.distcp`)
    rng-rank{R}.json    python / numpy / torch (CPU and CUDA) global RNGs and the named
                        generators (e.g. the rollout sampling generator) of rank R
    stateful.pt         `state_dict()` of each stateful object (curriculum, LR scheduler, ...)
    trainer_state.json  the step, data position and any JSON state the loop passes, + metadata

Why these choices:
- torch.distributed.checkpoint (DCP) saves the FSDP2 shards each rank holds, without gathering an
  8B model's optimizer state on one rank, and reloads under a different world size (a 2-GPU
  checkpoint resumes on 1 GPU). Without a process group it writes a single-process checkpoint.
- Parameters with `requires_grad=False` are not saved: training never changes them, so resume
  rebuilds them from the base model. For a LoRA run that makes checkpoints adapter-sized.
- Atomic: every rank writes into `ROOT/.step-NNNNNNNN.tmp`, and rank 0 renames it into place
  after a barrier, so a run killed mid-save leaves the previous checkpoint as the latest one.
  With several machines, ROOT must be on a filesystem they share.
- RNG state is JSON (tensors as base64), read without unpickling anything.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import random
import re
import shutil
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from ecomrlve.store import fsync_dir
from ecomrlve.train.distributed import barrier, group_active

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 1
_STEP_DIR = re.compile(r"^step-(\d{8})$")
TRAINER_STATE = "trainer_state.json"
STATEFUL_FILE = "stateful.pt"


class CheckpointError(ValueError):
    """A checkpoint that cannot be written or read; the message names the folder and why."""


@runtime_checkable
class Stateful(Protocol):
    """Anything with `state_dict()` / `load_state_dict()`: curriculum, LR scheduler, sampler."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


# A generator whose state is saved and restored in place.
GeneratorLike = torch.Generator | np.random.Generator | random.Random


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------


def checkpoint_dir(root: str | Path, step: int) -> Path:
    """`ROOT/step-NNNNNNNN`: zero-padded so a plain sort is a step sort."""
    if step < 0:
        raise CheckpointError(f"checkpoint step must be >= 0, got {step}")
    return Path(root) / f"step-{step:08d}"


def list_checkpoints(root: str | Path) -> list[tuple[int, Path]]:
    """Complete checkpoints under `root` as `(step, path)`, oldest first.

    A folder counts only once its `trainer_state.json` exists, which is written last; temp
    folders of an interrupted save (`.step-*.tmp`) never match.
    """
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and (child / TRAINER_STATE).is_file():
            found.append((int(match.group(1)), child))
    return sorted(found)


def latest_checkpoint(root: str | Path) -> Path | None:
    """The newest complete checkpoint under `root`, or None."""
    found = list_checkpoints(root)
    return found[-1][1] if found else None


# ---------------------------------------------------------------------------------------------
# RNG state (JSON)
# ---------------------------------------------------------------------------------------------


def _tensor_to_b64(t: torch.Tensor) -> str:
    return base64.b64encode(t.cpu().numpy().tobytes()).decode("ascii")


def _b64_to_byte_tensor(s: str) -> torch.Tensor:
    return torch.frombuffer(bytearray(base64.b64decode(s)), dtype=torch.uint8).clone()


def _generator_state(gen: GeneratorLike) -> dict[str, Any]:
    if isinstance(gen, torch.Generator):
        return {
            "kind": "torch",
            "device": str(gen.device),
            "state": _tensor_to_b64(gen.get_state()),
        }
    if isinstance(gen, np.random.Generator):
        return {"kind": "numpy", "state": gen.bit_generator.state}
    if isinstance(gen, random.Random):
        version, internal, gauss = gen.getstate()
        return {"kind": "python", "state": [version, list(internal), gauss]}
    raise CheckpointError(f"cannot checkpoint a generator of type {type(gen).__name__}")


def _restore_generator(gen: GeneratorLike, saved: dict[str, Any], name: str) -> None:
    kind = saved.get("kind")
    if isinstance(gen, torch.Generator) and kind == "torch":
        gen.set_state(_b64_to_byte_tensor(saved["state"]))
    elif isinstance(gen, np.random.Generator) and kind == "numpy":
        gen.bit_generator.state = saved["state"]
    elif isinstance(gen, random.Random) and kind == "python":
        version, internal, gauss = saved["state"]
        gen.setstate((version, tuple(internal), gauss))
    else:
        raise CheckpointError(
            f"generator {name!r} is a {type(gen).__name__} but the checkpoint holds a {kind} one"
        )


def capture_rng_state(generators: Mapping[str, GeneratorLike] | None = None) -> dict[str, Any]:
    """Global RNGs (python, numpy legacy, torch CPU, every CUDA device) plus named generators."""
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    version, internal, gauss = random.getstate()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [np_name, np_keys.tolist(), int(np_pos), int(np_has_gauss), float(np_gauss)],
        "torch": _tensor_to_b64(torch.get_rng_state()),
        "cuda": (
            [_tensor_to_b64(s) for s in torch.cuda.get_rng_state_all()]
            if torch.cuda.is_available()
            else []
        ),
        "generators": {name: _generator_state(g) for name, g in (generators or {}).items()},
    }


def restore_rng_state(
    state: dict[str, Any], generators: Mapping[str, GeneratorLike] | None = None
) -> None:
    """Inverse of `capture_rng_state`; named generators are restored in place."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = state["numpy"]
    np.random.set_state(
        (np_name, np.asarray(np_keys, dtype=np.uint32), np_pos, np_has_gauss, np_gauss)
    )
    torch.set_rng_state(_b64_to_byte_tensor(state["torch"]))
    if state["cuda"] and torch.cuda.is_available():
        saved = [_b64_to_byte_tensor(s) for s in state["cuda"]]
        if len(saved) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(saved)
        else:
            log.warning(
                "checkpoint has CUDA RNG states for %d devices, this process sees %d: "
                "CUDA RNGs not restored",
                len(saved),
                torch.cuda.device_count(),
            )
    saved_gens = state.get("generators", {})
    for name, gen in (generators or {}).items():
        if name not in saved_gens:
            raise CheckpointError(f"checkpoint has no state for generator {name!r}")
        _restore_generator(gen, saved_gens[name], name)


# ---------------------------------------------------------------------------------------------
# Distributed helpers (every call works without a process group)
# ---------------------------------------------------------------------------------------------


def _rank() -> int:
    return torch.distributed.get_rank() if group_active() else 0


def _state_dict_options(*, loading: bool = False):
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    # Loading is non-strict only towards frozen weights: the template passed to dcp.load holds
    # every trainable tensor, and dcp.load fails on any the checkpoint lacks.
    return StateDictOptions(ignore_frozen_params=True, strict=not loading)


@contextlib.contextmanager
def _quiet_single_process() -> Iterator[None]:
    """DCP warns that it assumes a single process when there is no group: that is the intent."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w") as fh:
        json.dump(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())


# ---------------------------------------------------------------------------------------------
# Save / load
# ---------------------------------------------------------------------------------------------


def save_checkpoint(
    root: str | Path,
    step: int,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    state: Mapping[str, Any] | None = None,
    stateful: Mapping[str, Stateful] | None = None,
    generators: Mapping[str, GeneratorLike] | None = None,
    keep_last: int = 3,
) -> Path:
    """Write the checkpoint of `step` atomically and keep only the newest `keep_last`.

    Call it on every rank (it is collective under a process group). `state` is JSON: data
    position, curriculum counters, anything small. `stateful` objects go through
    `state_dict()`. `generators` are saved per rank. Returns the final folder.

    Example:
        save_checkpoint(run / "checkpoints", step, model=policy, optimizer=opt,
                        state={"data_position": pos}, stateful={"curriculum": curriculum},
                        generators={"rollout": rollout_gen}, keep_last=3)
    """
    if keep_last < 1:
        raise CheckpointError(f"keep_last must be >= 1, got {keep_last}")
    root = Path(root)
    final = checkpoint_dir(root, step)
    tmp = root / f".{final.name}.tmp"
    rank = _rank()
    started = time.perf_counter()
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)  # left by a save that was killed
        tmp.mkdir()
    barrier()
    _save_shards(tmp, model, optimizer)  # collective
    _write_json(tmp / f"rng-rank{rank}.json", capture_rng_state(generators))
    barrier()
    if rank == 0:
        meta = {
            "format": CHECKPOINT_FORMAT,
            "step": step,
            "world_size": torch.distributed.get_world_size() if group_active() else 1,
            "has_optimizer": optimizer is not None,
            "stateful": sorted(stateful or {}),
            "generators": sorted(generators or {}),
            "state": dict(state or {}),
        }
        _complete(tmp, meta, stateful)
        _swap_in(root, tmp, final)
        for _, stale in list_checkpoints(root)[:-keep_last]:
            shutil.rmtree(stale, ignore_errors=True)
        log.info("checkpoint %s written in %.1fs", final, time.perf_counter() - started)
    barrier()
    return final


def _save_shards(
    tmp: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None
) -> None:
    """The model's (and optimizer's) state dicts into `tmp`, each rank its shard."""
    import torch.distributed.checkpoint as dcp

    with _quiet_single_process():
        dcp.save(_state_dicts(model, optimizer), checkpoint_id=str(tmp), no_dist=not group_active())


def _state_dicts(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> dict[str, Any]:
    """`{"model": ..., "optim": ...}` (no "optim" without an optimizer): what DCP saves, or
    fills in place when it loads."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict

    options = _state_dict_options()
    if optimizer is not None:
        model_sd, optim_sd = get_state_dict(model, optimizer, options=options)
        return {"model": model_sd, "optim": optim_sd}
    return {"model": get_model_state_dict(model, options=options)}


def _complete(tmp: Path, meta: dict[str, Any], stateful: Mapping[str, Stateful] | None) -> None:
    """Write the `stateful` objects, then `meta` as the completeness marker (rank 0)."""
    if stateful:
        torch.save({name: obj.state_dict() for name, obj in stateful.items()}, tmp / STATEFUL_FILE)
    try:
        # The completeness marker: list_checkpoints ignores a folder without it.
        _write_json(tmp / TRAINER_STATE, meta)
    except TypeError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(f"checkpoint state must be JSON-serialisable: {err}") from None
    fsync_dir(tmp)


def _swap_in(root: Path, tmp: Path, final: Path) -> None:
    """Rename the complete `tmp` to `final`; an existing `final` (a step saved again after a
    resume) is swapped out first."""
    if final.exists():
        old = root / f".{final.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    fsync_dir(root)


def read_trainer_state(path: str | Path) -> dict[str, Any]:
    """The `trainer_state.json` of a checkpoint: step, world size, and the loop's JSON state."""
    path = Path(path)
    try:
        meta = json.loads((path / TRAINER_STATE).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path} is not a complete checkpoint (no {TRAINER_STATE})") from None
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{path / TRAINER_STATE}: not valid JSON: {err}") from None
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path}: checkpoint format {meta.get('format')} is not {CHECKPOINT_FORMAT}"
        )
    return meta


def load_checkpoint(
    path: str | Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    stateful: Mapping[str, Stateful] | None = None,
    generators: Mapping[str, GeneratorLike] | None = None,
) -> dict[str, Any]:
    """Restore everything `save_checkpoint` wrote into live objects; return the trainer state.

    The model (already wrapped the same way: plain, FSDP2 or LoRA) and the optimizer (built
    over the same parameters) are loaded in place. RNGs come from this rank's file; resuming
    under a different world size restores weights and optimizer but not per-rank RNG streams,
    which is logged.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (
        set_model_state_dict,
        set_state_dict,
    )

    path = Path(path)
    meta = read_trainer_state(path)
    if optimizer is not None and not meta["has_optimizer"]:
        raise CheckpointError(f"{path} holds no optimizer state")
    missing = sorted(set(stateful or {}) - set(meta["stateful"]))
    if missing:
        raise CheckpointError(f"{path} holds no state for {missing}")

    payload = _state_dicts(model, optimizer)
    try:
        with _quiet_single_process():
            dcp.load(payload, checkpoint_id=str(path), no_dist=not group_active())
    except Exception as err:  # DCP raises a CheckpointException wrapping per-rank failures
        raise CheckpointError(f"{path}: cannot load model/optimizer: {err}") from None
    if optimizer is not None:
        set_state_dict(
            model,
            optimizer,
            model_state_dict=payload["model"],
            optim_state_dict=payload["optim"],
            options=_state_dict_options(loading=True),
        )
    else:
        set_model_state_dict(model, payload["model"], options=_state_dict_options(loading=True))

    if stateful:
        saved = torch.load(path / STATEFUL_FILE, weights_only=True)
        for name, obj in stateful.items():
            obj.load_state_dict(saved[name])

    rank = _rank()
    world = torch.distributed.get_world_size() if group_active() else 1
    rng_file = path / f"rng-rank{rank}.json"
    if world != meta["world_size"]:
        log.warning(
            "checkpoint %s was written by %d ranks, resuming on %d: weights and optimizer are "
            "resharded, RNG streams start from rank files where they exist",
            path,
            meta["world_size"],
            world,
        )
    if rng_file.is_file():
        restore_rng_state(json.loads(rng_file.read_text()), generators)
    elif generators:
        raise CheckpointError(f"{path} has no RNG state for rank {rank}")
    barrier()
    return meta


# ---------------------------------------------------------------------------------------------
# The loop's view: save every N steps, resume from the newest
# ---------------------------------------------------------------------------------------------


class Checkpointer:
    """What a training loop calls: `restore` once before its first step, `after_step` after
    each one. Saves every `every` steps and at the last step, into `root`, keeping `keep_last`.

    Example (loop.py):
        start = checkpoints.restore(policy, optimizer, {"sampler": sampler}) if checkpoints else 0
        for step in range(start + 1, total_steps + 1):
            ...
            if checkpoints:
                checkpoints.after_step(step, total_steps, policy, optimizer, {"sampler": sampler})
    """

    def __init__(
        self, root: str | Path, *, every: int, keep_last: int = 3, resume: bool = False
    ) -> None:
        if every < 1:
            raise CheckpointError(f"checkpoint interval must be >= 1 step, got {every}")
        if keep_last < 1:
            raise CheckpointError(f"keep_last must be >= 1, got {keep_last}")
        self.root = Path(root)
        self.every = every
        self.keep_last = keep_last
        self.resume = resume
        self.last_saved: Path | None = None

    def restore(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        stateful: Mapping[str, Stateful] | None = None,
        generators: Mapping[str, GeneratorLike] | None = None,
    ) -> int:
        """Load the newest checkpoint when resuming; return the last completed step (0: none)."""
        if not self.resume:
            return 0
        path = latest_checkpoint(self.root)
        if path is None:
            log.info("resume: no checkpoint under %s, starting at step 1", self.root)
            return 0
        meta = load_checkpoint(
            path, model=model, optimizer=optimizer, stateful=stateful, generators=generators
        )
        log.info("resumed from %s (step %d)", path, meta["step"])
        return int(meta["step"])

    def after_step(
        self,
        step: int,
        total_steps: int,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        stateful: Mapping[str, Stateful] | None = None,
        generators: Mapping[str, GeneratorLike] | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> Path | None:
        """Save when `step` is a multiple of `every` or the last step; else do nothing."""
        if step % self.every and step != total_steps:
            return None
        self.last_saved = save_checkpoint(
            self.root,
            step,
            model=model,
            optimizer=optimizer,
            state={"total_steps": total_steps, **(state or {})},
            stateful=stateful,
            generators=generators,
            keep_last=self.keep_last,
        )
        return self.last_saved
