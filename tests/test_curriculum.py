"""Curriculum shards: selection, easy → hard order, manifest counts, verl/TRL rows, atomicity.

Tasks here are written by hand (Task(...).to_row()) so these tests depend only on the store,
the env's prompt builder and the curriculum module, not on the generators or on Prefect.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve import store
from ecomrlve.catalogs import build_catalog
from ecomrlve.flows import shards as cur
from ecomrlve.integrations.verl import rows as vrows
from ecomrlve.tasks import STEP_BANDS, Goal, RecommendSpec, Task, ToolCall, step_band

SCENARIO_MIX = ("product_discovery", "cart", "policy")
INITIAL_STATE = {
    "today": "2026-03-01",
    "user": {
        "name": "Ann Lee",
        "membership": "standard",
        "address": "1 Main St",
        "payment_methods": ["visa"],
    },
}


def make_tasks(
    item_ids: list[str], catalog_hash: str, n: int, *, seed: int = 0, offset: int = 0
) -> pl.DataFrame:
    """`n` small tasks over three scenarios, difficulties 0-3 and 1-9 steps."""
    rows = []
    for k in range(offset, offset + n):
        scenario = SCENARIO_MIX[k % len(SCENARIO_MIX)]
        difficulty = (k // 3) % 4
        steps = 1 + (k * 7) % 9
        item = item_ids[k % len(item_ids)]
        reference = [ToolCall(name="get_product", arguments={"item_id": item})] * (steps - 1)
        reference.append(ToolCall(name="recommend", arguments={"item_ids": [item]}))
        task = Task(
            task_id=f"{scenario}-s{seed}-d{difficulty}-i{k}-a0",
            scenario=scenario,
            difficulty=difficulty,
            min_steps=steps,
            seed=seed,
            index=k,
            prompt=f"Could you find {item} for me?",
            goal=Goal(recommend=RecommendSpec(acceptable=[item]), relevant_ids=[item]),
            initial_state=INITIAL_STATE,
            reference=reference,
            axes={"n_constraints": float(difficulty), "n_distractors": float(2 * difficulty)},
            catalog_hash=catalog_hash,
        )
        rows.append(task.to_row())
    return pl.DataFrame(rows)


def write_tasks(data: Path, df: pl.DataFrame, run: str = "handmade") -> None:
    paths = store.DataPaths.of(data)
    with store.publish(paths.root) as tx:
        for (scenario, difficulty), part in df.group_by("scenario", "difficulty"):
            tx.write_parquet(
                part,
                paths.tasks
                / f"scenario={scenario}"
                / f"difficulty={difficulty}"
                / f"{run}.parquet",
            )


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    data = tmp_path_factory.mktemp("curriculum-catalog")
    summary = build_catalog(data, 2_000, seed=5)
    items = store.read_products(data)["item_id"].head(50).to_list()
    return data, summary.catalog_hash, items


@pytest.fixture
def data_dir(tmp_path: Path, catalog_dir) -> tuple[Path, str, list[str]]:
    """A fresh copy of the catalog with 120 hand-made tasks."""
    import shutil

    source, chash, items = catalog_dir
    data = tmp_path / "data"
    shutil.copytree(source, data, ignore=shutil.ignore_patterns("*.duckdb", "tasks", "curricula"))
    store.refresh_views(data)
    write_tasks(data, make_tasks(items, chash, 120))
    return data, chash, items


def build(data: Path, name: str = "demo", **kwargs) -> cur.CurriculumResult:
    with store.exclusive_lock(data):
        return cur.build_curriculum(data, name, **kwargs)


def read_shards(result: cur.CurriculumResult) -> list[pl.DataFrame]:
    return [pl.read_parquet(result.path / s["file"]) for s in result.manifest["shards"]]


# ---- ordering -----------------------------------------------------------------------------------


def test_order_is_easy_to_hard_and_interleaves_scenarios(data_dir) -> None:
    data, _, _ = data_dir
    result = build(data, shard_size=12)
    shards = read_shards(result)
    rows = pl.concat(shards)
    assert rows.height == 120 and rows["task_id"].n_unique() == 120
    # difficulty never goes down across the whole curriculum
    assert rows["difficulty"].diff().drop_nulls().min() >= 0
    # within a difficulty, each scenario's tasks come in rising min_steps
    for (_, _), part in rows.with_row_index("position").group_by("difficulty", "scenario"):
        assert part.sort("position")["min_steps"].diff().drop_nulls().min() >= 0
    # scenarios are mixed: no shard holds only one scenario
    assert all(s["scenario"].n_unique() > 1 for s in shards)


def test_plain_order_and_custom_order(data_dir) -> None:
    data, _, _ = data_dir
    plain = pl.concat(read_shards(build(data, "plain", shard_size=50, interleave=False)))
    assert plain.select("difficulty", "min_steps").equals(
        plain.select("difficulty", "min_steps").sort("difficulty", "min_steps")
    )
    custom = pl.concat(read_shards(build(data, "custom", order="min_steps DESC")))
    assert custom["min_steps"].diff().drop_nulls().max() <= 0


def test_where_selects_a_subset(data_dir) -> None:
    data, _, _ = data_dir
    result = build(data, "carts", where="scenario = 'cart' AND min_steps >= 4", shard_size=5)
    rows = pl.concat(read_shards(result))
    assert set(rows["scenario"]) == {"cart"} and rows["min_steps"].min() >= 4
    assert result.manifest["where"] == "scenario = 'cart' AND min_steps >= 4"
    assert "scenario = 'cart' AND min_steps >= 4" in result.manifest["source_query"]


# ---- manifest -----------------------------------------------------------------------------------


def test_manifest_counts_match_the_shards_and_the_store(data_dir) -> None:
    data, chash, _ = data_dir
    result = build(data, shard_size=16)
    manifest = json.loads((result.path / cur.MANIFEST).read_text())
    assert manifest == result.manifest
    assert manifest["tasks"] == 120 and len(manifest["shards"]) == 8
    assert manifest["catalog_hash"] == chash and manifest["seeds"] == [0]
    for entry, shard in zip(manifest["shards"], read_shards(result), strict=True):
        counted = sum(
            n for per_d in entry["counts"].values() for b in per_d.values() for n in b.values()
        )
        assert counted == entry["tasks"] == shard.height
        for scenario, per_d in entry["counts"].items():
            for d, bands in per_d.items():
                for band, n in bands.items():
                    cell = shard.filter(
                        (pl.col("scenario") == scenario) & (pl.col("difficulty") == int(d))
                    )
                    assert (
                        cell.filter(
                            pl.col("min_steps").map_elements(step_band, return_dtype=pl.String)
                            == band
                        ).height
                        == n
                    )
    con = store.connect(data)
    try:
        by_scenario = dict(
            con.execute("SELECT scenario, count(*) FROM tasks GROUP BY 1").fetchall()
        )
    finally:
        con.close()
    assert manifest["scenarios"] == by_scenario
    assert sum(manifest["step_bands"].values()) == 120
    assert manifest["tools"] and {t["function"]["name"] for t in manifest["tools"]} >= {"search"}


@given(st.integers(min_value=0, max_value=40))
def test_step_bands_cover_every_length(steps: int) -> None:
    label = step_band(steps)
    lo, hi = next((lo, hi) for name, lo, hi in STEP_BANDS if name == label)
    assert lo <= steps and (hi is None or steps <= hi)


# ---- what a trainer reads -----------------------------------------------------------------------


def test_shards_carry_prompts_tools_and_verifier_fields(data_dir) -> None:
    from ecomrlve.env import Catalog, initial_messages, reference_turns, verify
    from ecomrlve.train.curriculum import read_curriculum, row_to_task

    data, _, _ = data_dir
    result = build(data, shard_size=40)
    shard = read_shards(result)[0]
    for column in (*cur.TASK_COLUMNS, "messages", "tools"):
        assert column in shard.columns
    row = shard.row(0, named=True)
    task = Task.from_row(row)
    assert row["messages"] == [
        {"role": m["role"], "content": m["content"]} for m in initial_messages(task)
    ]
    assert "<tools>" in row["messages"][0]["content"] and json.loads(row["tools"])
    # the verifier needs nothing but the shard row and the catalog
    assert verify(task, reference_turns(task), Catalog.load(data)).success
    # the trainer's reader takes the shards as they are
    rows = read_curriculum(data, "demo")
    assert rows.height == 120 and row_to_task(rows.row(0, named=True)).task_id == row["task_id"]


def test_verl_rows_load_with_datasets(data_dir) -> None:
    import datasets

    data, _, _ = data_dir
    result = build(data, shard_size=50)
    files = sorted(str(p) for p in (result.path / vrows.VERL_DIR).glob("shard-*.parquet"))
    assert len(files) == 3
    ds = datasets.load_dataset("parquet", data_files=files, split="train")
    val = datasets.load_dataset(
        "parquet", data_files=str(result.path / vrows.VERL_VAL_FILE), split="train"
    )
    assert (ds.num_rows, val.num_rows) == (114, 6)  # 1 in 20 held out for verl's validation
    assert not set(ds["extra_info"][i]["task_id"] for i in range(ds.num_rows)) & set(
        r["task_id"] for r in val["extra_info"]
    )
    indices = [r["index"] for r in ds["extra_info"]] + [r["index"] for r in val["extra_info"]]
    assert sorted(indices) == list(range(120))  # extra_info.index: the row, unique
    assert set(ds.column_names) == {
        "data_source",
        "agent_name",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
    }
    first = ds[0]
    assert first["agent_name"] == vrows.AGENT_NAME
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert "<tools>" not in first["prompt"][0]["content"]  # tools travel as schemas
    assert first["data_source"] == vrows.DATA_SOURCE and first["reward_model"]["style"] == "rule"
    goal = Goal.model_validate_json(first["reward_model"]["ground_truth"])
    assert goal.recommend is not None
    shard = read_shards(result)[0]
    assert first["extra_info"]["task_id"] == shard["task_id"][0]
    assert json.loads(first["extra_info"]["reference"])[-1]["name"] == "recommend"


# ---- errors, atomicity, determinism -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"where": "scenario = 'journey'"}, "no tasks match"),
        ({"where": "no_such_column > 1"}, "cannot select tasks"),
        ({"order": "bogus DESC"}, "cannot select tasks"),
        ({"shard_size": 0}, "--shard-size"),
    ],
)
def test_bad_selections_are_clear_errors(data_dir, kwargs, message) -> None:
    data, _, _ = data_dir
    with pytest.raises(cur.CurriculumError, match=message):
        build(data, "bad", **kwargs)
    assert not (store.DataPaths.of(data).curricula / "bad").exists()


def test_name_must_be_an_identifier(data_dir) -> None:
    data, _, _ = data_dir
    with pytest.raises(store.StoreError, match="invalid curriculum name"):
        build(data, "../escape")


def test_where_runs_on_a_read_only_connection(data_dir) -> None:
    data, _, _ = data_dir
    with pytest.raises(cur.CurriculumError):
        build(data, "evil", where="1=1); CREATE TABLE pwned AS SELECT 1; SELECT (1")
    con = store.connect(data)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        con.close()
    assert "pwned" not in tables


def test_preflight_counts_and_rejects(data_dir) -> None:
    data, _, _ = data_dir
    assert cur.preflight(data, "scenario = 'policy'", None) == 40
    with pytest.raises(cur.CurriculumError, match="no tasks match"):
        cur.preflight(data, "difficulty > 99", None)


def test_tasks_of_another_catalog_are_refused(data_dir) -> None:
    data, chash, items = data_dir
    write_tasks(data, make_tasks(items, "0" * 16, 6, seed=9, offset=500), run="stale")
    with pytest.raises(cur.CurriculumError, match="another catalog"):
        build(data, "mixed")
    result = build(data, "current", where=cur.catalog_predicate(chash))
    assert result.tasks == 120


def test_a_killed_build_leaves_the_previous_curriculum(data_dir, monkeypatch) -> None:
    data, _, _ = data_dir
    before = build(data, shard_size=30)
    snapshot = {p.name: p.read_bytes() for p in before.path.iterdir() if p.is_file()}
    calls = {"n": 0}
    real = cur.verl_rows

    def dies_on_third_shard(shard):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return real(shard)

    monkeypatch.setattr(cur, "verl_rows", dies_on_third_shard)
    with pytest.raises(KeyboardInterrupt):
        build(data, shard_size=10)
    assert {p.name: p.read_bytes() for p in before.path.iterdir() if p.is_file()} == snapshot
    leftovers = [p.name for p in store.DataPaths.of(data).curricula.iterdir()]
    assert leftovers == ["demo"]


def test_rebuild_replaces_and_is_deterministic(data_dir) -> None:
    data, _, _ = data_dir
    first = build(data, shard_size=7)
    first_bytes = {p.name: p.read_bytes() for p in sorted(first.path.rglob("*.parquet"))}
    build(data, shard_size=100)
    again = build(data, shard_size=7)
    again_bytes = {p.name: p.read_bytes() for p in sorted(again.path.rglob("*.parquet"))}
    assert first_bytes == again_bytes
    assert len(list(again.path.glob("shard-*.parquet"))) == 18


@settings(max_examples=15, deadline=None)
@given(
    difficulties=st.lists(st.integers(0, 3), min_size=4, max_size=60),
    shard_size=st.integers(1, 25),
)
def test_interleaved_order_properties(difficulties: list[int], shard_size: int) -> None:
    """The interleaving SQL alone, on random cells: a permutation, difficulty-sorted."""
    df = pl.DataFrame(
        {
            "task_id": [f"t{i:03d}" for i in range(len(difficulties))],
            "scenario": [SCENARIO_MIX[i % 3] for i in range(len(difficulties))],
            "difficulty": difficulties,
            "min_steps": [(i * 5) % 9 + 1 for i in range(len(difficulties))],
        }
    )
    con = duckdb.connect()
    con.register("tasks", df.to_arrow())
    ordered = con.sql(cur.selection_sql(None, None, interleave=True)).pl()
    con.close()
    assert sorted(ordered["task_id"]) == sorted(df["task_id"])
    assert ordered["difficulty"].to_list() == sorted(ordered["difficulty"].to_list())
    for _, part in ordered.with_row_index("position").group_by("difficulty", "scenario"):
        assert part.sort("position")["min_steps"].to_list() == sorted(part["min_steps"].to_list())


def test_load_dataset_on_the_curriculum_folder_gives_train_and_validation(data_dir) -> None:
    """`datasets.load_dataset(DIR/curricula/NAME)` used to guess its splits from the folder
    names and silently return only the few validation rows: the folder's card names both."""
    import datasets

    data, _, _ = data_dir
    result = build(data, shard_size=50)
    splits = datasets.load_dataset(str(result.path))
    assert {name: ds.num_rows for name, ds in splits.items()} == {"train": 114, "validation": 6}
    assert "agent_name" in splits["train"].column_names
