"""Shared CLI plumbing: one-line errors with exit code 2, progress bars, tables."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, NoReturn

import polars as pl
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ecomrlve.config import DataConfig, format_validation_error

console = Console()
err_console = Console(stderr=True)

EXIT_BAD_INPUT = 2


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
    description: str, total: float = 1.0, *, line_every_s: float = PROGRESS_LINE_EVERY_S
) -> Iterator[callable]:
    """A rich progress bar; yields `update(stage, fraction)`.

    When stderr is not a terminal, the bar becomes one plain line (stage, percent, elapsed)
    every `line_every_s` seconds while the command runs, so a redirected run (`make run > log`)
    shows it is alive; a short command prints none (its stderr stays one error line or empty).
    """
    if not sys.stderr.isatty():
        with _progress_lines(description, line_every_s) as update:
            yield update
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )
    with progress:
        task = progress.add_task(description, total=total)

        def update(stage: str, fraction: float) -> None:
            progress.update(task, completed=fraction * total, description=f"{description}: {stage}")

        yield update


@contextlib.contextmanager
def _progress_lines(description: str, every_s: float) -> Iterator[callable]:
    """`progress_bar` for a non-terminal: a heartbeat line every `every_s` seconds."""
    started = time.monotonic()
    state = {"stage": "starting", "fraction": 0.0}
    lock = threading.Lock()
    stop = threading.Event()

    def line() -> None:
        with lock:
            stage, fraction = state["stage"], state["fraction"]
        elapsed = time.monotonic() - started
        err_console.print(
            f"{description}: {stage} {fraction:4.0%} ({elapsed:.0f} s)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def heartbeat() -> None:
        while not stop.wait(every_s):
            line()

    def update(stage: str, fraction: float) -> None:
        with lock:
            state["stage"], state["fraction"] = stage, min(max(fraction, 0.0), 1.0)

    thread = threading.Thread(target=heartbeat, name=f"progress-{description}", daemon=True)
    thread.start()
    try:
        yield update
    finally:
        stop.set()
        thread.join()


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
