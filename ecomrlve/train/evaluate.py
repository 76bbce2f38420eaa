"""Evaluation: n sampled episodes per task, scored by the verifier, summarised as pass@1 and
pass^k by scenario x difficulty x step band (`metrics.py`), printed and stored.

`evaluate_episodes` is what training calls on its held-out tasks (base, after SFT, after RL);
`evaluate_model` is `ecomrlve eval`: load a model, select tasks with a SQL predicate, evaluate,
write `eval_results` and `eval_episodes`. `evaluate_endpoint` is `ecomrlve eval --endpoint`: the
same tables for a model behind an OpenAI-compatible server, plus every transcript as a
trajectory file (`ecomrlve verify` re-scores it), a PNG, and tokens/latency per episode.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ecomrlve import store
from ecomrlve.config import EcomConfig, config_from_dict
from ecomrlve.env import Catalog, tool_schemas
from ecomrlve.progress import ProgressEvent, ProgressFn, duration
from ecomrlve.store import DataPaths
from ecomrlve.tasks import Task
from ecomrlve.train import metrics, results
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.rollout import Episode, RolloutContext, episode_row, run_episodes

log = logging.getLogger(__name__)


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
    episodes = RolloutContext.of(engine, chat, catalog, cfg).play(
        run_episodes,
        tasks,
        samples_per_task=samples,
        seed=seed,
        temperature=cfg.training.eval.temperature,
        progress=progress,
        **({"tools_for": tools_for} if tools_for is not None else {}),
    )
    return report_of(episodes, stage=stage, k=k, samples=samples, tools_offered=tools_offered)


def report_of(
    episodes: list[Episode], *, stage: str, k: int, samples: int, tools_offered: str | None
) -> EvalReport:
    """The report of played episodes. Each row keeps the assistant's turns as written
    (`assistant_turns`, a JSON list): replayed in the env they give back every tool result and
    the verdict (`ecomrlve view`)."""
    rows = [
        episode_row(
            e,
            sample=e.sample,
            stage=stage,
            tools_offered=tools_offered,
            assistant_turns=json.dumps(e.turns, ensure_ascii=False),
        )
        for e in episodes
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
    from ecomrlve.train.engines.hf import HFEngine
    from ecomrlve.train.model import load_model_and_tokenizer

    samples = samples or k
    if not 1 <= k <= samples:
        raise ValueError(f"--k must be within 1..--samples ({samples}), got {k}")
    tasks = _select_tasks(data, where, limit, seed)
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


LIMIT_STREAM = 0x11A1  # SeedSequence([seed, LIMIT_STREAM]): the draw of `--limit`


def spread_limit(frame: pl.DataFrame, limit: int | None, seed: int) -> pl.DataFrame:
    """At most `limit` tasks of `frame`, spread evenly over scenarios and, within each
    scenario, over its difficulties.

    A nested round-robin: each round takes one task from every scenario (in a seeded order),
    and a scenario's turns cycle through its difficulties (in a seeded order), each cell's
    tasks in a seeded order. So two scenarios' counts differ by at most one, and so do two
    difficulties' of one scenario, unless one runs out of tasks. Same seed, same tasks; the
    result keeps `frame`'s row order.

    >>> f = pl.DataFrame({"task_id": list("abcde"), "scenario": ["x"] * 4 + ["y"],
    ...                   "difficulty": [0, 0, 1, 1, 0]})
    >>> picked = spread_limit(f, 3, seed=0)
    >>> sorted(zip(picked["scenario"], picked["difficulty"]))
    [('x', 0), ('x', 1), ('y', 0)]
    """
    if limit is None or limit >= frame.height:
        return frame
    if limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, LIMIT_STREAM]))
    scenarios = frame.select("scenario").unique().sort("scenario")
    scenarios = scenarios.with_columns(_scenario_turn=pl.Series(rng.random(scenarios.height)))
    cells = frame.select("scenario", "difficulty").unique().sort("scenario", "difficulty")
    cells = cells.with_columns(_cell_turn=pl.Series(rng.random(cells.height)))
    ranked = (
        frame.with_row_index("_row")
        .with_columns(_draw=pl.Series(rng.random(frame.height)))
        .join(cells, on=["scenario", "difficulty"])
        .join(scenarios, on="scenario")
        .with_columns(_in_cell=pl.col("_draw").rank("ordinal").over("scenario", "difficulty"))
        .sort("scenario", "_in_cell", "_cell_turn")
        .with_columns(_in_scenario=pl.int_range(pl.len()).over("scenario"))
        .sort("_in_scenario", "_scenario_turn")
    )
    chosen = ranked.head(limit)["_row"].sort()
    return frame[chosen.to_list()]


def _select_tasks(
    data: str | os.PathLike, where: str | None, limit: int | None, seed: int
) -> list[Task]:
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task

    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    frame = spread_limit(read_store_tasks(data, where), limit, seed)
    if frame.height == 0:
        raise ValueError(f"no tasks match --where {where!r}" if where else "no tasks in the store")
    return [row_to_task(row) for row in frame.iter_rows(named=True)]


class EpisodeRate:
    """The progress text of an evaluation: episodes done of all, episodes/s and an ETA.

    The rate counts the episodes played by this process only (a resumed run does not look
    fast because of the episodes it found done)."""

    def __init__(self, total: int, done: int = 0, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.done = done
        self.played = 0
        self._clock = clock
        self._started = clock()

    def add(self, count: int = 1) -> str:
        self.done += count
        self.played += count
        return self.text()

    def per_second(self) -> float:
        elapsed = self._clock() - self._started
        return self.played / elapsed if elapsed > 0 else 0.0

    def event(self) -> ProgressEvent:
        metrics = {"episodes/s": self.per_second()} if self.played else {}
        return ProgressEvent("eval", self.done, self.total, unit="episodes", metrics=metrics)

    def text(self) -> str:
        rate = self.per_second()
        left = self.total - self.done
        eta = duration(left / rate) if rate > 0 else "?"
        return f"{self.done}/{self.total} episodes, {rate:.2f} episodes/s, ETA {eta}"


# ---------------------------------------------------------------------------------------------
# Through an OpenAI-compatible endpoint
# ---------------------------------------------------------------------------------------------

RUN_FILE = "run.json"  # what the run plays: settings and task ids, written before any episode
JOURNAL_FILE = "episodes.jsonl"  # one line per finished episode, appended as it finishes


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
    model: str = ""
    url: str = ""
    resumed: int = 0  # episodes found done in the run folder (not played again)


@dataclass
class EndpointRun:
    """`run.json`: everything a resumed run needs to play the rest exactly as the first would
    have (the API key's variable name, never the key)."""

    run_id: str
    url: str
    model: str
    where: str | None
    limit: int | None
    k: int
    samples: int
    seed: int
    task_ids: list[str]
    config: dict[str, Any]  # the env and agent blocks
    api_key_env: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 3
    template_kwargs: bool = True
    stored: bool = False  # eval_results/eval_episodes written: the run is complete

    def write(self, folder: Path) -> None:
        text = json.dumps(self.__dict__, indent=2, ensure_ascii=False) + "\n"
        store.atomic_write_bytes(text.encode(), folder / RUN_FILE)

    @classmethod
    def read(cls, folder: Path) -> EndpointRun:
        path = folder / RUN_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(**raw)
        except FileNotFoundError:
            raise ValueError(f"no evaluation run in {folder} ({RUN_FILE} is missing)") from None
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path} is not an evaluation run file ({err})") from None


