"""The one executor generation chunks run on, for `ecomrlve generate` and the Prefect flows.

A chunk (one scenario × difficulty, an index range) is a pure function of its coordinates and
the catalog on disk, so chunks fan out over any `concurrent.futures.Executor`:

* `processes` (what `ecomrlve generate --workers N` uses): spawned workers that each load the
  catalog once, freeze it out of the cyclic GC and exit with their parent;
* `threads`: one process, one catalog; the GIL runs one chunk at a time, so this only overlaps
  I/O (cheap for small runs, no start-up);
* `dask`: a Dask cluster's executor, either an existing scheduler (`address`, whose workers see
  the same data directory path) or a local cluster of `workers` processes (`distributed`,
  optional extra `dask`).

`chunk_executor(kind, workers, data_dir)` opens one (a worker finds the catalog with
`GenContext.load`, which keeps it for the process). While the flows' generate stage runs,
`open_executor` makes its executor the one `run_on_executor` sends chunks to: Prefect only
sequences and caches the chunks, it never computes one itself.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing as mp
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from ecomrlve.generators.context import GenContext
from ecomrlve.procs import exit_with_parent
from ecomrlve.store import DataPaths

T = TypeVar("T")

ExecutorKind = Literal["threads", "processes", "dask"]
EXECUTOR_KINDS: tuple[str, ...] = ("threads", "processes", "dask")


class ExecutorError(ValueError):
    """An executor that cannot be built here (e.g. Dask asked for but not installed)."""


def spawn_can_import_main() -> bool:
    """A spawned worker re-imports `__main__`; that fails for `python -` or a REPL."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is not None and os.path.exists(path)


def _init_worker(data_dir: str, parent_pid: int) -> None:
    exit_with_parent(parent_pid)  # a kill -9 of the command must not leave workers behind
    logging.getLogger("ecomrlve").setLevel(logging.WARNING)
    GenContext.load(data_dir)  # once per worker: `GenContext.load` keeps it for the process
    # the catalog (~10^5 strings and lists) lives as long as the worker: keep the cyclic GC
    # from re-walking it on every full collection
    gc.freeze()


@contextlib.contextmanager
def chunk_executor(
    kind: ExecutorKind, workers: int, data_dir: str | os.PathLike, address: str | None = None
) -> Iterator[Executor]:
    """An executor of `kind` with `workers` parallel slots for the chunks of `data_dir`
    (closed, its workers gone, when the block ends)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ExecutorError(f"workers must be >= 1, got {workers!r}")
    if kind not in EXECUTOR_KINDS:
        raise ExecutorError(f"unknown task runner {kind!r}: use threads, processes or dask")
    root = str(DataPaths.of(data_dir).root)
    if kind == "threads":
        with ThreadPoolExecutor(max_workers=workers) as pool:
            yield pool
    elif kind == "processes":
        # spawn, not fork: the parent holds tantivy and polars thread pools, and a child forked
        # while one of their locks is held can hang for ever
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=(root, os.getpid()),
        ) as pool:
            yield pool
    else:
        with _dask_executor(workers, address) as pool:
            yield pool


DASK_CONNECT_TIMEOUT_S = 5.0


def check_dask_scheduler(address: str, timeout_s: float = DASK_CONNECT_TIMEOUT_S) -> None:
    """Raise `ExecutorError` (one line) unless a scheduler listens at `address`.

    Checked before any flow starts: Dask's own client retries for 30 s and an unreachable
    scheduler then surfaced as four tracebacks (Dask's, the task's, the flow's, the CLI's).
    """
    try:
        from distributed.comm.addressing import get_address_host_port
    except ImportError:
        raise ExecutorError(
            "task runner 'dask' needs distributed: pip install 'ecomrlve[dask]'"
        ) from None
    if address.startswith("inproc://"):  # a cluster in this very process: nothing to dial
        return
    try:
        host, port = get_address_host_port(address)
    except ValueError as err:
        raise ExecutorError(
            f"--dask-address {address!r} is not a scheduler address: {err}"
        ) from None
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {why}") from None


@contextlib.contextmanager
def _dask_executor(workers: int, address: str | None) -> Iterator[Executor]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ExecutorError(
            "task runner 'dask' needs distributed: pip install 'ecomrlve[dask]'"
        ) from None
    if address is not None:
        check_dask_scheduler(address)
    with contextlib.ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                )
            )
            address = cluster.scheduler_address
        client = stack.enter_context(Client(address, set_as_default=False))
        yield client.get_executor(pure=False)


_OPEN: dict[str, Executor] = {}
_OPEN_LOCK = threading.Lock()


@contextlib.contextmanager
def open_executor(
    kind: ExecutorKind, workers: int, data_dir: str | os.PathLike, address: str | None = None
) -> Iterator[Executor]:
    """`chunk_executor`, made the one `run_on_executor` uses for `data_dir` while the block runs."""
    root = str(DataPaths.of(data_dir).root)
    with chunk_executor(kind, workers, root, address) as pool:
        with _OPEN_LOCK:
            if root in _OPEN:
                raise ExecutorError(f"an executor is already open for {root}")
            _OPEN[root] = pool
        try:
            yield pool
        finally:
            with _OPEN_LOCK:
                del _OPEN[root]


def run_on_executor(data_dir: str | os.PathLike, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on the executor `open_executor` holds for `data_dir` (in this thread when
    none is open); waits for its result. `fn` must be importable by name (a worker unpickles
    it)."""
    with _OPEN_LOCK:
        pool = _OPEN.get(str(DataPaths.of(data_dir).root))
    if pool is None:
        return fn(*args)
    return pool.submit(fn, *args).result()
