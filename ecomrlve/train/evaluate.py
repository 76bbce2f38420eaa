"""Evaluation: n sampled episodes per task, scored by the verifier, summarised as pass@1 and
pass^k by scenario x difficulty x step band (`metrics.py`), printed and stored.

`evaluate_episodes` is what training calls on its held-out tasks (base, after SFT, after RL);
`evaluate_model` is `ecomrlve eval`: load a model, select tasks with a SQL predicate, evaluate,
write `eval_results` and `eval_episodes`.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ecomrlve.config import EcomConfig
from ecomrlve.env import Catalog, tool_schemas
from ecomrlve.store import DataPaths
from ecomrlve.tasks import Task
from ecomrlve.train import metrics, results
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.rollout import episode_row, run_episodes

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, float], None]


@dataclass
class EvalReport:
    """Per-episode rows, the scenario x difficulty x band table, and task-averaged totals."""

    stage: str
    k: int
    samples: int
    episodes: pl.DataFrame
    table: pl.DataFrame
    overall: dict[str, float] = field(default_factory=dict)

    @property
    def pass_at_1(self) -> float:
        return self.overall.get("pass_at_1", 0.0)


def evaluate_episodes(
    tasks: list[Task],
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    cfg: EcomConfig,
    *,
    samples: int,
    k: int,
    seed: int,
    stage: str,
    progress: ProgressFn | None = None,
) -> EvalReport:
    """Play `samples` episodes of every task at the agent's sampling temperature and score them."""
    if not tasks:
        raise ValueError("no tasks to evaluate")
    if not 1 <= k <= samples:
        raise ValueError(f"--k must be within 1..samples ({samples}), got {k}")
    episodes = run_episodes(
        tasks,
        engine,
        chat,
        catalog,
        env_config=cfg.env,
        agent=cfg.agent,
        samples_per_task=samples,
        seed=seed,
        progress=progress,
    )
    rows = [episode_row(e, sample=e.sample, stage=stage) for e in episodes]
    frame = pl.DataFrame(rows, schema_overrides={"difficulty": pl.Int64, "min_steps": pl.Int64})
    return EvalReport(
        stage=stage,
        k=k,
        samples=samples,
        episodes=frame,
        table=metrics.summarize(frame, k),
        overall=metrics.overall(frame, k),
    )


def store_report(
    data: str | os.PathLike, report: EvalReport, *, run_id: str, model: str, where: str | None
) -> None:
    """Append the report to `eval_results` and its episodes to `eval_episodes`."""
    extra: dict[str, Any] = {"run_id": run_id, "stage": report.stage, "model": model}
    table_rows = [{**row, **extra, "where": where} for row in report.table.to_dicts()]
    results.append(data, "eval_results", table_rows, results.EVAL_SCHEMA)
    episode_rows = [
        {**{c: row[c] for c in results.EPISODE_SCHEMA if c in row}, "run_id": run_id}
        for row in report.episodes.to_dicts()
    ]
    results.append(data, "eval_episodes", episode_rows, results.EPISODE_SCHEMA)


def evaluate_model(
    model: str,
    data: str | os.PathLike,
    *,
    cfg: EcomConfig,
    where: str | None,
    k: int,
    samples: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> tuple[str, EvalReport]:
    """`ecomrlve eval`: returns (run_id, report); the report is stored in the data directory."""
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task
    from ecomrlve.train.engines.hf import HFEngine
    from ecomrlve.train.model import load_model_and_tokenizer

    samples = samples or k
    if not 1 <= k <= samples:
        raise ValueError(f"--k must be within 1..--samples ({samples}), got {k}")
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    frame = read_store_tasks(data, where)
    if limit is not None:
        frame = frame.head(limit)
    tasks = [row_to_task(row) for row in frame.iter_rows(named=True)]
    catalog = Catalog.load(data)
    policy, tokenizer = load_model_and_tokenizer(
        model, tiny_cache=DataPaths.of(data).root / "models"
    )
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=cfg.agent.enable_thinking)
    engine = HFEngine(policy, chat.pad_token_id)
    report = evaluate_episodes(
        tasks,
        engine,
        chat,
        catalog,
        cfg,
        samples=samples,
        k=k,
        seed=seed,
        stage="eval",
        progress=progress,
    )
    run_id = f"eval-{Path(model).name}-{uuid.uuid4().hex[:8]}"
    store_report(data, report, run_id=run_id, model=model, where=where)
    return run_id, report