class EpisodeJournal:
    """`episodes.jsonl` of a run folder: one line per finished episode (its `eval_episodes`
    row and its trajectory), appended with one write and flushed as the episode finishes, so
    a run stopped at any point keeps every episode it finished."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL_FILE

    def read(self) -> dict[tuple[str, int], dict[str, Any]]:
        """The finished episodes by (task_id, sample); a later line replaces an earlier one.
        A torn last line (the process died mid-write) is dropped, and the file is rewritten
        without it so later appends start on a fresh line."""
        if not self.path.exists():
            return {}
        entries: dict[tuple[str, int], dict[str, Any]] = {}
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        kept = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = (entry["row"]["task_id"], int(entry["row"]["sample"]))
            except (ValueError, KeyError, TypeError):
                if number >= len(lines) - 1:  # the last line: cut short by a crash
                    log.warning("%s: dropped a torn last line", self.path)
                    continue
                raise ValueError(f"{self.path} line {number} is not a journal entry") from None
            entries[key] = entry
            kept.append(line)
        if len(kept) != sum(1 for line in lines if line.strip()):
            store.atomic_write_bytes(b"".join(line + b"\n" for line in kept), self.path)
        return entries

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False).encode() + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _run_folder_lock(folder: Path, run_id: str) -> Iterator[None]:
    """One process plays a run at a time (a second `--resume` of it is refused)."""
    with open(folder / ".lock", "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"run {run_id} is being played by another process") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _episode_entry(e: Any) -> dict[str, Any]:
    row = {
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
    return {"row": row, "trajectory": e.trajectory(), "turn_latencies": e.turn_latencies}


def run_folder(data: str | os.PathLike, run_id: str, output: str | os.PathLike | None) -> Path:
    """Where an endpoint run keeps its files: `output`, else `DATA/evals/RUN_ID/`."""
    return Path(output) if output is not None else DataPaths.of(data).root / "evals" / run_id


def evaluate_endpoint(
    url: str | None,
    model: str | None,
    data: str | os.PathLike,
    *,
    cfg: EcomConfig | None = None,
    where: str | None = None,
    k: int = 1,
    samples: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    api_key_env: str | None = None,
    concurrency: int = 8,
    timeout_s: float = 120.0,
    max_retries: int = 3,
    template_kwargs: bool = True,
    output: str | os.PathLike | None = None,
    resume: str | None = None,
    progress: ProgressFn | None = None,
    announce: Callable[[str, Path, int, int], None] | None = None,
) -> EndpointEval:
    """`ecomrlve eval --endpoint URL --model NAME`: every task `samples` times over chat
    completions, scored by the env's verifier, stored like a local evaluation.

    The API key is read from the environment variable `api_key_env` (never from argv or a
    file). `template_kwargs` sends vLLM/SGLang's `chat_template_kwargs` (`enable_thinking`);
    turn it off for a server that rejects unknown fields. Files go to `output` (default
    `DATA/evals/RUN_ID/`): `run.json` (written first), `episodes.jsonl` (appended as each
    episode finishes), then `trajectories.jsonl` and `pass_at_1.png`.

    `resume=RUN_ID` continues a stopped run from its folder: its settings come from
    `run.json` (`url`/`model`, when given, must name the same model; a new URL may be given),
    the episodes in `episodes.jsonl` are not played again (those the endpoint failed for good
    are), and the rest keep the seeds of an uninterrupted run. `announce(run_id, folder,
    episodes done, episodes in all)` is called before the first request.
    """
    if resume is not None:
        run, folder, tasks = _resumed_run(data, resume, output, url=url, model=model)
    else:
        if url is None or model is None or cfg is None:
            raise ValueError("--endpoint and --model are required (or --resume RUN_ID)")
        run, folder, tasks = _new_run(
            data,
            output,
            cfg,
            url=url,
            model=model,
            where=where,
            limit=limit,
            k=k,
            samples=samples or k,
            seed=seed,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            template_kwargs=template_kwargs,
        )
    cfg = config_from_dict(run.config, source=f"{run.run_id}/{RUN_FILE}")
    engine = _endpoint_engine(run, cfg)
    engine.check()  # an unreachable endpoint stops here, before anything is written
    catalog = Catalog.load(data)
    folder.mkdir(parents=True, exist_ok=True)
    with _run_folder_lock(folder, run.run_id):
        run.write(folder)  # the run is resumable from here on
        entries, resumed = _play_missing(
            run, folder, tasks, engine, catalog, cfg, progress, announce
        )
        return _store_endpoint_run(run, folder, tasks, entries, resumed, engine.urls[0], data)


def _resumed_run(
    data: str | os.PathLike,
    resume: str,
    output: str | os.PathLike | None,
    *,
    url: str | None,
    model: str | None,
) -> tuple[EndpointRun, Path, list[Task]]:
    """The stopped run `resume` from its folder (a new `url` replaces its own), the folder and
    its tasks; ValueError for a complete run or another model."""
    folder = run_folder(data, resume, output)
    run = EndpointRun.read(folder)
    if run.run_id != resume:
        raise ValueError(f"{folder} holds run {run.run_id}, not {resume}")
    if run.stored:
        raise ValueError(f"run {resume} is complete (stored in eval_results)")
    if model is not None and model != run.model:
        raise ValueError(f"run {resume} evaluates model {run.model!r}, not {model!r}")
    if url is not None:
        run.url = url
    return run, folder, _tasks_by_id(data, run.task_ids)


def _new_run(
    data: str | os.PathLike,
    output: str | os.PathLike | None,
    cfg: EcomConfig,
    *,
    url: str,
    model: str,
    where: str | None,
    limit: int | None,
    k: int,
    samples: int,
    seed: int,
    api_key_env: str | None,
    concurrency: int,
    timeout_s: float,
    max_retries: int,
    template_kwargs: bool,
) -> tuple[EndpointRun, Path, list[Task]]:
    """A new run over the tasks `where` selects, its (empty) folder and its tasks."""
    if not 1 <= k <= samples:
        raise ValueError(f"--k must be within 1..--samples ({samples}), got {k}")
    tasks = _select_tasks(data, where, limit, seed)
    run_id = f"eval-{_slug(model)}-{uuid.uuid4().hex[:8]}"
    folder = run_folder(data, run_id, output)
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"--output {folder} exists and is not empty")
    run = EndpointRun(
        run_id=run_id,
        url=url,
        model=model,
        where=where,
        limit=limit,
        k=k,
        samples=samples,
        seed=seed,
        task_ids=[t.task_id for t in tasks],
        config=cfg.model_dump(mode="json", include={"env", "agent"}),
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_retries=max_retries,
        template_kwargs=template_kwargs,
    )
    return run, folder, tasks


def _endpoint_engine(run: EndpointRun, cfg: EcomConfig) -> Any:
    from ecomrlve.train.engines.endpoint import EndpointEngine, read_api_key

    return EndpointEngine(
        run.url,
        run.model,
        api_key=read_api_key(run.api_key_env),
        concurrency=run.concurrency,
        timeout_s=run.timeout_s,
        max_retries=run.max_retries,
        chat_template_kwargs=(
            {"enable_thinking": cfg.agent.enable_thinking} if run.template_kwargs else None
        ),
    )


def _tasks_by_id(data: str | os.PathLike, task_ids: list[str]) -> list[Task]:
    """The run's tasks, in the run's order; a task the store no longer has is an error."""
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task

    wanted = set(task_ids)
    rows = {
        row["task_id"]: row
        for row in read_store_tasks(data).iter_rows(named=True)
        if row["task_id"] in wanted
    }
    missing = [t for t in task_ids if t not in rows]
    if missing:
        raise ValueError(
            f"the store no longer has {len(missing)} task(s) of this run, e.g. {missing[0]}"
        )
    return [row_to_task(rows[t]) for t in task_ids]


def _store_endpoint_run(
    run: EndpointRun,
    folder: Path,
    tasks: list[Task],
    entries: dict[tuple[str, int], dict[str, Any]],
    resumed: int,
    url: str,
    data: str | os.PathLike,
) -> EndpointEval:
    """Every episode's journal entry (`_play_missing`) as trajectories, plot and tables, stored
    with the run; `url` is the endpoint that played them."""
    ordered = [entries[(t.task_id, s)] for t in tasks for s in range(run.samples)]
    frame = pl.DataFrame(
        [e["row"] for e in ordered],
        schema_overrides={"difficulty": pl.Int64, "min_steps": pl.Int64, "error": pl.String},
    )
    report = EvalReport(
        stage="eval",
        k=run.k,
        samples=run.samples,
        episodes=frame,
        table=metrics.summarize(frame, run.k),
        overall=metrics.overall(frame, run.k),
    )
    trajectories = folder / "trajectories.jsonl"
    lines = b"".join(
        json.dumps(e["trajectory"], ensure_ascii=False).encode() + b"\n" for e in ordered
    )
    store.atomic_write_bytes(lines, trajectories)
    plot = results.plot_eval(
        report.table, folder / "pass_at_1.png", title=f"{run.model} ({run.run_id})"
    )
    store_report(data, report, run_id=run.run_id, model=f"{run.model} @ {url}", where=run.where)
    run.stored = True
    run.write(folder)
    latencies = sorted(t for e in ordered for t in e["turn_latencies"])
    return EndpointEval(
        run_id=run.run_id,
        report=report,
        output=folder,
        trajectories=trajectories,
        plot=plot,
        errors=sum(1 for e in ordered if e["row"]["finish"] == "error"),
        turn_latency_p50=_quantile(latencies, 0.50),
        turn_latency_p99=_quantile(latencies, 0.99),
        model=run.model,
        url=run.url,
        resumed=resumed,
    )


def _play_missing(
    run: EndpointRun,
    folder: Path,
    tasks: list[Task],
    engine: Any,
    catalog: Catalog,
    cfg: EcomConfig,
    progress: ProgressFn | None,
    announce: Callable[[str, Path, int, int], None] | None,
) -> tuple[dict[tuple[str, int], dict[str, Any]], int]:
    """Play the episodes the run's journal lacks (or holds as errors), appending each as it
    finishes; every episode's journal entry by (task_id, sample), and how many were there."""
    from ecomrlve.train.engines.endpoint import run_chat_episodes

    journal = EpisodeJournal(folder)
    entries = journal.read()
    done = {key for key, entry in entries.items() if entry["row"]["finish"] != "error"}
    total = len(tasks) * run.samples
    resumed = len(done)
    if announce:
        announce(run.run_id, folder, resumed, total)
    rate = EpisodeRate(total, done=resumed)

    def finished(episode: Any) -> None:
        entry = _episode_entry(episode)
        journal.append(entry)
        entries[(episode.task.task_id, episode.sample)] = entry
        rate.add()
        if progress:
            progress(rate.event())

    if progress:
        progress(rate.event())
    run_chat_episodes(
        tasks,
        engine,
        catalog,
        env_config=cfg.env,
        agent=cfg.agent,
        samples_per_task=run.samples,
        seed=run.seed,
        skip=done,
        on_episode=finished,
    )
    return entries, resumed


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name or name).strip("-") or "model"


def _quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted `values` (0.0 when empty)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, max(0, round(q * len(values) + 0.5) - 1))]
