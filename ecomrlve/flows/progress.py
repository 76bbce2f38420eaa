"""Stage progress from flows to whoever listens in this process (the CLI's rich progress bar).

Flows and in-process stages call `report(stage, fraction)`; a CLI wraps a flow call in
`progress_listener(fn)`. Nothing here goes through Prefect's parameters, so listeners never
enter a cache key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ecomrlve.config import ProgressFn

_listeners: list[ProgressFn] = []


@contextlib.contextmanager
def progress_listener(fn: ProgressFn) -> Iterator[None]:
    """Call `fn(stage, fraction)` while flows run in this process."""
    _listeners.append(fn)
    try:
        yield
    finally:
        _listeners.remove(fn)


def report(stage: str, fraction: float) -> None:
    for fn in list(_listeners):
        fn(stage, fraction)
