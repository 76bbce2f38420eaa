"""CLI polish: --version, --flag/--no-flag booleans, an empty --where, progress lines when
stderr is not a terminal."""

from __future__ import annotations

import io
import sys

from typer.testing import CliRunner

from ecomrlve import __version__
from ecomrlve.cli import app
from ecomrlve.cli import common as cli_common
from ecomrlve.progress import ProgressEvent

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ecomrlve {__version__}"


def test_boolean_flags_come_in_pairs(fx_store, tmp_path) -> None:
    help_text = runner.invoke(app, ["curriculum", "build", "--help"], env={"COLUMNS": "200"})
    assert "--interleave" in help_text.stdout and "--no-interleave" in help_text.stdout
    line = next(x for x in help_text.stdout.splitlines() if "--no-interleave" in x)
    assert "<bool>" not in line  # a flag pair takes no value, and help does not suggest one
    # both spellings parse (the run then stops at the empty selection, not at the option)
    for flag in ("--interleave", "--no-interleave"):
        result = runner.invoke(
            app,
            ["curriculum", "build", "--name", "x", flag, "--where", "1=0", "--data", str(fx_store)],
        )
        assert result.exit_code == 2
        assert "no tasks match" in result.stderr, result.stderr
    pipeline_help = runner.invoke(app, ["pipeline", "--help"], env={"COLUMNS": "200"})
    assert "--no-skip-train" in pipeline_help.stdout


def test_solve_where_that_selects_nothing_exits_2(fx_store, tmp_path) -> None:
    out = tmp_path / "none.jsonl"
    result = runner.invoke(
        app, ["solve", "--data", str(fx_store), "--out", str(out), "--where", "scenario = 'nope'"]
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no tasks match --where" in lines[0]
    assert not out.exists()


def test_progress_prints_lines_when_stderr_is_not_a_terminal(monkeypatch) -> None:
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    with cli_common.progress_bar("stage-test", line_every_s=0.01) as update:
        update(ProgressEvent("generate", 5, 10, "tasks"))
        for _ in range(500):  # wait for the heartbeat thread (bounded)
            if "generate" in captured.getvalue():
                break
            cli_common.time.sleep(0.01)
    lines = captured.getvalue().splitlines()
    assert any(line.startswith("stage-test  50%: generate tasks 5/10") for line in lines), lines


def test_a_short_command_prints_no_progress_line(monkeypatch) -> None:
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    with cli_common.progress_bar("quick") as update:
        update(ProgressEvent.of("done", 1.0))
    assert captured.getvalue() == ""
