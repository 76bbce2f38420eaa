"""The run in the Prefect UI (issue 31): the CLI names the flow run and links its page, a
scenario the config cannot give tasks to is named in the summary and the log, and a training
run's curves and per-scenario held-out table become artifacts."""

from __future__ import annotations

import json
import logging

import pytest
import yaml
from typer.testing import CliRunner

from ecomrlve.cli import app

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

# 8 tasks over 9 scenarios: one scenario gets no share (the "bundle: 8 of 9" report)
EIGHT_TASKS = {
    "data": {"products": 2_000, "seed": 3, "tasks": 8, "difficulty": [0, 0], "shard_size": 32}
}


@pytest.fixture(scope="module")
def eight_task_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flows-ui")
    config = folder / "eight.yaml"
    config.write_text(yaml.safe_dump(EIGHT_TASKS))
    data = folder / "data"
    result = CliRunner().invoke(
        app, ["pipeline", "--config", str(config), "--data", str(data), "--skip-train"]
    )
    return data, result


def test_cli_names_the_flow_run_and_links_it(eight_task_run) -> None:
    _, result = eight_task_run
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("flow run"))
    name = line.split()[2]
    assert name and name != "None"
    # the harness's server is a configured API (PREFECT_API_URL): the run has a UI page
    assert "/flow-runs/flow-run/" in line and line.split()[-1].startswith("http")


def test_a_scenario_without_tasks_is_named_not_silent(eight_task_run) -> None:
    from ecomrlve.generators.registry import scenario_names
    from ecomrlve.testing.env_tasks import sql_rows

    data, result = eight_task_run
    present = {s for (s,) in sql_rows(data, "SELECT DISTINCT scenario FROM tasks")}
    [missing] = sorted(set(scenario_names()) - present)
    assert f"scenario   {missing} has no tasks: no share of data.tasks=8" in result.output


def test_missing_scenarios_are_logged_by_the_flow(tmp_path, caplog) -> None:
    from ecomrlve.config import config_from_dict
    from ecomrlve.flows.params import PipelineParams
    from ecomrlve.flows.pipeline import pipeline

    caplog.set_level(logging.WARNING)
    params = PipelineParams(
        data_dir=str(tmp_path / "data"), config=config_from_dict(EIGHT_TASKS), skip_train=True
    )
    summary = pipeline(params)
    [(scenario, why)] = summary.missing_scenarios.items()
    assert "no share of data.tasks=8" in why
    assert f"scenario {scenario} has no tasks" in caplog.text
    assert summary.flow_run


def test_training_curves_and_scenario_table_become_artifacts(eight_task_run, tmp_path) -> None:
    """The artifact stage of a pipeline that trained: its PNGs embedded, its eval_results
    per stage x scenario as a table (a finished run's outputs, written here as training
    writes them)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from prefect import flow
    from prefect.artifacts import Artifact

    from ecomrlve import store
    from ecomrlve.flows.artifacts import (
        EVAL_SCENARIOS_KEY,
        TRAINING_PLOTS_KEY,
        publish_artifacts_stage,
    )
    from ecomrlve.train import results

    data, _ = eight_task_run
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.1, 0.4])
    reward_png = store.write_png(fig, tmp_path / "plots" / "reward.png")
    plt.close(fig)
    run_id = f"run-artifacts-{tmp_path.name}"
    rows = [
        {"run_id": run_id, "stage": stage, "scenario": scenario, "difficulty": 0,
         "step_band": "1-2", "tasks": 2, "samples": 2, "k": 2, "pass_at_1": p,
         "pass_hat_k": p, "reward_mean": p}
        for stage, scenario, p in [("base", "cart", 0.0), ("final", "cart", 0.5),
                                   ("final", "policy", 1.0)]
    ]  # fmt: skip
    results.append(data, "eval_results", rows, results.EVAL_SCHEMA)
    train = {"run_id": run_id, "plots": [str(reward_png)], "held_out": {}}
    curriculum = next((data / "curricula").iterdir())

    @flow(name="artifacts-check")
    def publish() -> list[str]:
        return publish_artifacts_stage.fn(str(curriculum), [], train, str(data))

    keys = publish()
    assert {TRAINING_PLOTS_KEY, EVAL_SCENARIOS_KEY} <= set(keys)
    plots = Artifact.get(TRAINING_PLOTS_KEY)
    assert run_id in plots.data and "data:image/png;base64," in plots.data
    table = Artifact.get(EVAL_SCENARIOS_KEY)
    assert run_id in table.description
    stored = json.loads(table.data)
    assert {(r["stage"], r["scenario"], r["pass@1"]) for r in stored} == {
        ("base", "cart", 0.0),
        ("final", "cart", 0.5),
        ("final", "policy", 1.0),
    }


def test_no_plots_no_rows_no_training_artifacts(eight_task_run) -> None:
    from ecomrlve.flows.artifacts import publish_training_artifacts

    data, _ = eight_task_run
    assert publish_training_artifacts(str(data), {"run_id": "never-ran", "plots": []}) == []


def test_training_progress_shows_as_a_prefect_progress_artifact() -> None:
    """The train stage's events reach Prefect's UI: a progress artifact whose percentage and
    description follow the run (phase, step i/N, metrics)."""
    from prefect import flow
    from prefect.artifacts import Artifact

    from ecomrlve.flows.progress import ProgressArtifact
    from ecomrlve.progress import ProgressEvent

    key = "train-progress-check"

    @flow(name="progress-check")
    def train_like() -> None:
        artifact = ProgressArtifact(key, every_s=0.0)
        artifact(ProgressEvent("sft", 1, 4, "step", {"loss": 2.0}, overall=0.1))
        artifact(ProgressEvent("dapo", 3, 4, "step", {"reward": 0.5}, overall=0.75))

    train_like()
    shown = Artifact.get(key)
    assert shown.type == "progress" and float(shown.data) == 75.0
    assert shown.description.startswith("dapo step 3/4, reward 0.500")
