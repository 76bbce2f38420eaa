"""Evaluations that survive (issue 31): `ecomrlve eval --endpoint` keeps each episode as it
finishes, `--resume RUN_ID` plays only the missing ones with the seeds an uninterrupted run
uses, `--limit` spreads over scenario x difficulty, and progress shows episodes/s and an ETA.

The endpoint is a scripted chat server that answers every turn with text (one request per
episode) and records the seed of each request."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.progress import duration
from ecomrlve.testing.endpoint import scripted_server
from ecomrlve.testing.env_tasks import sql_rows
from ecomrlve.testing.training import train_store_dir
from ecomrlve.train.curriculum import read_store_tasks
from ecomrlve.train.evaluate import EpisodeJournal, EpisodeRate, spread_limit


@pytest.fixture(scope="module")
def data():
    return train_store_dir()


@pytest.fixture(scope="module")
def server():
    """(url, requests): every request's (prompt, seed), in arrival order."""
    requests: list[tuple[str, int]] = []

    def reply(body: dict[str, Any], n: int) -> Any:
        requests.append((body["messages"][1]["content"], body["seed"]))
        return {"content": "Your order is on its way."}

    with scripted_server(reply) as url:
        yield url, requests


def _eval(data, url: str, *extra: str, **env: str):
    args = ["eval", "--endpoint", url, "--model", "scripted", "--data", str(data)]
    return CliRunner().invoke(app, [*args, *extra], env=env or None)


def _run_id(output: str) -> str:
    return output.split("run ", 1)[1].split(":")[0]


def test_limit_spreads_over_scenario_and_difficulty(data):
    frame = read_store_tasks(data)
    cells = frame.group_by("scenario", "difficulty").len()
    assert cells.height >= 6  # the store has several cells to spread over
    limit = cells.height + 3
    chosen = spread_limit(frame, limit, seed=7)
    assert chosen.height == limit
    by_scenario = chosen.group_by("scenario").len()["len"]
    assert by_scenario.len() == frame["scenario"].n_unique()  # every scenario
    assert by_scenario.max() - by_scenario.min() <= 1  # evenly, +-1
    by_cell = chosen.group_by("scenario", "difficulty").len()
    assert by_cell.height == cells.height  # every cell
    spread = by_cell.group_by("scenario").agg(gap=pl.col("len").max() - pl.col("len").min())
    assert spread["gap"].max() <= 1  # within a scenario, its difficulties evenly
    assert chosen["task_id"].to_list() == spread_limit(frame, limit, seed=7)["task_id"].to_list()
    assert chosen["task_id"].to_list() != spread_limit(frame, limit, seed=8)["task_id"].to_list()
    # the result keeps the frame's order (easy to hard)
    order = {t: i for i, t in enumerate(frame["task_id"].to_list())}
    assert [order[t] for t in chosen["task_id"]] == sorted(order[t] for t in chosen["task_id"])
    # a cell with few tasks gives what it has; the others fill the limit
    one = frame["scenario"][0]
    lopsided = pl.concat(
        [frame.filter(pl.col("scenario") != one), frame.filter(pl.col("scenario") == one).head(1)]
    )
    assert spread_limit(lopsided, 20, seed=0).height == 20
    assert spread_limit(frame, frame.height + 5, seed=0).height == frame.height


