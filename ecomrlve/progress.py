"""Where a long phase is: one event type for every progress report, from a catalog build to a
DAPO step, and the ETA arithmetic the reporters share.

A phase calls `progress(ProgressEvent("sft", 12, 60, unit="step", metrics={"loss": 1.23}))`;
whoever listens renders it (`ecomrlve.cli.common.progress_bar`: a rich bar on a terminal, a
plain line every ~20 s otherwise; `ecomrlve.flows.stages`: Prefect's progress artifact).

>>> ProgressEvent("sft", 12, 60, unit="step", metrics={"loss": 1.2345, "tokens/s": 850.0}).text()
'sft step 12/60, loss 1.234, tokens/s 850'
>>> ProgressEvent.of("families", 0.2).text()
'families'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProgressEvent:
    """`phase` is at `done` of `total` (in `unit`s: "step", "episodes"; "" for a bare
    fraction), with a few named `metrics` (floats or short strings such as "3/4").

    `overall` is the fraction of the whole command this event stands at (a training run maps
    its SFT, evaluation and DAPO phases onto one bar), `stage` the pipeline stage it belongs to
    (None: the phase is the stage).
    """

    phase: str
    done: float
    total: float = 1.0
    unit: str = ""
    metrics: Mapping[str, float | str] = field(default_factory=dict)
    overall: float | None = None
    stage: str | None = None

    @classmethod
    def of(cls, phase: str, fraction: float) -> ProgressEvent:
        """A phase known only as a fraction done (no steps to count)."""
        return cls(phase, fraction, 1.0)

    @property
    def fraction(self) -> float:
        """Of this phase, clamped to [0, 1]."""
        if self.total <= 0:
            return 1.0
        return min(max(self.done / self.total, 0.0), 1.0)

    @property
    def whole(self) -> float:
        """Of the whole command: `overall` when set, else this phase's fraction."""
        return self.fraction if self.overall is None else min(max(self.overall, 0.0), 1.0)

    def replace(self, **changes: object) -> ProgressEvent:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def text(self) -> str:
        """One short line: the phase, i/N when counted, then the metrics."""
        parts = [self.phase]
        if self.unit:
            parts.append(f"{self.unit} {self.done:g}/{self.total:g}")
        head = " ".join(parts)
        return ", ".join([head, *(f"{k} {_value(v)}" for k, v in self.metrics.items())])


ProgressFn = Callable[[ProgressEvent], None]


def _value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if value == int(value) and abs(value) >= 10:
        return f"{value:.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


class PhaseETA:
    """Seconds left in the current phase, from the rate since the phase's first event (a
    phase that restarts, e.g. the next held-out evaluation, starts a new rate)."""

    def __init__(self) -> None:
        self._key: tuple[str, str | None, float] | None = None
        self._start: tuple[float, float] = (0.0, 0.0)  # (time, done) at the phase's first event

    def seconds_left(self, event: ProgressEvent, now: float) -> float | None:
        key = (event.phase, event.stage, event.total)
        if key != self._key or event.done < self._start[1]:
            self._key, self._start = key, (now, event.done)
            return None
        started, done0 = self._start
        if event.done <= done0 or now <= started:
            return None
        rate = (event.done - done0) / (now - started)
        return max(event.total - event.done, 0.0) / rate


def duration(seconds: float) -> str:
    """Seconds as a short span.

    >>> duration(3725)
    '1h02m'
    """
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
