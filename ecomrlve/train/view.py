"""`ecomrlve view RUN`: one static HTML page for a finished training run.

The page opens from disk with no server and no network (CSS and JS inline, the run's PNG curves
as data URIs) and shows:

* the held-out table: pass@1 by scenario and stage (base, SFT, final) with task-bootstrap 95%
  intervals and the paired gains, computed by `metrics.stage_intervals` as the run's closing
  table is (same seed: its "all" row is that table);
* the run's curves (`RUN/plots/*.png`: SFT loss, reward, success by scenario, frontier);
* the store's task mix: scenario x difficulty and scenario x minimum steps;
* an episode browser: held-out episodes replayed in the env from the assistant's stored turns
  (`eval_episodes.assistant_turns`), so each shows the task, every turn with its tool calls and
  results, the final message, the verdict with the clauses that failed marked, and the reward
  by component.

A run folder names its run in `summary.json` (written last, so its presence means finished); its
rows live in the data folder it was trained with (`--data`).
"""

from __future__ import annotations

import ast
import base64
import contextlib
import itertools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ecomrlve import store
from ecomrlve.config import EcomConfig, load_config
from ecomrlve.env import Catalog, EcomEnv
from ecomrlve.env.judge.verifier import Verdict
from ecomrlve.env.world.record import CallRecord
from ecomrlve.store import DataPaths
from ecomrlve.train import metrics
from ecomrlve.train.curriculum import row_to_task

REPORT_NAME = "report.html"
EPISODES_PER_STAGE = 20  # `--episodes`: a few hundred KB for the whole page
STAGE_ORDER = ("base", "sft", "final")
PLOT_ORDER = ("sft_loss.png", "reward.png", "success_by_scenario.png", "difficulty_frontier.png")
# violations that make an episode fail (the verifier's goal and claim checks, unseen ids); the
# others (format, waste, limit) only cost reward
FAILING = ("goal:", "claims:", "hallucination:")
TOOL_RESULT_CHARS = 3000  # a tool result longer than this is cut in the page


class ViewError(ValueError):
    """A folder that is not a finished run, or a store without it: one line for the CLI."""


# ---- the run and its store ----------------------------------------------------------------------


@dataclass(frozen=True)
class FinishedRun:
    folder: Path
    summary: dict[str, Any]
    config: EcomConfig

    @property
    def run_id(self) -> str:
        return self.summary["run_id"]

    @classmethod
    def open(cls, folder: Path) -> FinishedRun:
        """The run in `folder`; ViewError unless it finished (summary.json is written last)."""
        if not folder.is_dir():
            raise ViewError(f"{folder} is not a folder (give a training run's --output folder)")
        try:
            summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ViewError(
                f"{folder} is not a finished training run (no summary.json: "
                "give the --output folder of a finished `ecomrlve train`)"
            ) from None
        except ValueError as err:
            raise ViewError(f"{folder}/summary.json is not readable JSON ({err})") from None
        if not isinstance(summary, dict) or "run_id" not in summary:
            raise ViewError(f"{folder}/summary.json names no run_id: not a training run")
        config = folder / "config.yaml"
        return cls(folder, summary, load_config(config if config.exists() else None))


def store_of(run: FinishedRun, data: Path | None) -> Path:
    """The data folder holding the run's rows: `data`, else the nearest folder above the run
    holding a store (`make run` writes DATA/runs/default), else ./data."""
    if data is None:
        above = [p for p in run.folder.resolve().parents if DataPaths.of(p).db.exists()]
        data = above[0] if above else Path("data")
    if not DataPaths.of(data).db.exists():
        raise ViewError(f"no store at {data}: pass --data, the folder the run was trained with")
    return data


def held_out_episodes(data: Path, run: FinishedRun) -> pl.DataFrame:
    """The run's `eval_episodes` rows of its base, SFT and final evaluations."""
    try:
        rows = _read(
            data,
            "SELECT * FROM eval_episodes WHERE run_id = ? AND list_contains(?, stage)",
            [run.run_id, list(STAGE_ORDER)],
        )
    except duckdb.CatalogException:  # no evaluation ever stored here
        rows = pl.DataFrame()
    if not rows.height:
        raise ViewError(
            f"run {run.run_id} has no held-out episodes in the store at {data}: "
            "pass --data, the folder it was trained with"
        )
    return rows


