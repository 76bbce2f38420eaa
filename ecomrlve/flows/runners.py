"""The task runner behind the generation fan-out: threads, processes, or a Dask cluster.

Generation chunks are independent (each is a pure function of its coordinates and the catalog
on disk), so throughput scales with workers once they are processes: threads share the GIL.
With `dask`, `address` names an existing scheduler (`tcp://host:8786`); its workers must see
the same data directory path and reach the Prefect API. Without an address a local cluster of
`workers` processes is started for the run (prefect-dask, optional extra `dask`).
"""

from __future__ import annotations

import os
from typing import Any

from ecomrlve.flows.params import TaskRunnerKind
from ecomrlve.procs import exit_with_parent


class TaskRunnerError(ValueError):
    """A task runner that cannot be built here (e.g. Dask asked for but not installed)."""


def make_task_runner(kind: TaskRunnerKind, workers: int, dask_address: str | None = None) -> Any:
    """A fresh Prefect task runner of `kind` with `workers` parallel slots."""
    if workers < 1:
        raise TaskRunnerError(f"workers must be >= 1, got {workers}")
    if kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "processes":
        from prefect.task_runners import ProcessPoolTaskRunner

        # a kill -9 of the flow's process must not leave its workers behind (procs.py)
        return ProcessPoolTaskRunner(
            max_workers=workers, initializer=exit_with_parent, initargs=(os.getpid(),)
        )
    if kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise TaskRunnerError(
                "task runner 'dask' needs prefect-dask: pip install 'ecomrlve[dask]'"
            ) from None
        if dask_address:
            return DaskTaskRunner(address=dask_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": workers,
                "threads_per_worker": 1,
                "processes": True,
                "dashboard_address": None,
            }
        )
    raise TaskRunnerError(f"unknown task runner {kind!r}: use threads, processes or dask")