def test_cli_limit_evaluates_a_spread(data, server, tmp_path):
    url, _ = server
    frame = read_store_tasks(data)
    scenarios = frame["scenario"].n_unique()
    result = _eval(data, url, "--k", "1", "--limit", str(scenarios), "-o", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    run_id = _run_id(result.output)
    picked = sql_rows(data, "SELECT scenario FROM eval_episodes WHERE run_id = ?", [run_id])
    assert sorted(s for (s,) in picked) == sorted(frame["scenario"].unique().to_list())
    assert "episodes/s" in result.output


def test_an_interrupted_eval_resumes_without_replaying_finished_episodes(
    data, server, tmp_path, monkeypatch
):
    url, requests = server
    settings = ["--k", "2", "--samples", "2", "--limit", "6", "--seed", "3", "--concurrency", "1"]

    # the reference: the same evaluation, uninterrupted
    requests.clear()
    whole = _eval(data, url, *settings, "-o", str(tmp_path / "whole"))
    assert whole.exit_code == 0, whole.output
    whole_requests = Counter(requests)
    assert sum(whole_requests.values()) == 12
    whole_id = _run_id(whole.output)

    # the same run, stopped (Ctrl-C) after its third episode was kept
    requests.clear()
    append = EpisodeJournal.append
    kept: list[int] = []

    def append_then_stop(self, entry: dict[str, Any]) -> None:
        append(self, entry)
        kept.append(1)
        if len(kept) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(EpisodeJournal, "append", append_then_stop)
    folder = tmp_path / "stopped"
    stopped = _eval(data, url, *settings, "-o", str(folder))
    monkeypatch.setattr(EpisodeJournal, "append", append)
    assert stopped.exit_code == 130, stopped.output
    run_id = _run_id(stopped.output)
    assert f"keeps 3 of 12 episodes in {folder}" in stopped.output
    assert f"--resume {run_id} --data {data} --output {folder}" in stopped.output
    assert len((folder / "episodes.jsonl").read_text().splitlines()) == 3
    assert not (folder / "trajectories.jsonl").exists()
    assert sql_rows(data, "SELECT count(*) FROM eval_results WHERE run_id = ?", [run_id]) == [(0,)]
    first_part = Counter(requests)

    # a crash mid-write leaves a torn last line: it is dropped, not an error
    with open(folder / "episodes.jsonl", "ab") as fh:
        fh.write(b'{"row": {"task_id": "tor')

    requests.clear()
    resumed = CliRunner().invoke(
        app, ["eval", "--resume", run_id, "--data", str(data), "--output", str(folder)]
    )
    assert resumed.exit_code == 0, resumed.output
    assert "12 episodes, 3 found done" in resumed.output
    assert "played 9 episodes" in resumed.output
    assert len(requests) == 9
    # together the two parts sent exactly the uninterrupted run's requests (prompts and seeds)
    assert first_part + Counter(requests) == whole_requests

    episodes = "SELECT task_id, sample, success, reward, steps FROM eval_episodes WHERE run_id = ?"
    order = " ORDER BY task_id, sample"
    assert sql_rows(data, episodes + order, [run_id]) == sql_rows(
        data, episodes + order, [whole_id]
    )
    lines = [json.loads(x) for x in (folder / "trajectories.jsonl").read_text().splitlines()]
    assert len(lines) == 12
    assert sql_rows(
        data, "SELECT sum(tasks), sum(samples) FROM eval_results WHERE run_id = ?", [run_id]
    ) == [(6, 12)]

    again = CliRunner().invoke(
        app, ["eval", "--resume", run_id, "--data", str(data), "--output", str(folder)]
    )
    assert again.exit_code == 2 and "is complete" in again.output


def test_resume_bad_input_exits_2(data, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "--resume", "eval-nope-1234", "--data", str(data)])
    assert result.exit_code == 2 and "run.json is missing" in result.output
    result = runner.invoke(app, ["eval", "--resume", "eval-x", "--limit", "3", "--data", str(data)])
    assert result.exit_code == 2 and "drop --limit" in result.output
    result = runner.invoke(app, ["eval", "--data", str(data)])
    assert result.exit_code == 2 and "--model is required" in result.output


def test_progress_text_counts_rate_and_eta_from_this_process_only():
    now = [100.0]
    rate = EpisodeRate(total=10, done=4, clock=lambda: now[0])
    assert rate.text() == "4/10 episodes, 0.00 episodes/s, ETA ?"
    now[0] = 102.0
    rate.add()
    now[0] = 104.0
    assert rate.add() == "6/10 episodes, 0.50 episodes/s, ETA 8s"
    assert duration(3725) == "1h02m" and duration(125) == "2m05s"