def _read(data: Path, query: str, params: list[Any] | None = None) -> pl.DataFrame:
    con = store.connect(data, read_only=True)
    try:
        return con.sql(query, params=params or []).pl()
    finally:
        con.close()


# ---- the held-out table -------------------------------------------------------------------------


@dataclass
class Interval:
    value: float
    low: float
    high: float


@dataclass
class HeldOutRow:
    """One scenario (or "all"): pass@1 per stage and the paired gains between stages."""

    scenario: str
    tasks: int
    stages: dict[str, Interval]
    gains: dict[str, Interval]


def held_out_rows(episodes: pl.DataFrame, seed: int) -> list[HeldOutRow]:
    """pass@1 with task-bootstrap 95% intervals by scenario ("all" first), per stage, and the
    paired gains `sft-base`, `final-sft` (`metrics.stage_intervals`, the run's seed)."""
    stages = [s for s in STAGE_ORDER if s in set(episodes["stage"].to_list())]
    rows = []
    for scenario in ["all", *sorted(set(episodes["scenario"].to_list()))]:
        part = episodes if scenario == "all" else episodes.filter(pl.col("scenario") == scenario)
        per_stage = {
            s: metrics.per_task(part.filter(pl.col("stage") == s), 1)
            for s in stages
            if part.filter(pl.col("stage") == s).height
        }
        cis, gains = metrics.stage_intervals(per_stage, seed=seed)
        rows.append(
            HeldOutRow(
                scenario=scenario,
                tasks=max(t.height for t in per_stage.values()),
                stages={
                    s: Interval(float(t["pass_at_1"].mean()), cis[s]["ci_low"], cis[s]["ci_high"])
                    for s, t in per_stage.items()
                },
                gains={k: Interval(g["diff"], g["ci_low"], g["ci_high"]) for k, g in gains.items()},
            )
        )
    return rows


# ---- the task mix -------------------------------------------------------------------------------


@dataclass
class Grid:
    """Task counts of scenario (rows) x one axis (columns)."""

    axis: str
    columns: list[int]
    rows: list[tuple[str, list[int]]]

    @property
    def largest(self) -> int:
        return max((n for _, counts in self.rows for n in counts), default=0)


def task_grid(data: Path, axis: str) -> Grid:
    """The store's tasks counted by scenario x `axis` (difficulty or min_steps)."""
    counts = _read(data, f"SELECT scenario, {axis} AS level, count(*) AS n FROM tasks GROUP BY ALL")
    levels = sorted(set(counts["level"].to_list()))
    cells = {(r["scenario"], r["level"]): r["n"] for r in counts.iter_rows(named=True)}
    scenarios = sorted(set(counts["scenario"].to_list()))
    return Grid(axis, levels, [(s, [cells.get((s, lv), 0) for lv in levels]) for s in scenarios])


# ---- episodes -----------------------------------------------------------------------------------


@dataclass
class TurnView:
    number: int
    text: str  # the assistant's turn as generated
    calls: list[CallRecord]
    observation: list[dict[str, Any]]  # tool results and user messages that followed


@dataclass
class EpisodeView:
    row: dict[str, Any]  # the eval_episodes row
    prompt: str = ""
    goal: str = ""  # the task's goal as JSON (what the verifier checks)
    turns: list[TurnView] = field(default_factory=list)
    final_message: str | None = None
    verdict: Verdict | None = None
    note: str = ""  # why there is no transcript, or that the replay disagrees with the row

    @property
    def failed_reasons(self) -> list[str]:
        """The violations that made the episode fail."""
        return [v for v in self.violations if v.startswith(FAILING)]

    @property
    def penalties(self) -> list[str]:
        """The violations that only cost reward (format, waste, the turn limit)."""
        return [v for v in self.violations if not v.startswith(FAILING)]

    @property
    def violations(self) -> list[str]:
        return self.verdict.violations if self.verdict else []


