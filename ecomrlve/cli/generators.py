"""`ecomrlve generate` (registered by `register(app)`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import typer

from ecomrlve.cli.common import (
    console,
    err_console,
    fail,
    frame_table,
    progress_bar,
    user_errors,
    writer_lock,
)
from ecomrlve.config import EVENTS_FROM, NO_EVENTS

DataOpt = typer.Option(Path("data"), "--data", help="data directory (holds the catalog)")
AUTO_WORKERS_FROM = 2000  # below this many tasks a process pool costs more than it saves

if TYPE_CHECKING:
    from ecomrlve.generators.generate import GenerationReport


def counts_table(df: pl.DataFrame) -> pl.DataFrame:
    """Tasks by scenario (rows) x difficulty (columns)."""
    wide = (
        df.group_by("scenario", "difficulty")
        .len()
        .sort("difficulty")
        .pivot(on="difficulty", index="scenario", values="len")
        .fill_null(0)
        .sort("scenario")
    )
    return wide.rename({c: f"d{c}" for c in wide.columns if c != "scenario"})


STEP_BANDS: tuple[tuple[str, int, int], ...] = (
    ("0-2", 0, 2),
    ("3-5", 3, 5),
    ("6-8", 6, 8),
    ("9+", 9, 10_000),
)


def steps_histogram(df: pl.DataFrame) -> pl.DataFrame:
    """Tasks by min_steps (the reference's tool calls), with a text bar."""
    hist = df.group_by("min_steps").len("tasks").sort("min_steps")
    peak = max(hist["tasks"].max() or 1, 1)
    return hist.with_columns(
        share=(pl.col("tasks") / df.height).round(3),
        bar=pl.col("tasks").map_elements(lambda n: "#" * max(1, round(30 * n / peak)), pl.String),
    )


def band_counts(df: pl.DataFrame) -> pl.DataFrame:
    """Tasks per scenario in each step band (the article reports 3-5 and 6-8)."""
    return (
        df.group_by("scenario")
        .agg(
            [
                pl.col("min_steps").is_between(lo, hi).sum().alias(label)
                for label, lo, hi in STEP_BANDS
            ]
        )
        .sort("scenario")
    )


def register(app: typer.Typer) -> None:
    """Add `generate` to the `ecomrlve` app."""

    @app.command()
    def generate(
        tasks: int = typer.Option(..., "--tasks", "-n", help="number of tasks to generate"),
        seed: int = typer.Option(0, "--seed", help="run seed; task ids carry it"),
        data: Path = DataOpt,
        scenarios: str | None = typer.Option(
            None, "--scenarios", help="comma-separated scenario names (default: all)"
        ),
        difficulty: str = typer.Option("0-10", "--difficulty", help="range, e.g. 3-7, or one d"),
        min_steps: int | None = typer.Option(None, "--min-steps", help="fewest core steps"),
        max_steps: int | None = typer.Option(None, "--max-steps", help="most core steps"),
        workers: int | None = typer.Option(
            None, "--workers", help="processes (default: all cores for big runs)"
        ),
        run: str | None = typer.Option(
            None, "--run", help="file name of this run in each partition (default gen_sSEED)"
        ),
        events_from: int = typer.Option(
            EVENTS_FROM,
            "--events-from",
            help="first difficulty whose shop changes during the episode (stock, prices, "
            f"shipping, transient tool failures); {NO_EVENTS} turns world events off",
        ),
    ) -> None:
        """Generate validated tasks into DIR/tasks/scenario=S/difficulty=D/RUN.parquet.

        Every task's reference solution is replayed through the env's verifier first; tasks
        that fail are counted and never written. A rerun with the same seed (run) replaces its
        own files; another seed adds files.
        """
        from ecomrlve import store
        from ecomrlve.generators import parse_difficulty_range, parse_scenarios, run_name_for
        from ecomrlve.generators.events import check_events_from
        from ecomrlve.generators.generate import check_band, generate_to_store

        if tasks <= 0:
            fail(f"--tasks must be a positive number, got {tasks}")
        if seed < 0:
            fail(f"--seed must be >= 0, got {seed}")
        if workers is not None and workers < 1:
            fail(f"--workers must be >= 1, got {workers}")
        with user_errors():
            names = parse_scenarios(scenarios)
            band_range = parse_difficulty_range(difficulty)
            check_band(min_steps, max_steps)
            check_events_from(events_from)
            run_name = store.validate_identifier(run or run_name_for(seed), "run name")
            paths = store.DataPaths.of(data)
            if not paths.products.exists() or not paths.policies.exists():
                raise store.StoreError(
                    f"no catalog at {paths.catalog}: run `ecomrlve catalog --data {data}` first"
                )
        if workers is None:
            workers = min(2, os.cpu_count() or 1) if tasks >= AUTO_WORKERS_FROM else 1
        with writer_lock(data), user_errors(), progress_bar("generate") as update:
            # chunks are spilled to disk as they finish and published together at the end:
            # memory stays bounded by a chunk and a partition, whatever --tasks is
            df, report, written = generate_to_store(
                data,
                tasks,
                seed,
                run_name,
                scenarios=names,
                difficulty=band_range,
                min_steps=min_steps,
                max_steps=max_steps,
                workers=workers,
                progress=update,
                events_from=events_from,
            )
        _print_generated(df, report, written, workers, run_name, data, (min_steps, max_steps))


def _print_generated(
    df: pl.DataFrame,
    report: GenerationReport,
    written: list[Path],
    workers: int,
    run_name: str,
    data: Path,
    band: tuple[int | None, int | None],
) -> None:
    """What `generate` wrote: the tables by scenario, difficulty and steps, the rate, and a
    warning for each kind of task that was not written."""
    from ecomrlve import store

    min_steps, max_steps = band
    console.print(frame_table(counts_table(df), title="tasks by scenario x difficulty"))
    console.print(frame_table(steps_histogram(df), title="min_steps histogram"))
    console.print(frame_table(band_counts(df), title="step bands by scenario"))
    rate = df.height / report.seconds if report.seconds else float("inf")
    console.print(
        f"{df.height:,} tasks in {report.seconds:.1f} s ({rate:,.0f} tasks/s, "
        f"{workers} worker(s)); {len(written)} file(s) named {run_name}.parquet under "
        f"{store.DataPaths.of(data).tasks}"
    )
    if report.invalid:
        err_console.print(
            f"warning: {report.invalid} task(s) failed validation and were not written: "
            + "; ".join(f"{n}x {r}" for r, n in report.reasons.most_common(3))
        )
    if report.gave_up:
        err_console.print(
            f"warning: {report.gave_up} task index(es) found no plan in the step band"
        )
    if report.skipped_cells:
        err_console.print(
            f"note: {len(report.skipped_cells)} scenario x difficulty cell(s) cannot reach "
            f"{min_steps or 1}-{max_steps or 'any'} steps and were skipped: "
            + ", ".join(report.skipped_cells[:12])
            + (" …" if len(report.skipped_cells) > 12 else "")
        )
