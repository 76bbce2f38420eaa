"""What the benchmark scripts share: a generated store they reuse between runs, the plain
aligned table they print, and per scenario x difficulty tables over generated plans."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

import polars as pl

from ecomrlve.catalogs import build_catalog
from ecomrlve.env import Catalog
from ecomrlve.generators import GenerationReport, TaskKey, generate_tasks
from ecomrlve.generators.base import Plan
from ecomrlve.generators.generate import config_of
from ecomrlve.generators.registry import get_scenario, scenario_names


def generated_store(
    name: str, *, products: int, tasks: int, seed: int, data: Path | None = None
) -> tuple[Path, Catalog, pl.DataFrame, GenerationReport]:
    """A catalog of `products` (built once under `data`, default /tmp/ecomrlve-NAME-PRODUCTS-SEED,
    then reused) and `tasks` freshly generated tasks of every scenario, all from `seed`."""
    data = data or Path(f"/tmp/ecomrlve-{name}-{products}-{seed}")
    if not (data / "catalog" / "products.parquet").exists():
        build_catalog(data, products, seed=seed)
    frame, report = generate_tasks(data, tasks, seed=seed)
    return data, Catalog.load(data), frame, report


def plan_table(
    difficulties: Iterable[int], cell: Callable[[str, Iterator[Plan]], str], *, plans: int
) -> list[tuple[str, ...]]:
    """A row per scenario, a column per difficulty: `cell(scenario, its plans)` over the plans of
    tasks 0..plans-1 of that cell (seed 41), with a header row."""
    difficulties = list(difficulties)
    rows = [("scenario", *(f"d{d}" for d in difficulties))]
    for scenario in scenario_names():
        rows.append((scenario, *(cell(scenario, _plans(scenario, d, plans)) for d in difficulties)))
    return rows


def _plans(scenario: str, difficulty: int, count: int) -> Iterator[Plan]:
    generator, config = get_scenario(scenario), config_of(scenario, difficulty)
    for i in range(count):
        key = TaskKey(scenario, 41, difficulty, i)
        yield generator.plan_task(config, key.rng(), key)


def print_table(rows: Sequence[Sequence[str]], *, numeric: bool = False) -> None:
    """Rows of strings as aligned columns; the first row is the header, ruled below. With
    `numeric`, every column but the first is right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        cells = enumerate(zip(row, widths, strict=True))
        print("  ".join(c.rjust(w) if numeric and i else c.ljust(w) for i, (c, w) in cells))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def load_script(path: Path) -> ModuleType:
    """A benchmark script imported as a module (named by its file), for tests of its parts."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module
