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

`RolloutWorkers` is the interface the loop needs. Two implementations:

* `ProcessRolloutWorkers`: spawned processes (`rollout.processes`) running the HF engine on
  CPU with one torch thread each. Each ends with the trainer however the trainer ends: it is a
  daemon process (a normal exit ends it), handed to `procs.reap_on_exit` (a SIGKILL of the
  trainer ends it), and it watches its parent's pid.
* `EngineRolloutWorkers`: a thread of the trainer driving an engine that generates elsewhere,
  the endpoint server pool (vLLM/SGLang servers on their own GPUs); `publish` stages the
  weights and the thread pushes them with the engine's `sync_weights` between batches.

A vLLM engine inside the trainer's process is refused by name (`config._check_async`): it
shares the trainer's GPUs, so there is nothing to overlap; serve it as an endpoint pool instead.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

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
    threads: int = 1  # torch threads of each worker
    processes: int = 1  # rollout processes (`rollout.processes`), taking orders from one queue


def _copy_weights(policy: torch.nn.Module, into: dict[str, torch.Tensor]) -> None:
    """Copy `policy`'s weights into the tensors of `into` (same names), in place."""
    state = policy.state_dict()
    with torch.no_grad():
        for name, tensor in into.items():
            tensor.copy_(state[name])


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _OrderQueue:
    """What every implementation shares: orders in, completed batches out, in completion order.
    Subclasses start the players and say how one ended (`_ended`)."""

    _orders: Any
    _results: Any
    _who = "the rollout worker"

    def __init__(self) -> None:
        self._pending: set[tuple[int, int]] = set()

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

    def next_batch(self) -> PlayedBatch:
        if not self._pending:
            raise RuntimeError("no rollout order in flight: submit one before waiting for it")
        while True:
            try:
                message = self._results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                ended = self._ended()
                if ended is not None:
                    raise RuntimeError(
                        f"{ended} with {len(self._pending)} order(s) in flight"
                    ) from None
                continue
            if isinstance(message, str):  # the worker's traceback
                raise RuntimeError(f"{self._who} failed:\n{message}")
            self._pending.discard(message.order)
            return message

    def _ended(self) -> str | None:
        """How the player ended, or None while it runs."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ProcessRolloutWorkers(_OrderQueue):
    """Rollout processes with the HF engine (`spec.processes`, one torch thread each), taking
    orders from one queue, so batches may complete out of order (the loop drops any that is
    too stale). Use as a context manager: the trainer's torch threads are cut to the cores the
    workers leave free (at least one) until it closes.

    >>> with ProcessRolloutWorkers(spec) as workers:  # doctest: +SKIP
    ...     train_dapo(policy, engine, chat, catalog, sampler, cfg, workers=workers)
    """

    _who = "a rollout process"

    def __init__(self, spec: WorkerSpec) -> None:
        if next(spec.model.parameters()).device.type != "cpu":
            raise ValueError("ProcessRolloutWorkers runs the HF engine on CPU; got a GPU model")
        super().__init__()
        context = mp.get_context("spawn")
        model = copy.deepcopy(spec.model).eval().requires_grad_(False)
        # the staging copy publishes write into; each worker copies it out between batches
        self._weights = {
            k: v.detach().clone().share_memory_() for k, v in model.state_dict().items()
        }
        self._version = context.Value("q", -1, lock=False)
        self._lock = context.Lock()
        self._orders = context.Queue()
        self._results = context.Queue()
        self._trainer_threads = torch.get_num_threads()
        self._processes = [
            context.Process(
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
                daemon=True,  # ended by this process's exit; a SIGKILL is caught by each worker
            )
            for _ in range(spec.processes)
        ]
        for process in self._processes:
            process.start()
            # a SIGKILL of the trainer skips the daemon cleanup: the reaper ends the worker
            # then, even while it still imports torch (its own parent watch starts after that)
            reap_on_exit(process.pid)
        torch.set_num_threads(max(1, usable_cpus() - spec.processes * spec.threads))
        log.info(
            "%d rollout process(es) started (%d torch thread(s) each); trainer keeps %d",
            spec.processes,
            spec.threads,
            torch.get_num_threads(),
        )

    @property
    def pids(self) -> list[int | None]:
        return [process.pid for process in self._processes]

    def _ended(self) -> str | None:
        for process in self._processes:
            if not process.is_alive():
                return f"rollout process {process.pid} ended (exit code {process.exitcode})"
        return None

    def publish(self, policy: torch.nn.Module, version: int) -> None:
        with self._lock:
            _copy_weights(policy, self._weights)
            self._version.value = version

    def close(self) -> None:
        """End the worker now (nothing it holds is worth waiting for) and give the trainer its
        threads back."""
        for process in self._processes:
            if process.is_alive():
                process.terminate()
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        for channel in (self._orders, self._results):
            channel.cancel_join_thread()  # orders never read must not block our exit
            channel.close()
        self._pending.clear()
        torch.set_num_threads(self._trainer_threads)


class EngineRolloutWorkers(_OrderQueue):
    """Rollout workers for an engine that generates away from the trainer: the endpoint server
    pool (`rollout.engine: endpoint`). A thread of the trainer's process plays the orders in
    turn (its requests run on the servers, so the trainer's cores stay the trainer's) and,
    between batches, pushes the newest published weights with the engine's `sync_weights`, so
    a push never lands in the middle of a batch. `holds` is the version the engine serves
    already (None: unknown, the first batch pushes)."""

    _who = "the rollout thread"

    def __init__(self, spec: WorkerSpec, engine: Any, *, holds: int | None = None) -> None:
        super().__init__()
        self._spec = spec
        self._engine = engine
        # publishes copy into this staging model; the thread pushes it between batches
        self._staging = copy.deepcopy(spec.model).eval().requires_grad_(False)
        self._staged = -1 if holds is None else holds
        self._holds = -1 if holds is None else holds
        self._lock = threading.Lock()
        self._orders = queue.Queue()
        self._results = queue.Queue()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._main, name="ecomrlve-rollout", daemon=True)
        self._thread.start()

    def _ended(self) -> str | None:
        return None if self._thread.is_alive() else "the rollout thread ended"

    def publish(self, policy: torch.nn.Module, version: int) -> None:
        with self._lock:
            _copy_weights(policy, self._staging.state_dict())
            self._staged = version

    def _main(self) -> None:
        try:
            catalog = self._spec.catalog() if self._spec.catalog is not None else None
            while True:
                order = self._orders.get()
                if order is None or self._closed.is_set():
                    return
                with self._lock:  # between batches: push the newest weights, whole
                    if self._staged != self._holds:
                        self._engine.sync_weights(self._staging)
                        self._holds = self._staged
                played = _play(self._spec, self._engine, catalog, order, self._holds)
                if self._closed.is_set():
                    return
                self._results.put(played)
        except BaseException:
            self._results.put(traceback.format_exc())

    def close(self) -> None:
        """Stop taking orders. A batch being played runs out on the servers (a request cannot
        be recalled) and is discarded; no push follows it."""
        self._closed.set()
        self._orders.put(None)
        self._pending.clear()


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
        try:
            played = _play(spec, engine, catalog, order, have)
        except BaseException:
            results.put(traceback.format_exc())
            return
        results.put(played)


def _play(
    spec: WorkerSpec, engine: Any, catalog: Catalog | None, order: RolloutOrder, version: int
) -> PlayedBatch:
    """Play one order with `engine`, whose weights are `version`; every episode records it."""
    started = time.perf_counter()
    extra: dict[str, Any] = {}
    if order.tools is not None:
        offered = {t.task_id: s for t, s in zip(order.tasks, order.tools, strict=True)}
        extra["tools_for"] = lambda task: offered[task.task_id]
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
    for episode in episodes:
        episode.policy_version = version
    return PlayedBatch(order.order, episodes, version, time.perf_counter() - started)
