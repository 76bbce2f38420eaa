"""Which tasks training sees, in which order: curriculum shards plus adaptive difficulty.

The flows build curriculum-ordered shards (DIR/curricula/NAME/shard-NNNNN.parquet, listed in
manifest.json). `read_curriculum` concatenates them in manifest order; without a curriculum the
store's `tasks` view is read easy-to-hard. `CurriculumSampler` walks that stream: the stream
decides which scenario comes next, and, with adaptive difficulty on, `AdaptiveDifficulty` decides
its difficulty, as in RLVE / EcomRLVE-Gym: each scenario has a window [l, h] at most
`adaptive_window` wide, difficulties are drawn uniformly from it, and h moves up once the success
rate at h reaches `adaptive_threshold` over `adaptive_episodes` episodes (then l follows, to keep
the window width). Both objects save to JSON with the run and load back to resume.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ecomrlve import store
from ecomrlve.read_sql import check_read_query
from ecomrlve.store import DataPaths, StoreError
from ecomrlve.tasks import Task

TASK_COLUMNS = ("task_id", "scenario", "difficulty", "min_steps", "prompt", "goal")


class CurriculumError(StoreError):
    """A curriculum or task set that cannot be used; the message says why."""


# ---------------------------------------------------------------------------------------------
# Reading tasks
# ---------------------------------------------------------------------------------------------


def _shard_names(manifest: dict[str, Any], where: Path) -> list[str]:
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise CurriculumError(f"{where} lists no shards")
    names = []
    for entry in shards:
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, dict):
            name = entry.get("file") or entry.get("path") or entry.get("name")
            if not isinstance(name, str):
                raise CurriculumError(f"{where}: shard entry without a file name: {entry}")
            names.append(name)
        else:
            raise CurriculumError(f"{where}: bad shard entry {entry!r}")
    return names


def read_curriculum(data: str | os.PathLike, name: str) -> pl.DataFrame:
    """All rows of curriculum `name`, shard after shard in manifest order."""
    store.validate_identifier(name, "curriculum name")
    folder = DataPaths.of(data).curricula / name
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        available = sorted(p.parent.name for p in folder.parent.glob("*/manifest.json"))
        raise CurriculumError(
            f"no curriculum {name!r} under {folder.parent} (found: {available or 'none'}); "
            "build one with `ecomrlve curriculum` or `ecomrlve pipeline`"
        )
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CurriculumError(f"cannot read {manifest_path}: {err}") from None
    frames = []
    for shard in _shard_names(manifest, manifest_path):
        path = folder / Path(shard).name
        if not path.exists():
            raise CurriculumError(f"{manifest_path} lists {shard}, which does not exist")
        frames.append(pl.read_parquet(path))
    tasks = pl.concat(frames, how="diagonal_relaxed")
    _check_columns(tasks, f"curriculum {name!r}")
    return tasks


def read_store_tasks(data: str | os.PathLike, where: str | None = None) -> pl.DataFrame:
    """Tasks from the store's `tasks` view, easy to hard (difficulty, min_steps, task_id).

    `where` is a SQL predicate over the view's columns, e.g. "scenario = 'cart' AND
    difficulty <= 2". The connection is read-only.
    """
    predicate = validate_predicate(where)
    query = "SELECT * FROM tasks"
    if predicate:
        query += f" WHERE {predicate}"
    query += " ORDER BY difficulty, min_steps, task_id"
    store.update_views(data)  # a store from an older release: its views gain the new columns
    try:
        con = store.connect(data, read_only=True)
    except StoreError:
        raise
    try:
        tasks = con.sql(check_read_query(query)).pl()
    except Exception as err:  # duckdb raises several error types; all mean a bad query/store
        first = str(err).splitlines()[0]
        if "tasks" in first and ("does not exist" in first or "not found" in first):
            raise CurriculumError(
                f"no tasks in {DataPaths.of(data).root}: run `ecomrlve generate` first"
            ) from None
        raise CurriculumError(f"cannot select tasks where {where!r}: {first}") from None
    finally:
        con.close()
    _check_columns(tasks, "tasks view")
    return tasks


def validate_predicate(where: str | None) -> str | None:
    """A WHERE predicate as one expression (it runs on a read-only connection)."""
    if where is None or not where.strip():
        return None
    if ";" in where or "--" in where:
        raise CurriculumError(f"--where must be one SQL predicate, got {where!r}")
    return where.strip()


def _check_columns(tasks: pl.DataFrame, what: str) -> None:
    missing = [c for c in TASK_COLUMNS if c not in tasks.columns]
    if missing:
        raise CurriculumError(f"{what} lacks task column(s) {missing}")
    if tasks.is_empty():
        raise CurriculumError(f"{what} holds no tasks")


def split_heldout(
    tasks: pl.DataFrame, n_heldout: int, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(train, heldout): `n_heldout` tasks taken round-robin over scenarios, by a seeded hash.

    The split depends only on task ids and the seed, so it is the same whatever the order of
    the curriculum, and the held-out tasks never reach SFT or RL.
    """
    if n_heldout <= 0:
        return tasks, tasks.head(0)
    if n_heldout >= tasks.height:
        raise CurriculumError(
            f"training.eval.tasks ({n_heldout}) must be smaller than the task pool "
            f"({tasks.height} tasks)"
        )
    keyed = tasks.with_columns(
        pl.col("task_id")
        .map_elements(lambda t: _stable_key(seed, t), return_dtype=pl.Utf8)
        .alias("_key")
    ).sort("_key")
    keyed = keyed.with_columns(pl.int_range(pl.len()).over("scenario").alias("_rank"))
    chosen = keyed.sort(["_rank", "scenario"]).head(n_heldout)["task_id"]
    heldout = tasks.filter(pl.col("task_id").is_in(chosen.implode()))
    train = tasks.filter(~pl.col("task_id").is_in(chosen.implode()))
    return train, heldout