def pick_episodes(episodes: pl.DataFrame, per_stage: int) -> pl.DataFrame:
    """At most `per_stage` episodes of each stage: scenarios in turn, and within a scenario a
    failed episode, then a passed one, and so on (task_id order)."""
    picked: list[dict[str, Any]] = []
    for stage in STAGE_ORDER:
        part = episodes.filter(pl.col("stage") == stage).sort("scenario", "task_id", "sample")
        queues = []
        for scenario in sorted(set(part["scenario"].to_list())):
            rows = part.filter(pl.col("scenario") == scenario).to_dicts()
            failed = [r for r in rows if not r["success"]]
            passed = [r for r in rows if r["success"]]
            queues.append([r for pair in itertools.zip_longest(failed, passed) for r in pair if r])
        turn_by_turn = [r for rank in itertools.zip_longest(*queues) for r in rank if r]
        picked.extend(turn_by_turn[:per_stage])
    return pl.DataFrame(picked, schema=episodes.schema) if picked else episodes.clear()


def replay(
    row: dict[str, Any], task_row: dict[str, Any] | None, catalog: Catalog, config: EcomConfig
) -> EpisodeView:
    """The episode played again from its stored turns: every tool result and the verdict
    (the env is deterministic, so they are the ones the model saw and was scored by)."""
    view = EpisodeView(row)
    if task_row is None:
        view.note = f"the store no longer has task {row['task_id']}"
        return view
    task = row_to_task(task_row)
    view.prompt, view.goal = task.prompt, json.dumps(json.loads(task_row["goal"]), indent=1)
    if not row.get("assistant_turns"):
        view.note = "no stored turns (a run from before eval_episodes kept them)"
        return view
    env = EcomEnv(task, catalog, config.env)
    env.reset(include_tools=False)
    for text in json.loads(row["assistant_turns"]):
        if env.done:
            break
        start = len(env.messages)
        env.step(text)
        number = env.record.turns
        calls = [c for c in env.record.calls if c.turn == number]
        view.turns.append(TurnView(number, text, calls, env.messages[start + 1 :]))
    view.verdict = env.verdict or env.finish()  # a cut episode: judged as the rollout did
    view.final_message = env.record.final_answer
    if view.verdict.success != row["success"] or abs(view.verdict.reward - row["reward"]) > 1e-6:
        view.note = (
            f"the replay gives success {view.verdict.success}, reward {view.verdict.reward:.3f}; "
            f"the stored row says {row['success']}, {row['reward']:.3f} (the env changed since?)"
        )
    return view


def episode_views(data: Path, run: FinishedRun, picked: pl.DataFrame) -> list[EpisodeView]:
    if not picked.height:
        return []
    ids = sorted(set(picked["task_id"].to_list()))
    tasks = _read(data, "SELECT * FROM tasks WHERE list_contains(?, task_id)", [ids])
    by_id = {r["task_id"]: r for r in tasks.iter_rows(named=True)}
    catalog = Catalog.load(data)
    return [replay(r, by_id.get(r["task_id"]), catalog, run.config) for r in picked.to_dicts()]


def rescore(run_dir: Path, data: Path | None = None) -> pl.DataFrame:
    """Every stored held-out episode of the run replayed and judged by today's env: per stage,
    the episodes, pass@1 as stored and as judged now, and how many verdicts flipped each way.
    A verifier change that flips none leaves the run's figures standing; episodes stored
    without turns are left out (`replayed` counts the others)."""
    run = FinishedRun.open(Path(run_dir))
    data = store_of(run, data)
    rows = held_out_episodes(data, run).filter(pl.col("assistant_turns").is_not_null())
    if not rows.height:
        raise ViewError(f"run {run.run_id} stored no turns to replay (a run from before them)")
    views = episode_views(data, run, rows)
    now = [v.verdict.success if v.verdict is not None else None for v in views]
    judged = rows.select("stage", pl.col("success").alias("stored")).with_columns(
        pl.Series("now", now, dtype=pl.Boolean)
    )
    flips = judged.group_by("stage", maintain_order=True).agg(
        pl.len().alias("replayed"),
        pl.col("stored").mean().alias("stored_pass_at_1"),
        pl.col("now").mean().alias("now_pass_at_1"),
        (pl.col("now") & ~pl.col("stored")).sum().alias("now_pass"),
        (~pl.col("now") & pl.col("stored")).sum().alias("now_fail"),
    )
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}
    return flips.sort(pl.col("stage").replace_strict(order, default=len(order)))


# the last ": 'text'" of a claims violation (a name it cites earlier may be quoted too)
_QUOTED = re.compile(r".*: (?P<quote>'.*'|\".*\")$")


