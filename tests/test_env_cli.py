"""`ecomrlve solve | verify | play` end to end on a small store."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.testing import env_tasks as fx

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def test_solve_then_verify_succeeds_for_every_task(fx_store, tmp_path):
    trajectories = tmp_path / "ref.jsonl"
    result = run("solve", "--data", fx_store, "--out", trajectories)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in trajectories.read_text().splitlines()]
    assert len(lines) == len(fx.all_tasks())
    assert all(line["turns"][0].startswith("<tool_call>") for line in lines)
    verdicts = tmp_path / "verdicts.jsonl"
    result = run("verify", "--data", fx_store, "--trajectories", trajectories, "--out", verdicts)
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in verdicts.read_text().splitlines()]
    assert all(r["success"] for r in rows), [r for r in rows if not r["success"]]
    assert {"task_id", "success", "reward", "components", "steps", "violations"} <= set(rows[0])
    assert "verdicts by scenario" in result.output and "cancel" in result.output


def test_solve_where_selects_tasks(fx_store, tmp_path):
    out = tmp_path / "cancel.jsonl"
    result = run("solve", "--data", fx_store, "--out", out, "--where", "scenario = 'cancel'")
    assert result.exit_code == 0
    assert [json.loads(x)["task_id"] for x in out.read_text().splitlines()] == ["fx-cancel"]


def test_solve_where_cannot_write(fx_store, tmp_path):
    out = tmp_path / "x.jsonl"
    result = run("solve", "--data", fx_store, "--out", out, "--where", "1=1; DROP VIEW tasks")
    assert result.exit_code == 2 and not out.exists()


def test_verify_to_stdout(fx_store, tmp_path):
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps({"task_id": "fx-policy", "turns": ["no idea"]}) + "\n")
    result = run("verify", "--data", fx_store, "--trajectories", trajectories)
    assert result.exit_code == 0
    verdict = json.loads(result.stdout.splitlines()[0])
    assert verdict["task_id"] == "fx-policy" and verdict["success"] is False


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"task_id": "fx-policy", "turns": []}\n{not json\n', "line 2"),
        ('{"task_id": "ghost", "turns": []}\n', "unknown task_id 'ghost'"),
        ('{"turns": []}\n', "line 1: missing string 'task_id'"),
        ('{"task_id": "fx-policy", "turns": "x"}\n', "'turns' must be a list"),
        ("[1]\n", "expected an object"),
    ],
)
def test_verify_bad_input_exits_2_with_one_line(fx_store, tmp_path, content, message):
    trajectories = tmp_path / "bad.jsonl"
    trajectories.write_text(content)
    out = tmp_path / "v.jsonl"
    result = run("verify", "--data", fx_store, "--trajectories", trajectories, "--out", out)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_missing_files_exit_2(fx_store, tmp_path):
    result = run("verify", "--data", fx_store, "--trajectories", tmp_path / "none.jsonl")
    assert result.exit_code == 2 and "no trajectory file" in result.stderr
    result = run("solve", "--data", tmp_path / "empty", "--out", tmp_path / "o.jsonl")
    assert result.exit_code == 2 and "no store" in result.stderr


def test_play_by_piping_stdin(fx_store):
    script = "\n".join([
        "list_orders",
        'cancel_order {"order_id": "O1001"}',
        ":state",
        'cancel_order {"order_id": "O1001", "reason": "ordered by mistake"}',
        "Your order O1001 is cancelled.",
    ]) + "\n"  # fmt: skip
    result = run("play", "--data", fx_store, "--task", "fx-cancel", input=script)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "I ordered a jacket" in out and "O1002" in out
    assert "missing argument(s) 'reason'" in out
    assert "done: success=True" in out and "format: turn 2" in out


def test_play_unknown_task_exits_2(fx_store):
    result = run("play", "--data", fx_store, "--task", "nope", input="")
    assert result.exit_code == 2 and "unknown task id 'nope'" in result.stderr


def test_play_turns_shorthand_into_calls():
    from ecomrlve.cli.env import play_turn

    assert '"name": "view_cart"' in play_turn("view_cart")
    assert '"query": "boots"' in play_turn('search {"query": "boots"}')
    assert play_turn("thanks, bye") == "thanks, bye"
    assert play_turn('{"name": "x"}').startswith("<tool_call>")


def test_verify_a_malformed_task_exits_2_naming_it(tmp_path):
    catalog = fx.small_catalog()
    bad = fx.policy_task(catalog)
    bad.task_id = "fx-bad"
    bad.initial_state = {"today": "not a date", "user": {}}
    root = tmp_path / "data"
    fx.write_store(root, tasks=[bad])
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps({"task_id": "fx-bad", "turns": ["hi"]}) + "\n")
    result = run("verify", "--data", root, "--trajectories", trajectories)
    assert result.exit_code == 2
    assert "task 'fx-bad'" in result.stderr and "today" in result.stderr
