"""End to end through the CLI: a tiny SFT + DAPO run, its tables and plots, `ecomrlve eval`,
and the article's config stopping with a clear error when Qwen3-8B is not on the machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.testing.env_tasks import sql_rows
from ecomrlve.testing.training import TINY_RUN, train_store_dir


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, runner):
    data = train_store_dir()
    folder = tmp_path_factory.mktemp("tiny_run")
    config = folder / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY_RUN))
    output = folder / "run"
    result = runner.invoke(
        app, ["train", "--config", str(config), "--output", str(output), "--data", str(data)]
    )
    return data, output, result


@pytest.mark.slow  # a whole tiny training run (its fixture)
def test_tiny_run_writes_model_tables_and_plots(tiny_run):
    data, output, result = tiny_run
    assert result.exit_code == 0, result.output
    assert "held-out success" in result.output
    assert f"report     {output / 'report.html'}" in result.output  # `ecomrlve view`'s page
    assert 'id="held-out-table"' in (output / "report.html").read_text(encoding="utf-8")
    summary = json.loads((output / "summary.json").read_text())
    assert summary["rl_steps"] == 2 and summary["sft_steps"] >= 1
    assert set(summary["held_out"]) == {"base", "sft", "final"}
    run_id = summary["run_id"]
    for name in ("reward.png", "success_by_scenario.png", "difficulty_frontier.png"):
        assert (output / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (output / "model" / "config.json").exists()
    state = json.loads((output / "curriculum_state.json").read_text())
    assert state["cursor"] >= 2 and state["adaptive"]["windows"]
    assert yaml.safe_load((output / "config.yaml").read_text())["agent"]["model"] == "tiny-qwen3"

    steps = sql_rows(
        data,
        "SELECT step, groups_sampled, groups_dropped, groups_trained, tokens_per_s, "
        "success_by_scenario FROM train_steps WHERE run_id = ? ORDER BY step",
        [run_id],
    )
    assert [s[0] for s in steps] == [1, 2]
    for _, sampled, dropped, trained, tokens_per_s, by_scenario in steps:
        assert sampled == dropped + trained or trained == 2
        assert tokens_per_s > 0 and isinstance(json.loads(by_scenario), dict)
    rollouts = sql_rows(
        data,
        "SELECT count(*), count(DISTINCT task_id) FROM train_rollouts WHERE run_id = ?",
        [run_id],
    )[0]
    assert rollouts[0] >= 8  # 2 steps x 2 prompts x 2 samples, more with dynamic sampling
    # "which axes does the model fail on": rollouts joined with the tasks view
    by_axis = sql_rows(
        data,
        "SELECT t.n_constraints, avg(r.success::INT) FROM train_rollouts r "
        "JOIN tasks t USING (task_id) WHERE r.run_id = ? GROUP BY ALL",
        [run_id],
    )
    assert by_axis
    stages = sql_rows(
        data, "SELECT DISTINCT stage FROM eval_results WHERE run_id = ? ORDER BY 1", [run_id]
    )
    assert [s[0] for s in stages] == ["base", "final", "sft"]
    runs = sql_rows(data, "SELECT algorithm, steps FROM train_runs WHERE run_id = ?", [run_id])
    assert runs == [("dapo", 2)]


@pytest.mark.slow  # the tiny training run
def test_eval_command_reports_and_stores(tiny_run, runner):
    data, output, _ = tiny_run
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(output / "model"),
            "--where",
            "difficulty = 0",
            "--k",
            "2",
            "--limit",
            "3",
            "--config",  # the run's own settings: short turns keep the test fast
            str(output / "config.yaml"),
            "--data",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "pass^2" in result.output
    # the store is shared with other tests' evals (the endpoint's too): this model's rows only
    rows = sql_rows(
        data,
        "SELECT sum(tasks), max(k), sum(samples) FROM eval_results "
        "WHERE stage = 'eval' AND \"where\" = 'difficulty = 0' AND model = ?",
        [str(output / "model")],
    )
    assert rows == [(3, 2, 6)]  # samples: episodes in the cell (3 tasks x 2)


@pytest.mark.slow  # the tiny training run
@pytest.mark.parametrize(
    "args, message",
    [
        (["--where", "no_such_column = 1"], "cannot select tasks"),
        (["--k", "3", "--samples", "2"], "--k must be"),
        (["--model", "/no/such/folder"], "does not exist"),
    ],
)
def test_eval_bad_input_exits_2(tiny_run, runner, args, message):
    data, output, _ = tiny_run
    base = ["eval", "--model", str(output / "model"), "--data", str(data), "--limit", "1"]
    result = runner.invoke(app, base + args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_config_naming_an_unknown_scenario_stops_before_training(tmp_path, runner):
    """The config checks a name's shape; the command checks it against the scenario registry."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"env": {"scenarios": ["cart", "shopping"]}}))
    output = tmp_path / "run"
    result = runner.invoke(
        app, ["train", "--config", str(config), "--output", str(output), "--data", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "unknown scenario(s) ['shopping']" in result.output
    assert not output.exists()


def test_article_config_without_weights_stops_with_a_clear_error(tmp_path, runner):
    from ecomrlve.train.model import ModelNotFoundError, resolve_model_path

    try:
        resolve_model_path("Qwen/Qwen3-8B")
    except ModelNotFoundError:
        pass
    else:
        pytest.skip("Qwen3-8B is in the local cache here")
    output = tmp_path / "ecom_dapo_v1"
    root = Path(__file__).resolve().parents[1]
    result = runner.invoke(
        app,
        [
            "train",
            "--config",
            str(root / "configs" / "ecom_rlve.yaml"),
            "--output",
            str(output),
            "--data",
            str(train_store_dir()),
        ],
    )
    assert result.exit_code == 2
    assert "hf download Qwen/Qwen3-8B" in result.output
    assert not output.exists()  # nothing written


@pytest.mark.slow  # a whole (one-step) tiny training run
def test_train_on_a_store_takes_the_tasks_its_data_block_describes(tmp_path, runner):
    """`ecomrlve train --data STORE` without a curriculum trains on the tasks the config's
    data block describes (here difficulty 1 of a d0-1 store), as `ecomrlve pipeline` does with
    the same config: nothing at difficulty 0 is trained on or held out."""
    data = train_store_dir()
    raw = {**TINY_RUN, "data": {"difficulty": [1, 1], "max_steps": 3}}
    raw["training"] = {**TINY_RUN["training"], "total_steps": 1, "sft_steps": 1}
    config = tmp_path / "d1.yaml"
    config.write_text(yaml.safe_dump(raw))
    output = tmp_path / "run"
    result = runner.invoke(
        app, ["train", "--config", str(config), "--output", str(output), "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((output / "summary.json").read_text())
    predicate = "difficulty BETWEEN 1 AND 1 AND coalesce(core_steps, min_steps) <= 3"
    assert summary["task_source"] == f"store tasks where {predicate}"
    assert predicate in " ".join(result.output.split())
    (band_tasks,) = sql_rows(data, f"SELECT count(*) FROM tasks WHERE {predicate}")[0]
    (all_tasks,) = sql_rows(data, "SELECT count(*) FROM tasks")[0]
    assert 0 < band_tasks < all_tasks
    assert summary["train_tasks"] + summary["heldout_tasks"] == band_tasks
    played = sql_rows(
        data,
        "SELECT DISTINCT t.difficulty FROM train_rollouts r JOIN tasks t USING (task_id) "
        "WHERE r.run_id = ? UNION SELECT DISTINCT t.difficulty FROM eval_episodes e "
        "JOIN tasks t USING (task_id) WHERE e.run_id = ?",
        [summary["run_id"], summary["run_id"]],
    )
    assert played == [(1,)]


def test_eval_of_a_run_model_uses_the_agent_settings_it_was_trained_with(tmp_path) -> None:
    """`ecomrlve eval --model RUN/model` used the default agent settings: it reads the run's
    config.yaml now (an explicit --config still wins)."""
    from ecomrlve.cli.train import _eval_config

    model = tmp_path / "run" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (tmp_path / "run" / "config.yaml").write_text("agent: {max_new_tokens: 77, top_p: 0.5}\n")
    cfg = _eval_config(str(model), None)
    assert (cfg.agent.max_new_tokens, cfg.agent.top_p) == (77, 0.5)
    explicit = tmp_path / "other.yaml"
    explicit.write_text("agent: {max_new_tokens: 33}\n")
    assert _eval_config(str(model), explicit).agent.max_new_tokens == 33
    assert _eval_config(str(tmp_path / "elsewhere"), None).agent.max_new_tokens != 77
