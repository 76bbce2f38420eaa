"""`ecomrlve verify`, `ecomrlve solve` and `ecomrlve play` (registered by `register(app)`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import typer
from rich.markup import escape

from ecomrlve import store
from ecomrlve.cli.common import DataOpt, console, err_console, fail, frame_table, user_errors
from ecomrlve.config import EnvConfig, load_config
from ecomrlve.tasks import read_tasks

ConfigOpt = typer.Option(None, "--config", help="YAML config (its env block is used)")


def _env_config(path: Path | None) -> EnvConfig:
    return load_config(path).env


def _read_trajectories(path: Path) -> list[tuple[int, str, list[Any]]]:
    """(line number, task_id, turns) per episode; raises ValueError naming the bad line."""
    if not path.exists():
        raise FileNotFoundError(f"no trajectory file {path}")
    episodes = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path} line {number}: not valid JSON ({err.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path} line {number}: expected an object")
            task_id, turns = obj.get("task_id"), obj.get("turns")
            if not isinstance(task_id, str) or not task_id:
                raise ValueError(f"{path} line {number}: missing string 'task_id'")
            if not isinstance(turns, list):
                raise ValueError(f"{path} line {number}: 'turns' must be a list")
            episodes.append((number, task_id, turns))
    return episodes


def _jsonl(rows: Iterator[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def _summary(verdicts: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "scenario": [v["scenario"] for v in verdicts],
            "success": [v["success"] for v in verdicts],
            "reward": [v["reward"] for v in verdicts],
            "steps": [v["steps"] for v in verdicts],
        },
        schema={
            "scenario": pl.String,
            "success": pl.Boolean,
            "reward": pl.Float64,
            "steps": pl.Int64,
        },
    )
    by = frame.group_by("scenario").agg(
        episodes=pl.len(),
        success_rate=pl.col("success").mean(),
        mean_reward=pl.col("reward").mean(),
        mean_steps=pl.col("steps").mean(),
    )
    total = frame.select(
        scenario=pl.lit("all"),
        episodes=pl.len(),
        success_rate=pl.col("success").mean(),
        mean_reward=pl.col("reward").mean(),
        mean_steps=pl.col("steps").mean(),
    )
    return pl.concat([by.sort("scenario"), total], how="vertical_relaxed")


def register(app: typer.Typer) -> None:
    """Add the env's commands to the `ecomrlve` app: `verify`, `solve` and `play` (over 80
    lines only because it holds their typer functions, each under 60)."""

    @app.command()
    def verify(
        trajectories: Path = typer.Option(..., "--trajectories", help="trajectory JSONL"),
        out: Path | None = typer.Option(None, "--out", help="verdict JSONL (default stdout)"),
        data: Path = DataOpt,
        config: Path | None = ConfigOpt,
    ) -> None:
        """Replay trajectories against fresh envs and write one verdict per episode."""
        from ecomrlve.env.episode.replay import verify as verify_episode
        from ecomrlve.env.shop.products import Catalog

        with user_errors():
            env_config = _env_config(config)
            episodes = _read_trajectories(trajectories)
            ids = sorted({task_id for _, task_id, _ in episodes})
            tasks = {t.task_id: t for t in read_tasks(data, "list_contains(?, task_id)", [ids])}
            for number, task_id, _ in episodes:
                if task_id not in tasks:
                    raise ValueError(f"{trajectories} line {number}: unknown task_id {task_id!r}")
            catalog = Catalog.load(data)
        verdicts = []
        for number, task_id, turns in episodes:
            try:
                verdict = verify_episode(tasks[task_id], turns, catalog, env_config)
            except ValueError as err:  # a malformed task (initial_state), not a bad trajectory
                fail(f"{trajectories} line {number}: task {task_id!r}: {err}")
            verdicts.append(verdict.to_json())
        payload = _jsonl(iter(verdicts))
        if out is None:
            sys.stdout.write(payload.decode())
            target = err_console
        else:
            with user_errors(OSError):
                store.atomic_write_bytes(payload, out)
            target = console
        if verdicts:
            target.print(frame_table(_summary(verdicts), title="verdicts by scenario"))
        else:
            target.print("no episodes in the trajectory file")

    @app.command()
    def solve(
        out: Path = typer.Option(..., "--out", help="trajectory JSONL to write"),
        where: str | None = typer.Option(
            None,
            "--where",
            help="trusted SQL predicate on the tasks view, e.g. \"scenario = 'cart'\" "
            "(read-only: it runs inside one SELECT)",
        ),
        data: Path = DataOpt,
    ) -> None:
        """Write the reference solution of every (selected) task as a trajectory."""
        from ecomrlve.env.episode.reference import reference_turns

        with user_errors():
            tasks = read_tasks(data, where)
        if not tasks:
            fail(f"no tasks match --where {where!r}: nothing written" if where else "no tasks")
        rows = ({"task_id": t.task_id, "turns": reference_turns(t)} for t in tasks)
        with user_errors(OSError):
            store.atomic_write_bytes(_jsonl(rows), out)
        console.print(f"{len(tasks):,} reference trajectories written to {out}")

    @app.command()
    def play(
        task: str = typer.Option(..., "--task", help="task_id to play"),
        data: Path = DataOpt,
        config: Path | None = ConfigOpt,
        show_system: bool = typer.Option(
            False, "--show-system/--no-show-system", help="print the system prompt", metavar=""
        ),
    ) -> None:
        """Play a task by hand: type tool calls, see the env answer; plain text ends it.

        A line is one of: `name {"arg": ...}` (e.g. `search {"query": "boots"}`), a bare tool
        name (`view_cart`), a JSON call `{"name": ..., "arguments": {...}}`, a raw
        `<tool_call>` block, `:state` (print the world state), `:quit`; any other text is the
        final answer to the customer.
        """
        from ecomrlve.env.episode.environment import EcomEnv
        from ecomrlve.env.shop.products import Catalog

        with user_errors():
            env_config = _env_config(config)
            found = read_tasks(data, "task_id = ?", [task])
            if not found:
                raise ValueError(f"unknown task id {task!r}")
            catalog = Catalog.load(data)
        env = EcomEnv(found[0], catalog, env_config)
        messages = env.reset()
        if show_system:
            console.print(messages[0]["content"], markup=False, highlight=False)
        console.print(f"[bold]customer:[/bold] {escape(messages[1]['content'])}", highlight=False)
        for line in sys.stdin:
            text = line.strip()
            if not text:
                continue
            if text == ":quit":
                break
            if text == ":state":
                console.print_json(json.dumps(env.state(), default=str))
                continue
            result = env.step(play_turn(text))
            for message in result.observation:
                who = escape(message.get("name") or message["role"])
                console.print(f"[bold]{who}:[/bold] {escape(message['content'])}", highlight=False)
            if result.done:
                verdict = result.info["verdict"]
                console.print(
                    f"done: success={verdict.success} reward={verdict.reward} "
                    f"components={verdict.components}",
                    highlight=False,
                    markup=False,
                )
                for violation in verdict.violations:
                    console.print(f"  - {violation}", highlight=False, markup=False)
                return
        console.print("episode not finished (input ended)")


def play_turn(text: str) -> str:
    """Turn one line typed in `play` into an assistant turn (raw Qwen3 text)."""
    from ecomrlve.env.episode.parser import format_call
    from ecomrlve.env.shop.tools import TOOL_SPECS

    if text.startswith("<tool_call>") or text.startswith("{"):
        if text.startswith("{"):
            return f"<tool_call>\n{text}\n</tool_call>"
        return text
    name, _, rest = text.partition(" ")
    if name in TOOL_SPECS:
        rest = rest.strip()
        if not rest:
            return format_call(name, {})
        try:
            arguments = json.loads(rest)
        except json.JSONDecodeError:
            # keep it malformed on purpose: the env answers with a format error
            return f'<tool_call>\n{{"name": "{name}", "arguments": {rest}}}\n</tool_call>'
        return (
            format_call(name, arguments)
            if isinstance(arguments, dict)
            else (f'<tool_call>\n{{"name": "{name}", "arguments": {rest}}}\n</tool_call>')
        )
    return text
