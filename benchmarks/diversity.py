"""How varied generated text is (issue 13): openings, vocabulary, simulated-user reply forms.

    python benchmarks/diversity.py [--products 20000] [--tasks 9000] [--seed 7] [--data DIR]

Generates `--tasks` tasks (nine scenarios, d 0-10) on a `--products` catalog and prints:
* per scenario, the distinct three-word openings of its typo-free prompts (target >= 15);
* word types of all prompts that never occur in the catalog (titles, descriptions, brands,
  categories, colours, sizes, materials), over typo-free prompts and over all (target >= 1,500);
* per fact kind, the distinct forms of the simulated user's reply that states it, the value
  replaced by "<v>" (typo-free tasks; target >= 6);
* the lint findings (`ecomrlve.generators.realism.lint`) over prompts and replies (target 0).
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ecomrlve.catalogs import build_catalog
from ecomrlve.generators import GenContext, generate_tasks
from ecomrlve.generators.realism import lint, opening, reply_forms, user_replies, word_types
from ecomrlve.generators.registry import scenario_names
from ecomrlve.store import DataPaths
from ecomrlve.tasks import Task

CATALOG_TEXT = ("title", "description", "brand", "category", "color", "size", "material")


def catalog_words(ctx: GenContext) -> set[str]:
    frame = ctx.catalog.products.select(CATALOG_TEXT)
    words: set[str] = set()
    for column in CATALOG_TEXT:
        words |= word_types(frame[column].unique().to_list())
    return words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=9_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None, help="catalog cache folder")
    args = parser.parse_args()
    data = args.data or Path(tempfile.gettempdir()) / f"ecomrlve-diversity-{args.products}"
    if not DataPaths.of(data).products.exists():
        build_catalog(data, args.products, seed=args.seed)
    ctx = GenContext.load(data)
    frame, _ = generate_tasks(ctx, args.tasks, seed=args.seed)
    tasks = [Task.from_row(row) for row in frame.iter_rows(named=True)]
    console = Console()

    clean = [t for t in tasks if t.goal.typo_rate == 0]
    openings: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for task in clean:
        openings[task.scenario].add(opening(task.prompt))
        counts[task.scenario] += 1
    table = Table(title=f"distinct three-word openings, typo-free prompts ({len(clean):,})")
    for column in ("scenario", "prompts", "openings", "target"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for scenario in scenario_names():
        table.add_row(scenario, f"{counts[scenario]:,}", str(len(openings[scenario])), "15")
    console.print(table)

    catalog = catalog_words(ctx)
    table = Table(title="word types of prompts that are not catalog words")
    for column in ("prompts", "count", "word types", "non-catalog", "target"):
        table.add_column(column, justify="right")
    for label, group in (("typo-free", clean), ("all", tasks)):
        types = word_types(t.prompt for t in group)
        table.add_row(
            label, f"{len(group):,}", f"{len(types):,}", f"{len(types - catalog):,}", "1,500"
        )
    console.print(table)

    forms: dict[str, set[str]] = defaultdict(set)
    findings: list[str] = [f for t in tasks for f in lint(t.prompt)]
    n_replies = 0
    for task in tasks:
        replies = user_replies(task, ctx.catalog.__contains__)
        n_replies += sum(len(texts) for texts in replies.values())
        findings += [f for texts in replies.values() for text in texts for f in lint(text)]
        if task.goal.typo_rate == 0:
            for key, found in reply_forms(task, replies).items():
                forms[key] |= found
    table = Table(title="distinct simulated-user reply forms per fact kind (typo-free tasks)")
    for column in ("fact kind", "forms", "target"):
        table.add_column(column, justify="left" if column == "fact kind" else "right")
    for key in sorted(forms):
        table.add_row(key, str(len(forms[key])), "6")
    console.print(table)
    console.print(
        f"lint over {len(tasks):,} prompts and {n_replies:,} replies: {len(findings)} finding(s)"
        + (f", e.g. {findings[:3]}" if findings else "")
    )


if __name__ == "__main__":
    main()
