"""The CLI end to end on a small catalog: catalog + sql, and bad input exiting 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_catalog_then_sql(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run("catalog", "--products", "2000", "--seed", "5", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert "2,000 products" in result.output
    q = "SELECT category, count(*) AS n, avg(price) AS p FROM products GROUP BY ALL ORDER BY 1"
    result = run("sql", q, "--data", str(data), "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert sum(r["n"] for r in rows) == 2000 and all(r["p"] > 0 for r in rows)
    result = run(
        "sql", "SELECT item_id FROM products LIMIT 2", "--data", str(data), "--format", "csv"
    )
    assert result.output.splitlines() == ["item_id", "I0000000", "I0000001"]
    assert run("sql", "SELECT 1 AS one", "--data", str(data)).exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["catalog", "--products", "-1"], "--products must be a positive number"),
        (["catalog", "--seed", "-2"], "--seed must be >= 0"),
        (["sql", "SELEC 1"], "SQL error"),
        (["sql", "CREATE TABLE t AS SELECT 1"], "SQL error"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args, message, small_catalog_dir) -> None:
    data = small_catalog_dir if args[0] == "sql" else tmp_path / "d"
    result = run(*args, "--data", str(data))
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    if args[0] == "catalog":
        assert not (tmp_path / "d").exists()


def test_sql_without_store_and_unwritable_dir(tmp_path: Path) -> None:
    result = run("sql", "SELECT 1", "--data", str(tmp_path / "none"))
    assert result.exit_code == 2 and "no store" in result.output
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run("catalog", "--products", "10", "--data", str(blocker / "sub"))
    assert result.exit_code == 2 and "not writable" in result.output


@pytest.mark.slow  # a subprocess
def test_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ecomrlve", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and "catalog" in out.stdout
