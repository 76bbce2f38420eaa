"""Shared CLI plumbing: one-line errors with exit code 2, progress bars, tables."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import polars as pl
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ecomrlve.config import DataConfig, format_validation_error
from ecomrlve.progress import PhaseETA, ProgressEvent, ProgressFn, duration

console = Console()
err_console = Console(stderr=True)

EXIT_BAD_INPUT = 2
DataOpt = typer.Option(Path("data"), "--data", help="data directory")


def data_default(field: str) -> Any:
    """The default of a `DataConfig` field: CLI options show the config's value, not a copy.

    >>> data_default("shard_size")
    256
    """
    return DataConfig.model_fields[field].default


def fail(message: str) -> NoReturn:
    """Print one clear line on stderr and exit 2 (bad input, nothing written)."""
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def user_errors(*extra: type[BaseException]) -> Iterator[None]:
    """Turn the project's input errors (ValueError and subclasses) into `fail`."""
    try:
        yield
    except typer.Exit:
        raise
    except ValidationError as err:
        fail(format_validation_error(err))
    except (ValueError, FileNotFoundError, *extra) as err:
        fail(str(err).splitlines()[0] if str(err) else type(err).__name__)


@contextlib.contextmanager
def writer_lock(data) -> Iterator[None]:
    """Hold the data directory's writer lock for a whole command (`store.run_lock`).

    A second writer is refused here, with one line and exit 2, before it does any work; the
    command's own writes re-enter the lock.
    """
    from ecomrlve import store

    with contextlib.ExitStack() as held:
        with user_errors():
            held.enter_context(store.run_lock(data))
        yield


# With stderr redirected (a log file, CI), long stages print one plain line at least this often.
PROGRESS_LINE_EVERY_S = 20.0


@contextlib.contextmanager
def progress_bar(
    description: str,
    *,
    line_every_s: float = PROGRESS_LINE_EVERY_S,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[ProgressFn]:
    """Show a command's `ProgressEvent`s; yields the callback that takes them.

    On a terminal: a live rich bar (the whole command's share done, the phase with its step
    i/N and metrics, elapsed, the phase's ETA). Otherwise one plain line of the same facts every
    `line_every_s` seconds, so a redirected run (`make run > log`) says where it is; a short
    command prints none (its stderr stays one error line or empty).
    """
    if not sys.stderr.isatty():
        lines = ProgressLines(description, line_every_s, clock=clock)
        with lines.heartbeat():
            yield lines.update
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        console=err_console,
        transient=False,
    )
    eta = PhaseETA()
    with progress:
        task = progress.add_task(description, total=1.0, detail="starting", eta="")

        def update(event: ProgressEvent) -> None:
            left = eta.seconds_left(event, clock())
            progress.update(
                task,
                completed=event.whole,
                detail=_event_text(event),
                eta="" if left is None else f"ETA {duration(left)}",
            )

        yield update


def _event_text(event: ProgressEvent) -> str:
    return f"{event.stage}: {event.text()}" if event.stage else event.text()


class ProgressLines:
    """`progress_bar` for a non-terminal: the latest event as one line once `every_s` seconds
    have passed since the last line (checked on each event and by a heartbeat thread, so a
    phase that reports rarely still shows it is alive). `clock` is injectable for tests."""

    def __init__(
        self,
        description: str,
        every_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.description = description
        self.every_s = every_s
        self._clock = clock
        self._write = write or _err_line
        self._started = self._last_line = clock()
        self._event: ProgressEvent | None = None
        self._eta = PhaseETA()
        self._left: float | None = None
        self._lock = threading.Lock()

    def update(self, event: ProgressEvent) -> None:
        with self._lock:
            self._event = event
            self._left = self._eta.seconds_left(event, self._clock())
        self.line_if_due()

    def line(self) -> str:
        with self._lock:
            event, left = self._event, self._left
        elapsed = duration(self._clock() - self._started)
        if event is None:
            return f"{self.description}: starting ({elapsed})"
        eta = "" if left is None else f", ETA {duration(left)}"
        return f"{self.description} {event.whole:4.0%}: {_event_text(event)} ({elapsed}{eta})"

    def line_if_due(self) -> None:
        now = self._clock()
        with self._lock:
            if now - self._last_line < self.every_s:
                return
            self._last_line = now
        self._write(self.line())

    @contextlib.contextmanager
    def heartbeat(self) -> Iterator[None]:
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(min(self.every_s, 1.0)):
                self.line_if_due()

        thread = threading.Thread(target=beat, name=f"progress-{self.description}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _err_line(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def frame_table(df: pl.DataFrame, title: str | None = None, max_rows: int = 200) -> Table:
    table = Table(title=title, show_lines=False)
    for name, dtype in df.schema.items():
        table.add_column(name, justify="right" if dtype.is_numeric() else "left")
    for row in df.head(max_rows).iter_rows():
        table.add_row(
            *("" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v)) for v in row)
        )
    if df.height > max_rows:
        table.caption = f"{max_rows} of {df.height} rows shown"
    return table