def _stable_key(seed: int, task_id: str) -> str:
    return hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()


def row_to_task(row: dict[str, Any]) -> Task:
    """A task row (store or shard) as a `Task`."""
    try:
        return Task.from_row(row)
    except (KeyError, ValueError, TypeError) as err:
        raise CurriculumError(
            f"task {row.get('task_id')!r} is not a valid task row: {err}"
        ) from None


# ---------------------------------------------------------------------------------------------
# Adaptive difficulty
# ---------------------------------------------------------------------------------------------


@dataclass
class Window:
    """The difficulty window [low, high] of one scenario and the tally at `high`."""

    low: int
    high: int
    attempts: int = 0
    successes: int = 0


class AdaptiveDifficulty:
    """Per-scenario difficulty windows that move up with the success rate at their top.

    `levels[s]` are the difficulties that exist for scenario s (sorted). Every window starts at
    the lowest. After `episodes` episodes at h: if their success rate >= `threshold`, h moves to
    the next level and l to the lowest level keeping the window <= `width` levels; either way the
    tally restarts.
    """

    def __init__(
        self, levels: dict[str, list[int]], *, width: int, threshold: float, episodes: int
    ) -> None:
        if width < 1 or episodes < 1 or not 0 < threshold <= 1:
            raise ValueError(
                "adaptive difficulty needs width >= 1, episodes >= 1 and 0 < threshold <= 1"
            )
        self.levels = {s: sorted(set(map(int, ds))) for s, ds in levels.items() if ds}
        self.width = width
        self.threshold = threshold
        self.episodes = episodes
        self.windows = {s: Window(ds[0], ds[0]) for s, ds in self.levels.items()}

    def window(self, scenario: str) -> tuple[int, int]:
        w = self.windows[scenario]
        return w.low, w.high

    def choices(self, scenario: str) -> list[int]:
        low, high = self.window(scenario)
        return [d for d in self.levels[scenario] if low <= d <= high]

    def record(self, scenario: str, difficulty: int, success: bool) -> bool:
        """Count one finished episode; True when the scenario's window moved up."""
        w = self.windows.get(scenario)
        if w is None or difficulty != w.high:
            return False
        w.attempts += 1
        w.successes += int(success)
        if w.attempts < self.episodes:
            return False
        passed = w.successes / w.attempts >= self.threshold
        w.attempts = w.successes = 0
        above = [d for d in self.levels[scenario] if d > w.high]
        if not passed or not above:
            return False
        w.high = above[0]
        inside = [d for d in self.levels[scenario] if d <= w.high][-self.width :]
        w.low = max(w.low, inside[0])
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "threshold": self.threshold,
            "episodes": self.episodes,
            "levels": self.levels,
            "windows": {s: asdict(w) for s, w in self.windows.items()},
        }

    @classmethod
    def from_json(cls, state: dict[str, Any]) -> AdaptiveDifficulty:
        obj = cls(
            state["levels"],
            width=state["width"],
            threshold=state["threshold"],
            episodes=state["episodes"],
        )
        obj.windows = {s: Window(**w) for s, w in state["windows"].items()}
        return obj


