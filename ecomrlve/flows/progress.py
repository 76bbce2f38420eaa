"""Stage progress from flows to whoever listens in this process (the CLI's progress bar), and
to Prefect's UI (a progress artifact).

Flows and in-process stages call `report(event)` with a `ProgressEvent`; a CLI wraps a flow
call in `progress_listener(fn)`. Nothing here goes through Prefect's parameters, so listeners
never enter a cache key.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from ecomrlve.progress import PhaseETA, ProgressEvent, ProgressFn, duration

log = logging.getLogger(__name__)

_listeners: list[ProgressFn] = []

# Prefect's API is called at most this often per artifact (a DAPO step can take a second).
ARTIFACT_EVERY_S = 5.0


@contextlib.contextmanager
def progress_listener(fn: ProgressFn) -> Iterator[None]:
    """Call `fn(event)` while flows run in this process."""
    _listeners.append(fn)
    try:
        yield
    finally:
        _listeners.remove(fn)


def report(event: ProgressEvent) -> None:
    for fn in list(_listeners):
        fn(event)


class ProgressArtifact:
    """A stage's events as Prefect's progress artifact (`create_progress_artifact` on the first
    event, `update_progress_artifact` at most every `every_s` seconds and on the last): the
    UI shows the percentage and the event's line (phase, step i/N, metrics, ETA).

    Prefect being unreachable never stops the stage: the artifact is then left as it was."""

    def __init__(
        self,
        key: str,
        *,
        every_s: float = ARTIFACT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        api: Any = None,
    ) -> None:
        self.key = key
        self.every_s = every_s
        self._clock = clock
        self._api = api
        self._id: Any = None
        self._last = float("-inf")
        self._eta = PhaseETA()
        self._broken = False

    def __call__(self, event: ProgressEvent) -> None:
        now = self._clock()
        left = self._eta.seconds_left(event, now)
        final = event.whole >= 1.0
        if self._broken or (self._id is not None and now - self._last < self.every_s and not final):
            return
        self._last = now
        eta = "" if left is None else f", ETA {duration(left)}"
        text = f"{event.text()}{eta}"
        percent = round(100.0 * event.whole, 1)
        api = self._api or _prefect_artifacts()
        try:
            if self._id is None:
                self._id = api.create_progress_artifact(percent, key=self.key, description=text)
            else:
                api.update_progress_artifact(self._id, percent, description=text)
        except Exception as err:  # the UI is a view: training goes on without it
            self._broken = True
            log.warning("progress artifact %s not updated: %s", self.key, str(err).splitlines()[0])


def _prefect_artifacts() -> Any:
    import prefect.artifacts

    return prefect.artifacts
