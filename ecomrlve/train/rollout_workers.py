"""Rollout workers for asynchronous RL (`training.rollout.async`): episodes are played in another
process while the trainer updates, with the newest weights the worker has (AReaL).

Three channels between the trainer and a worker, and nothing else:

* orders   the trainer draws a batch of prompts (curriculum, tool widths, seeds) and submits it
           as a `RolloutOrder`; a worker plays the orders it is given in turn;
* weights  `publish(policy, version)` copies the trainer's weights into shared memory and bumps
           the version; a worker loads the newest version between batches, never during one,
           so every episode of a batch is sampled by one version (which it records);
* results  a `PlayedBatch` once every group of the order is in (a group is complete only when
           all its samples are), in the order batches complete.

The trainer decides what is trained: it bounds how many orders are in flight, and drops a batch
sampled too many versions before the update that would consume it (`loop.py`).

`RolloutWorkers` is the interface the loop needs. `ProcessRolloutWorkers` is the one
implementation so far: one spawned process running the HF engine on CPU, which ends with the
trainer however the trainer ends: it is a daemon process (a normal exit ends it), handed to
`procs.reap_on_exit` (a SIGKILL of the trainer ends it), and it watches its parent's pid. A vLLM
engine on its own GPUs or the endpoint server pool would implement the same calls (their
`publish` is the engine's `sync_weights`); the config refuses them by name until they do
(`config._check_async`).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import queue
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import torch
import torch.multiprocessing as mp

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog
from ecomrlve.procs import exit_with_parent, reap_on_exit
from ecomrlve.tasks import Task
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.rollout import Episode, run_episodes

log = logging.getLogger(__name__)

ToolSchemas = list[dict[str, Any]] | None
POLL_SECONDS = 1.0  # how often a waiting trainer checks that the worker still runs


@dataclass(frozen=True)
class RolloutOrder:
    """One batch of prompts to play: `group_size` samples of each task, each group from its
    own seed (as the synchronous loop seeds them)."""

    order: tuple[int, int]  # (step it was drawn in, its number within that step)
    tasks: list[Task]
    seed: int
    group_seeds: list[int]
    tools: list[ToolSchemas] | None = None  # the tool schemas each task offers; None: all


@dataclass
class PlayedBatch:
    """The episodes of one order, all sampled by weights `policy_version`."""

    order: tuple[int, int]
    episodes: list[Episode]
    policy_version: int
    seconds: float  # the worker's time playing it


class RolloutWorkers(Protocol):
    """What the asynchronous loop needs from whatever plays episodes off the trainer's thread."""

    @property
    def in_flight(self) -> int:
        """Orders submitted whose batch the trainer has not taken yet."""
        ...

    @property
    def ready(self) -> int:
        """Batches completed and waiting for the trainer (0: the trainer will wait)."""
        ...

    def submit(self, order: RolloutOrder) -> None: ...

    def next_batch(self) -> PlayedBatch:
        """The next completed batch (blocks until one is)."""
        ...

    def publish(self, policy: torch.nn.Module, version: int) -> None:
        """Make `policy`'s weights, as `version`, the ones the next batches are sampled with."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class WorkerSpec:
    """What a rollout process builds its engine and env from (pickled to it once).

    `model` is a copy of the policy (its weights are replaced by each publish); `catalog` loads
    the catalog in the worker (a loaded catalog is not sent between processes); `play` is
    `rollout.run_episodes` or a test's stand-in, importable by name."""

    model: torch.nn.Module
    pad_token_id: int
    chat: ChatFormat
    env: EnvConfig
    agent: AgentConfig
    group_size: int
    catalog: Callable[[], Catalog | None] | None = None
    play: Callable[..., list[Episode]] = run_episodes
    threads: int = 1  # torch threads of the worker


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class ProcessRolloutWorkers:
    """One rollout process with the HF engine. Use as a context manager: the trainer's torch
    threads are cut to the cores the worker leaves free until it closes.

    >>> with ProcessRolloutWorkers(spec) as workers:  # doctest: +SKIP
    ...     train_dapo(policy, engine, chat, catalog, sampler, cfg, workers=workers)
    """

    def __init__(self, spec: WorkerSpec) -> None:
        if next(spec.model.parameters()).device.type != "cpu":
            raise ValueError("ProcessRolloutWorkers runs the HF engine on CPU; got a GPU model")
        context = mp.get_context("spawn")
        model = copy.deepcopy(spec.model).eval().requires_grad_(False)
        # the staging copy publishes write into; the worker copies it out between batches
        self._weights = {
            k: v.detach().clone().share_memory_() for k, v in model.state_dict().items()
        }
        self._version = context.Value("q", -1, lock=False)
        self._lock = context.Lock()
        self._orders: Any = context.Queue()
        self._results: Any = context.Queue()
        self._pending: set[tuple[int, int]] = set()
        self._trainer_threads = torch.get_num_threads()
        self._spec = spec
        self._process = context.Process(
            target=_worker_main,
            args=(
                dataclasses.replace(spec, model=model),
                self._weights,
                self._version,
                self._lock,
                self._orders,
                self._results,
                os.getpid(),
            ),
            name="ecomrlve-rollout",
            daemon=True,  # ended by this process's exit; a SIGKILL is caught by the worker itself
        )
        self._process.start()
        # a SIGKILL of the trainer skips the daemon cleanup: the reaper ends the worker then,
        # even while it still imports torch (its own parent watch starts only after that)
        reap_on_exit(self._process.pid)
        torch.set_num_threads(max(1, usable_cpus() - spec.threads))
        log.info(
            "rollout process %d started (%d torch thread(s)); trainer keeps %d",
            self._process.pid,
            spec.threads,
            torch.get_num_threads(),
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def ready(self) -> int:
        try:
            return self._results.qsize()
        except NotImplementedError:  # macOS has no sem_getvalue
            return 0

    def submit(self, order: RolloutOrder) -> None:
        if order.order in self._pending:
            raise ValueError(f"order {order.order} is already in flight")
        self._pending.add(order.order)
        self._orders.put(order)

    def publish(self, policy: torch.nn.Module, version: int) -> None:
        state = policy.state_dict()
        with self._lock, torch.no_grad():
            for name, tensor in self._weights.items():
                tensor.copy_(state[name])
            self._version.value = version

    def next_batch(self) -> PlayedBatch:
        if not self._pending:
            raise RuntimeError("no rollout order in flight: submit one before waiting for it")
        while True:
            try:
                message = self._results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if not self._process.is_alive():
                    raise RuntimeError(
                        f"the rollout process ended (exit code {self._process.exitcode}) with "
                        f"{len(self._pending)} order(s) in flight"
                    ) from None
                continue
            if isinstance(message, str):  # the worker's traceback
                raise RuntimeError(f"the rollout process failed:\n{message}")
            self._pending.discard(message.order)
            return message

    def close(self) -> None:
        """End the worker now (nothing it holds is worth waiting for) and give the trainer its
        threads back."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        for channel in (self._orders, self._results):
            channel.cancel_join_thread()  # orders never read must not block our exit
            channel.close()
        self._pending.clear()
        torch.set_num_threads(self._trainer_threads)

    def __enter__(self) -> ProcessRolloutWorkers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _worker_main(
    spec: WorkerSpec,
    weights: dict[str, torch.Tensor],
    version: Any,
    lock: Any,
    orders: Any,
    results: Any,
    parent: int,
) -> None:
    """The rollout process: play each order with the newest published weights."""
    exit_with_parent(parent)  # the trainer killed with SIGKILL: end within a poll interval
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
    torch.set_num_threads(spec.threads)
    from ecomrlve.train.engines.hf import HFEngine  # transformers loads in the worker only

    model = spec.model
    engine = HFEngine(model, spec.pad_token_id)
    try:
        catalog = spec.catalog() if spec.catalog is not None else None
    except BaseException:
        results.put(traceback.format_exc())
        return
    have = -1
    while True:
        order: RolloutOrder = orders.get()
        with lock:  # between batches: take the newest weights, never half of them
            if version.value != have:
                model.load_state_dict(weights)
                have = int(version.value)
        started = time.perf_counter()
        try:
            extra: dict[str, Any] = {}
            if order.tools is not None:
                offered = {t.task_id: s for t, s in zip(order.tasks, order.tools, strict=True)}
                extra["tools_for"] = lambda task, offered=offered: offered[task.task_id]
            episodes = spec.play(
                order.tasks,
                engine,
                spec.chat,
                catalog,
                env_config=spec.env,
                agent=spec.agent,
                samples_per_task=spec.group_size,
                seed=order.seed,
                group_seeds=order.group_seeds,
                **extra,
            )
        except BaseException:
            results.put(traceback.format_exc())
            return
        for episode in episodes:
            episode.policy_version = have
        results.put(PlayedBatch(order.order, episodes, have, time.perf_counter() - started))