# ---------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------


class CurriculumSampler:
    """Hands out tasks in curriculum order, with difficulty from `adaptive` when given.

    The stream position picks the scenario; with `adaptive`, a seeded draw picks a difficulty in
    the scenario's window and the next unused task of that (scenario, difficulty) cell is taken.
    Cells and the stream wrap around when used up (one more epoch). With `shuffle`, each pass
    over the stream is a fresh permutation drawn from `seed` and the pass number (RL seeds then
    differ in the order they see the tasks, and a run's early and late steps draw from the same
    mix, so its success curve shows learning rather than the curriculum's rising difficulty).
    State is a few counters, so `state_dict` is small JSON.
    """

    def __init__(
        self,
        tasks: pl.DataFrame,
        *,
        seed: int,
        adaptive: AdaptiveDifficulty | None = None,
        shuffle: bool = False,
    ) -> None:
        _check_columns(tasks, "training tasks")
        self.tasks = tasks
        self.seed = seed
        self.adaptive = adaptive
        self.shuffle = shuffle
        self._pass_order: tuple[int, np.ndarray] | None = None  # (pass, permutation)
        self.scenarios: list[str] = tasks["scenario"].to_list()
        self.cells: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, (s, d) in enumerate(zip(tasks["scenario"], tasks["difficulty"], strict=True)):
            self.cells[(s, int(d))].append(i)
        self.cursor = 0
        self.cell_cursors: dict[str, int] = {}
        self.draws = 0

    @staticmethod
    def levels_of(tasks: pl.DataFrame) -> dict[str, list[int]]:
        grouped = tasks.group_by("scenario").agg(pl.col("difficulty").unique().sort())
        return {s: [int(d) for d in ds] for s, ds in grouped.iter_rows()}

    def next_tasks(self, n: int) -> list[Task]:
        return [row_to_task(self.tasks.row(self._next_index(), named=True)) for _ in range(n)]

    def _next_index(self) -> int:
        index = self._stream_index(self.cursor)
        self.cursor += 1
        if self.adaptive is None:
            return index
        scenario = self.scenarios[index]
        choices = self.adaptive.choices(scenario)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 7, self.draws]))
        self.draws += 1
        difficulty = int(choices[int(rng.integers(len(choices)))])
        cell = self.cells[(scenario, difficulty)]
        key = f"{scenario}/{difficulty}"
        position = self.cell_cursors.get(key, 0)
        self.cell_cursors[key] = position + 1
        return cell[position % len(cell)]

    def _stream_index(self, cursor: int) -> int:
        """The row at stream position `cursor`: in curriculum order, or this pass's shuffle."""
        epoch, position = divmod(cursor, self.tasks.height)
        if not self.shuffle:
            return position
        if self._pass_order is None or self._pass_order[0] != epoch:
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, 11, epoch]))
            self._pass_order = (epoch, rng.permutation(self.tasks.height))
        return int(self._pass_order[1][position])

    def state_dict(self) -> dict[str, Any]:
        return {
            "cursor": self.cursor,
            "draws": self.draws,
            "cell_cursors": dict(self.cell_cursors),
            "adaptive": self.adaptive.to_json() if self.adaptive else None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = int(state["cursor"])
        self.draws = int(state["draws"])
        self.cell_cursors = {k: int(v) for k, v in state["cell_cursors"].items()}
        if state.get("adaptive") is not None:
            self.adaptive = AdaptiveDifficulty.from_json(state["adaptive"])

    def to_json(self) -> str:
        return json.dumps(self.state_dict(), indent=2, sort_keys=True)

    def save(self, path: Path) -> None:
        store.atomic_write_bytes(self.to_json().encode(), path)
