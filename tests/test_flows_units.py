"""The flows' plain parts, without a Prefect server: settings, parameters, planning helpers."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecomrlve.cli.flows import TINY_TRAINING_CONFIG, resolve_config
from ecomrlve.config import ConfigError, EcomConfig, load_config
from ecomrlve.flows import QUIET_DEFAULTS, prefect_env
from ecomrlve.flows.params import CurriculumParams, PipelineParams, RegenerateParams
from ecomrlve.flows.regenerate import (
    allocate,
    curriculum_where,
    failure_weights,
    fresh_seeds,
    weakest_axes,
)


def test_prefect_env_is_private_quiet_and_respects_the_user(tmp_path, monkeypatch) -> None:
    for key in (*QUIET_DEFAULTS, "PREFECT_HOME", "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"):
        monkeypatch.delenv(key, raising=False)
    home = prefect_env(tmp_path / "data", console_log_level="WARNING")
    assert home == (tmp_path / "data" / ".prefect").resolve() and home.is_dir()
    assert os.environ["DO_NOT_TRACK"] == "1"
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert int(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]) >= 90
    assert os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "WARNING"
    mine = tmp_path / "my-prefect"
    monkeypatch.setenv("PREFECT_HOME", str(mine))
    monkeypatch.setenv("DO_NOT_TRACK", "0")
    assert prefect_env(tmp_path / "other") == mine
    assert os.environ["DO_NOT_TRACK"] == "0"


def test_default_config_pairs_data_defaults_with_the_tiny_trainer() -> None:
    cfg, source = resolve_config(None, {})
    assert (cfg.data.products, cfg.data.tasks) == (20_000, 13_200)
    assert cfg.agent.model == "tiny-qwen3" and "tiny_cpu.yaml" in source
    # the demo trains on the tasks its own data block describes, in its scenarios
    tiny = load_config(TINY_TRAINING_CONFIG)
    lo, hi = tiny.data.difficulty
    assert cfg.data.train_where == (
        f"difficulty BETWEEN {lo} AND {hi} AND coalesce(core_steps, min_steps) <= "
        f"{tiny.data.max_steps}"
    )
    assert cfg.env.scenarios == tiny.env.scenarios
    assert cfg.training.algorithm.dynamic_sampling_metric == "success"


def test_flags_override_the_config_file() -> None:
    path = Path(__file__).resolve().parents[1] / "configs" / "ecom_rlve.yaml"
    with pytest.warns(UserWarning, match="ignored"):
        cfg, source = resolve_config(path, {"tasks": 50, "task_runner": "processes"})
    assert cfg.data.tasks == 50 and cfg.data.task_runner == "processes"
    assert cfg.data.products == 1_000_000 and "--tasks" in source


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tasks": -1}, "data.tasks"),
        ({"products": 0}, "data.products"),
        ({"task_runner": "gpu"}, "data.task_runner"),
        ({"dask_address": "tcp://127.0.0.1:8786"}, "dask_address needs task_runner: dask"),
        ({"schedule": "every day"}, "not a cron expression"),
    ],
)
def test_bad_overrides_are_config_errors(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_config(None, overrides)


def test_band_predicate() -> None:
    cfg, _ = resolve_config(None, {"min_steps": 2, "max_steps": 5})
    core = "coalesce(core_steps, min_steps)"
    assert cfg.data.band == f"difficulty BETWEEN 0 AND 10 AND {core} >= 2 AND {core} <= 5"


def test_params_pin_absolute_paths_and_validate_names(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    params = PipelineParams(data_dir="data")
    assert params.data_dir == str(tmp_path / "data")
    assert params.training_output() == tmp_path / "data" / "runs" / "default"
    assert PipelineParams.model_validate(params.model_dump(mode="json")) == params
    with pytest.raises(ValueError, match="invalid curriculum name"):
        CurriculumParams(data_dir="d", name="drop table")
    with pytest.raises(ValueError, match="--min-steps 8 > --max-steps 6"):
        RegenerateParams(data_dir="d", name="hard", min_steps=8, max_steps=6, tasks=3)
    with pytest.raises(ValueError, match="unknown scenario"):
        RegenerateParams(
            data_dir="d", name="h", min_steps=1, max_steps=2, tasks=1, scenarios=["nope"]
        )
    # the config checks a name's shape only; the pipeline's params check it is registered
    shopping = EcomConfig(env={"scenarios": ["cart", "shopping"]})
    with pytest.raises(ValueError, match=r"unknown scenario\(s\) \['shopping'\]"):
        PipelineParams(data_dir="d", config=shopping)


# ---- regeneration planning ----------------------------------------------------------------------


def test_fresh_seeds_are_deterministic_and_skip_used_ones() -> None:
    seeds = fresh_seeds(0, "hard", 4, set())
    assert seeds == fresh_seeds(0, "hard", 4, set()) and len(set(seeds)) == 4
    assert fresh_seeds(0, "hard", 4, {seeds[0]})[:3] == seeds[1:]
    assert fresh_seeds(0, "other", 4, set()) != seeds
    assert all(0 <= s < 2**31 for s in seeds)


@given(
    total=st.integers(0, 500),
    weights=st.lists(st.floats(0.01, 5.0), min_size=1, max_size=12),
)
def test_allocate_splits_exactly_and_proportionally(total: int, weights: list[float]) -> None:
    cells = {("cart", d): w for d, w in enumerate(weights)}
    out = allocate(total, cells)
    assert sum(out.values()) == total
    mass = sum(weights)
    for cell, n in out.items():
        assert abs(n - total * cells[cell] / mass) < 1.0 + 1e-9


def test_failure_weights_and_weakest_axes() -> None:
    results = pl.DataFrame(
        {
            "scenario": ["cart", "cart", "policy"],
            "difficulty": [0, 1, 0],
            "n_constraints": [2.0, 3.0, 2.0],
            **{a: [0.0, 0.0, 0.0] for a in ("n_items", "n_orders")},
            "episodes": [10, 10, 10],
            "successes": [0, 2, 10],
        }
    )
    weights = failure_weights(results, [("cart", 0), ("cart", 1), ("policy", 0), ("policy", 1)])
    assert weights[("cart", 0)] > weights[("cart", 1)] > weights[("policy", 0)]
    assert weights[("policy", 1)] == 0.5  # never seen
    axes = weakest_axes(results.with_columns(*(pl.lit(0.0).alias(a) for a in _other_axes())))
    assert axes[0]["axis"] == "n_constraints" and axes[0]["value"] == 3.0


def _other_axes() -> list[str]:
    from ecomrlve.tasks import DIFFICULTY_AXES

    return [a for a in DIFFICULTY_AXES if a not in ("n_constraints", "n_items", "n_orders")]


def test_curriculum_where_selects_only_the_regenerated_seeds() -> None:
    where = curriculum_where([11, 12], 6, 8, "ab12")
    assert where == "seed IN (11, 12) AND core_steps BETWEEN 6 AND 8 AND catalog_hash = 'ab12'"
    with pytest.raises(ValueError, match="not a hex digest"):
        curriculum_where([1], 6, 8, "x' OR 1=1 --")


def test_stage_cache_keys_follow_the_code_each_stage_imports(tmp_path) -> None:
    """A taxonomy word edited in a copy of the package changes the generate stage's cache key
    (prompts import the taxonomy, so the stage reruns) and leaves the keys of stages that never
    import it alone; an edit to the plots module reruns only the plot stage."""
    import shutil

    import ecomrlve
    from ecomrlve.flows import pipeline
    from ecomrlve.flows.stages import StableInputs, source_fingerprint

    package = tmp_path / "ecomrlve"
    shutil.copytree(
        Path(ecomrlve.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__")
    )
    stages = {
        "generate": pipeline.GENERATOR_CODE,
        "validate": pipeline.VALIDATOR_CODE,
        "curriculum": pipeline.CURRICULUM_CODE,
        "plot": pipeline.PLOT_CODE,
        "train": pipeline.TRAIN_CODE,
    }

    def keys() -> dict[str, str]:
        return {k: source_fingerprint(*m, package_root=package) for k, m in stages.items()}

    def generate_key(code_version: str) -> str | None:
        inputs = {"seed": 0, "catalog_hash": "c", "code_version": code_version}
        return StableInputs().compute_key(None, inputs, None)

    before = keys()
    assert before == {k: source_fingerprint(*m) for k, m in stages.items()}  # the copy is alike
    taxonomy = package / "catalogs" / "taxonomy.py"
    source = taxonomy.read_text()
    assert '"burgundy"' in source
    taxonomy.write_text(source.replace('"burgundy"', '"maroon"', 1))
    edited = keys()
    changed = {k for k in stages if edited[k] != before[k]}
    assert {"generate", "curriculum", "train"} <= changed  # all of them reach the taxonomy
    assert {"validate", "plot"}.isdisjoint(changed)
    assert generate_key(edited["generate"]) != generate_key(before["generate"])

    # the scenario modules, which the registry imports by discovery, are the generator's code
    cancel = package / "generators" / "scenarios" / "cancel.py"
    cancel.write_text(cancel.read_text() + "\nCANCEL_NOTE = 1\n")
    after_cancel = keys()
    assert {k for k in stages if after_cancel[k] != edited[k]} == {"generate"}
    edited = after_cancel

    plots = package / "flows" / "plots.py"
    plots.write_text(plots.read_text() + "\nPLOT_NOTE = 1\n")
    after_plots = keys()
    assert {k for k in stages if after_plots[k] != edited[k]} == {"plot"}


def test_missing_scenarios_are_named_with_their_reason() -> None:
    """`missing_scenarios` (issue 31): a scenario the store has no task of, for this catalog,
    is named: no share of data.tasks, no difficulty in the step band, or all rejected."""
    from ecomrlve.flows.pipeline import missing_scenarios
    from ecomrlve.generators.generate import Chunk
    from ecomrlve.testing.env_tasks import sql_rows
    from ecomrlve.testing.training import train_store_dir

    data = train_store_dir()
    [(catalog_hash,)] = sql_rows(data, "SELECT DISTINCT catalog_hash FROM tasks")
    present = sorted(s for (s,) in sql_rows(data, "SELECT DISTINCT scenario FROM tasks"))
    asked = [*present, "no_share", "off_band", "rejected"]
    chunks = [Chunk(s, 0, 0, 4) for s in [*present, "rejected"]]
    missing = missing_scenarios(
        str(data), catalog_hash, asked, chunks, ["off_band/d0", "off_band/d1"], 8
    )
    assert missing == {
        "no_share": "no share of data.tasks=8 (fewer tasks than scenarios x difficulties)",
        "off_band": "no difficulty of the range reaches the step band",
        "rejected": "all 4 generated tasks were rejected",
    }
    assert missing_scenarios(str(data), "another-catalog", present[:1], [], [], 8) == {
        present[0]: "no share of data.tasks=8 (fewer tasks than scenarios x difficulties)"
    }


def test_code_modules_retries_only_the_spurious_ast_depth_error(monkeypatch) -> None:
    """CPython 3.11's "AST constructor recursion depth mismatch" (another thread building an AST
    at the same moment) is retried; any other SystemError is not."""
    import ast

    from ecomrlve.flows import stages

    real_parse, failures = ast.parse, {"left": 1}

    def flaky(source, *args, **kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise SystemError("AST constructor recursion depth mismatch (before=132, after=181)")
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", flaky)
    assert "ecomrlve.config" in stages.code_modules("ecomrlve.flows.params")
    assert failures["left"] == 0  # the error was raised, and retried

    def broken(source, *args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        stages.code_modules("ecomrlve.flows.params")


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("command", [("pipeline",), ("curriculum", "regenerate")])
def test_an_unreachable_dask_scheduler_is_one_line_before_any_flow(tmp_path, command) -> None:
    """An unreachable scheduler used to print four tracebacks (Dask's, the task's, the flow's,
    the CLI's) after Dask's 30 s of retries: one line now, before the store is touched."""
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    address = f"tcp://127.0.0.1:{_closed_port()}"
    data = tmp_path / "data"
    args = [*command, "--data", str(data), "--task-runner", "dask", "--dask-address", address]
    if command[0] == "curriculum":
        args += ["--name", "hard", "--min-steps", "6", "--max-steps", "8", "--tasks", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Dask scheduler at {address}" in lines[0]