def failed_clauses(violations: list[str]) -> list[str]:
    """The final message's words a claims violation quotes (`claims: ...: 'text'`)."""
    clauses = []
    for violation in violations:
        found = _QUOTED.match(violation) if violation.startswith("claims:") else None
        if found:
            try:
                clauses.append(str(ast.literal_eval(found["quote"])).rstrip("…").strip())
            except (ValueError, SyntaxError):
                continue
    return [c for c in clauses if c]


def marked_spans(text: str, clauses: list[str]) -> list[tuple[str, bool]]:
    """`text` cut into (piece, failed) spans: the quoted clauses found in it are failed.

    >>> marked_spans("Hi. I cancelled it. Bye", ["I cancelled it."])
    [('Hi. ', False), ('I cancelled it.', True), (' Bye', False)]
    """
    spans = []
    for clause in clauses:  # the quote joined whitespace runs: match any whitespace
        pattern = r"\s+".join(re.escape(word) for word in clause.split())
        spans.extend(m.span() for m in re.finditer(pattern, text))
    pieces, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            continue
        pieces += [(text[at:start], False), (text[start:end], True)]
        at = end
    pieces.append((text[at:], False))
    return [(piece, failed) for piece, failed in pieces if piece]


def pretty_content(content: Any) -> str:
    """A tool result's JSON indented, cut at `TOOL_RESULT_CHARS`."""
    text = content if isinstance(content, str) else json.dumps(content)
    with contextlib.suppress(ValueError):  # not JSON: shown as it is
        text = json.dumps(json.loads(text), indent=1, ensure_ascii=False)
    if len(text) > TOOL_RESULT_CHARS:
        text = text[:TOOL_RESULT_CHARS] + f"\n… ({len(text) - TOOL_RESULT_CHARS:,} more characters)"
    return text


# ---- the page -----------------------------------------------------------------------------------


def plot_uris(folder: Path) -> list[tuple[str, str]]:
    """(name, data URI) of the run's PNG curves, the usual ones first."""
    found = sorted(
        folder.glob("plots/*.png"),
        key=lambda p: (
            p.name not in PLOT_ORDER,
            PLOT_ORDER.index(p.name) if p.name in PLOT_ORDER else 0,
            p.name,
        ),
    )
    return [
        (
            p.stem.replace("_", " "),
            "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode(),
        )
        for p in found
    ]


def render(context: dict[str, Any]) -> str:
    import jinja2

    template = resources.files("ecomrlve.train").joinpath("view.html.j2").read_text("utf-8")
    env = jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    env.filters["pct"] = lambda v: f"{v:.2f}"
    env.filters["signed"] = lambda v: f"{v:+.3f}"
    env.filters["pretty"] = pretty_content
    env.filters["shade"] = lambda n, top: (
        f"background: rgba(31, 119, 180, {0.08 + 0.6 * n / top:.2f})" if top and n else ""
    )
    env.globals.update(marked_spans=marked_spans, failed_clauses=failed_clauses)
    return env.from_string(template).render(**context)


def write_report(
    run_dir: Path,
    data: Path | None = None,
    output: Path | None = None,
    episodes: int = EPISODES_PER_STAGE,
) -> Path:
    """Write the run's HTML report (default RUN/report.html); return its path.

    Raises ViewError for a folder that is not a finished run or a store without it."""
    if episodes < 0:
        raise ViewError(f"--episodes must be >= 0, got {episodes}")
    run = FinishedRun.open(Path(run_dir))
    data = store_of(run, data)
    rows = held_out_episodes(data, run)
    summary = run.summary
    final_name = str(summary.get("algorithm") or "final").upper()
    context = {
        "run": summary,
        "run_name": run.folder.resolve().name,
        "stage_names": {"base": "base", "sft": "SFT", "final": final_name},
        "stages": [s for s in STAGE_ORDER if s in set(rows["stage"].to_list())],
        "held_out": held_out_rows(rows, seed=run.config.training.seed),
        "plots": plot_uris(run.folder),
        "grids": [task_grid(data, "difficulty"), task_grid(data, "min_steps")],
        "episodes": episode_views(data, run, pick_episodes(rows, episodes)),
        "episodes_total": rows.height,
        "per_stage": episodes,
        "data": str(DataPaths.of(data).root),
    }
    output = Path(output) if output is not None else run.folder / REPORT_NAME
    output.parent.mkdir(parents=True, exist_ok=True)
    store.atomic_write_bytes(render(context).encode("utf-8"), output)
    return output
