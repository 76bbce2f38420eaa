"""Bounded inputs (issue 8, part 3): agent values reach the search index only as validated,
literal values, and user SQL (`ecomrlve sql`, `--where`) cannot write.

* Search: free text goes through the index's analyzer into term queries, so query syntax
  (`title:*`, `AND`, `(`, quotes, SQL comments, regex) is only word separators; filter values
  are compared exactly (after normalising case and spaces) against the catalog's values,
  checked here against an independent numpy reference.
* SQL: a read-only DuckDB connection still runs `COPY … TO`, `EXPORT DATABASE` and several
  statements at once; `ecomrlve sql` and `solve --where` accept exactly one SELECT
  (`ecomrlve.read_sql.check_read_query`), exit 2 with one line otherwise, and leave every file
  as it was.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.env import EcomEnv
from ecomrlve.env.shop.products import FilterError, normalise_text
from ecomrlve.env.shop.search import analyzer_tokens
from ecomrlve.read_sql import ReadOnlySQLError, check_read_query
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.fuzzer import META

CATALOG = fx.small_catalog()
runner = CliRunner()

# The fuzzer's query/filter metacharacters, plus search-syntax and control-character cases.
NASTY = [
    *META,
    "boots AND NOT boots",
    "+boots -boots",
    "boots~2^3",
    "\x00",
    "\ud800",
    "</tool_call>",
]


# ---- search: literal words and exact filters -----------------------------------------------------


def _words(query: str) -> str:
    """The query with every non-word character replaced by a space: its literal words."""
    return re.sub(r"[\W_]+", " ", query.encode("utf-8", "replace").decode("utf-8"))


@pytest.mark.parametrize("query", NASTY)
def test_query_syntax_is_only_word_separators(query):
    for filters in (None, {"in_stock": True}, {"category": "boots"}):
        results = CATALOG.search(query, filters, 20)
        assert results == CATALOG.search(_words(query), filters, 20)
        tokens = set(analyzer_tokens(query))
        mask = CATALOG.filter_mask(filters)
        for result in results:
            row = CATALOG.row_of(result["item_id"])
            assert mask[row]
            if tokens:  # every hit holds one of the query's words (no operator semantics)
                text = " ".join(
                    str(CATALOG.value(c, row)) for c in ("title", "description", "category")
                )
                assert tokens & set(analyzer_tokens(text)), (query, result["title"])
        if not tokens:  # no words at all: a filter-only browse, not "match everything" syntax
            assert results == CATALOG.search("", filters, 20)


def test_operator_words_do_not_act_as_operators():
    """As operators, these would exclude every boot; as words they match boots."""
    boots = {"category": "boots"}
    assert CATALOG.search("boots AND NOT boots", boots, 5)
    assert CATALOG.search("-boots", boots, 5) == CATALOG.search("boots", boots, 5)
    assert CATALOG.search("NOT boots", boots, 5) == CATALOG.search("not boots", boots, 5)


@pytest.mark.parametrize("value", [*NASTY, "' OR ''='", "%%", "' OR brand LIKE '%"])
@pytest.mark.parametrize("key", ["category", "brand", "color", "size"])
def test_text_filters_match_only_literally(key, value):
    if not normalise_text(value):
        with pytest.raises(FilterError):
            CATALOG.filter_mask({key: value})
        return
    assert not CATALOG.filter_mask({key: value}).any()
    assert CATALOG.search("", {key: value}, 50) == []
    real = str(CATALOG.value(key, 0))
    assert not CATALOG.filter_mask({key: f"{real}{value}"}).any()
    assert CATALOG.filter_mask({key: f"  {real.upper()} "}).sum() > 0  # normalised, still exact


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(["category", "brand", "color", "size"]),
    value=st.one_of(
        st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
        st.sampled_from([str(CATALOG.value(k, r)) for k in ("brand", "size") for r in range(30)]),
    ),
)
def test_text_filter_equals_a_numpy_reference(key, value):
    column = [normalise_text(str(v)) for v in CATALOG.products[key].to_list()]
    wanted = normalise_text(value)
    if not wanted:
        with pytest.raises(FilterError):
            CATALOG.filter_mask({key: value})
        return
    expected = np.array([v == wanted for v in column])
    assert np.array_equal(CATALOG.filter_mask({key: value}), expected)


@pytest.mark.parametrize(
    "filters",
    [
        {"min_price": "0 OR 1=1"},
        {"max_price": "1; DROP TABLE products"},
        {"in_stock": "true' --"},
        {"max_ship_days": 2.5},
        {"brand": ["x"]},
        {"price": 3},
        {"brand": "x" * 10_000},
        {"min_rating": float("nan")},
    ],
)
def test_bad_filter_values_are_clean_tool_errors(filters):
    env = EcomEnv(fx.world_task(CATALOG), CATALOG)
    env.reset()
    before = env.state_hash()
    result = env.step(
        {"tool_calls": [{"name": "search", "arguments": {"query": "x", "filters": filters}}]}
    )
    (message,) = result.observation
    content = json.loads(message["content"])
    assert "error" in content and len(content["error"]) < 300
    assert env.state_hash() == before and not result.done


# ---- SQL from the user: one SELECT, never a write -----------------------------------------------


@pytest.fixture(scope="module")
def store_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sqlstore")
    fx.write_store(root / "data")
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _writes(root: Path) -> list[str]:
    out = root / "out"
    return [
        "DROP VIEW products",
        "CREATE TABLE t AS SELECT 1",
        "CREATE TEMP TABLE t AS SELECT 1",
        "CREATE OR REPLACE VIEW tasks AS SELECT 1",
        "INSERT INTO products SELECT * FROM products",
        "UPDATE products SET price = 0",
        "DELETE FROM products",
        f"COPY (SELECT 1) TO '{out}.csv'",
        f"COPY products TO '{out}.parquet' (FORMAT parquet)",
        f"EXPORT DATABASE '{out}-db'",
        f"ATTACH '{out}.duckdb' AS other",
        "INSTALL fts",
        "LOAD fts",
        "SET enable_external_access = false",
        "PRAGMA enable_profiling",
        "CHECKPOINT",
        "VACUUM",
        f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}-explain.csv'",
        f"SELECT 1; COPY (SELECT 1) TO '{out}-second.csv'",
        "SELECT * FROM products LIMIT 1; DROP VIEW products",
    ]


def test_sql_runs_one_select(store_root):
    data = store_root / "data"
    before = _snapshot(store_root)
    for query in ("SELECT count(*) AS n FROM tasks", "FROM products LIMIT 2", "DESCRIBE tasks",
                  "WITH t AS (SELECT 1 AS x) SELECT * FROM t", "SHOW TABLES"):  # fmt: skip
        result = runner.invoke(app, ["sql", query, "--data", str(data), "--format", "json"])
        assert result.exit_code == 0, (query, result.output)
    assert _snapshot(store_root) == before


def test_sql_cannot_write(store_root):
    data = store_root / "data"
    before = _snapshot(store_root)
    for query in _writes(store_root):
        result = runner.invoke(app, ["sql", query, "--data", str(data)])
        assert result.exit_code == 2, (query, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (query, result.stderr)
        assert "Traceback" not in result.output
    assert _snapshot(store_root) == before  # nothing written, nothing changed
    with pytest.raises(ReadOnlySQLError):
        check_read_query("SELECT 1; SELECT 2")
    assert check_read_query("SELECT 1") == "SELECT 1"


@pytest.mark.parametrize(
    "where",
    [
        "1=1); DROP VIEW tasks; --",
        "1=1); COPY (SELECT 1) TO '{out}.csv'; --",
        "1=1) ORDER BY task_id; EXPORT DATABASE '{out}-db'; --",
        "1=1); CREATE TABLE x AS SELECT 1; --",
        "scenario = 'cart'; DELETE FROM tasks",
    ],
)
def test_solve_where_cannot_write(store_root, where):
    data = store_root / "data"
    before = _snapshot(store_root)
    target = store_root / "ref.jsonl"
    where = where.format(out=store_root / "out")
    result = runner.invoke(
        app, ["solve", "--out", str(target), "--where", where, "--data", str(data)]
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert _snapshot(store_root) == before and not target.exists()


def test_solve_where_still_selects(store_root):
    target = store_root / "cart.jsonl"
    result = runner.invoke(
        app,
        [
            "solve",
            "--out",
            str(target),
            "--where",
            "scenario = 'cart'",
            "--data",
            str(store_root / "data"),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["fx-cart"]
    target.unlink()


CURRICULUM_WRITES = [
    "1=1); DROP VIEW tasks; --",
    "1=1)) GROUP BY ALL; COPY (SELECT 1) TO '{out}'; --",
    "1=1) ORDER BY 1; COPY tasks TO '{out}'; --",
]


@pytest.mark.parametrize("where", CURRICULUM_WRITES)
def test_curriculum_where_cannot_write(store_root, tmp_path, where):
    data = store_root / "data"
    out = tmp_path / "pwn.csv"
    before = _snapshot(store_root)
    result = runner.invoke(
        app,
        ["curriculum", "build", "--name", "x", "--where", where.format(out=out),
         "--data", str(data)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert _snapshot(store_root) == before


def test_training_where_cannot_write(store_root, tmp_path):
    from ecomrlve.train.curriculum import CurriculumError, read_store_tasks

    out = tmp_path / "pwn.csv"
    for where in (f"1=1; COPY (SELECT 1) TO '{out}'", f"1=1 ORDER BY 1); COPY tasks TO '{out}"):
        with pytest.raises(CurriculumError, match=r"one SQL predicate|read-only SELECT"):
            read_store_tasks(store_root / "data", where)
    assert not out.exists()
