"""Evaluation: n sampled episodes per task, scored by the verifier, summarised as pass@1 and
pass^k by scenario x difficulty x step band (`metrics.py`), printed and stored.

`evaluate_episodes` is what training calls on its held-out tasks (base, after SFT, after RL);
`evaluate_model` is `ecomrlve eval`: load a model, select tasks with a SQL predicate, evaluate,
write `eval_results` and `eval_episodes`. `evaluate_endpoint` is `ecomrlve eval --endpoint`: the
same tables for a model behind an OpenAI-compatible server, plus every transcript as a
trajectory file (`ecomrlve verify` re-scores it), a PNG, and tokens/latency per episode.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ecomrlve import store
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
    tools_for: Callable[[Task], list[dict[str, Any]] | None] | None = None,
    tools_offered: str | None = None,
) -> EvalReport:
    """Play `samples` episodes of every task at `training.eval.temperature` (default: the
    agent's sampling temperature; 0 is greedy) and score them. `tools_for(task)` is the tool
    schemas each prompt offers (the tool curriculum's width in force, named by
    `tools_offered`, which each episode row records)."""
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
        temperature=cfg.training.eval.temperature,
        progress=progress,
        **({"tools_for": tools_for} if tools_for is not None else {}),
    )
    rows = [
        episode_row(e, sample=e.sample, stage=stage, tools_offered=tools_offered) for e in episodes
    ]
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


def _select_tasks(data: str | os.PathLike, where: str | None, limit: int | None) -> list[Task]:
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task

    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    frame = read_store_tasks(data, where)
    if limit is not None:
        frame = frame.head(limit)
    if frame.height == 0:
        raise ValueError(f"no tasks match --where {where!r}" if where else "no tasks in the store")
    return [row_to_task(row) for row in frame.iter_rows(named=True)]


# ---------------------------------------------------------------------------------------------
# Through an OpenAI-compatible endpoint
# ---------------------------------------------------------------------------------------------


@dataclass
class EndpointEval:
    """What `evaluate_endpoint` produced: the report and where its files are."""

    run_id: str
    report: EvalReport
    output: Path
    trajectories: Path
    plot: Path
    errors: int  # episodes the endpoint failed for good (counted as failures)
    turn_latency_p50: float
    turn_latency_p99: float


def evaluate_endpoint(
    url: str,
    model: str,
    data: str | os.PathLike,
    *,
    cfg: EcomConfig,
    where: str | None,
    k: int,
    samples: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    api_key_env: str | None = None,
    concurrency: int = 8,
    timeout_s: float = 120.0,
    max_retries: int = 3,
    template_kwargs: bool = True,
    output: str | os.PathLike | None = None,
    progress: ProgressFn | None = None,
) -> EndpointEval:
    """`ecomrlve eval --endpoint URL --model NAME`: every task `samples` times over chat
    completions, scored by the env's verifier, stored like a local evaluation.

    The API key is read from the environment variable `api_key_env` (never from argv or a
    file). `template_kwargs` sends vLLM/SGLang's `chat_template_kwargs` (`enable_thinking`);
    turn it off for a server that rejects unknown fields. Files go to `output` (default
    `DATA/evals/RUN_ID/`): `trajectories.jsonl`, `pass_at_1.png`.
    """
    from ecomrlve.train.engines.endpoint import EndpointEngine, read_api_key, run_chat_episodes

    samples = samples or k
    if not 1 <= k <= samples:
        raise ValueError(f"--k must be within 1..--samples ({samples}), got {k}")
    engine = EndpointEngine(
        url,
        model,
        api_key=read_api_key(api_key_env),
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_retries=max_retries,
        chat_template_kwargs=(
            {"enable_thinking": cfg.agent.enable_thinking} if template_kwargs else None
        ),
    )
    tasks = _select_tasks(data, where, limit)
    run_id = f"eval-{_slug(model)}-{uuid.uuid4().hex[:8]}"
    out = Path(output) if output is not None else DataPaths.of(data).root / "evals" / run_id
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"--output {out} exists and is not empty")
    engine.check()  # an unreachable endpoint stops here, before anything is written
    catalog = Catalog.load(data)
    episodes = run_chat_episodes(
        tasks,
        engine,
        catalog,
        env_config=cfg.env,
        agent=cfg.agent,
        samples_per_task=samples,
        seed=seed,
        progress=progress,
    )
    rows = [
        {
            "task_id": e.task.task_id,
            "scenario": e.task.scenario,
            "difficulty": e.task.difficulty,
            "min_steps": e.task.min_steps,
            "reward": e.reward,
            "success": e.success,
            "steps": e.steps,
            "finish": e.finish,
            "sample": e.sample,
            "stage": "eval",
            "turns": len(e.turns),
            "prompt_tokens": e.prompt_tokens,
            "completion_tokens": e.completion_tokens,
            "latency_s": sum(e.turn_latencies),
            "retries": e.retries,
            "error": e.error,
        }
        for e in episodes
    ]
    frame = pl.DataFrame(
        rows,
        schema_overrides={"difficulty": pl.Int64, "min_steps": pl.Int64, "error": pl.String},
    )
    report = EvalReport(
        stage="eval",
        k=k,
        samples=samples,
        episodes=frame,
        table=metrics.summarize(frame, k),
        overall=metrics.overall(frame, k),
    )
    out.mkdir(parents=True, exist_ok=True)
    trajectories = out / "trajectories.jsonl"
    lines = b"".join(
        json.dumps(e.trajectory(), ensure_ascii=False).encode() + b"\n" for e in episodes
    )
    store.atomic_write_bytes(lines, trajectories)
    plot = results.plot_eval(report.table, out / "pass_at_1.png", title=f"{model} ({run_id})")
    store_report(data, report, run_id=run_id, model=f"{model} @ {engine.urls[0]}", where=where)
    latencies = sorted(t for e in episodes for t in e.turn_latencies)
    return EndpointEval(
        run_id=run_id,
        report=report,
        output=out,
        trajectories=trajectories,
        plot=plot,
        errors=sum(1 for e in episodes if e.finish == "error"),
        turn_latency_p50=_quantile(latencies, 0.50),
        turn_latency_p99=_quantile(latencies, 0.99),
    )


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name or name).strip("-") or "model"


def _quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted `values` (0.0 when empty)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, max(0, round(q * len(values) + 0.5) - 1))]
