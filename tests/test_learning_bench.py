"""benchmarks/learning.py's run configs: what each of the study's trainings is told to do (the
trainings themselves are the real `ecomrlve train`, tested elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ecomrlve.config import GRPO_PRESETS, config_from_dict, load_config
from ecomrlve.generators.registry import scenario_names
from ecomrlve.testing.bench import load_script

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "configs" / "tiny_cpu.yaml"


@pytest.fixture(scope="module")
def bench():
    return load_script(ROOT / "benchmarks" / "learning.py")


def test_the_study_keeps_the_recipes_scenarios_unless_asked_for_all_nine(bench) -> None:
    recipe = load_config(RECIPE)
    raw = bench.study_config(RECIPE, sft_budget=1, rl_budget=1, quick=False)
    assert config_from_dict(raw).env.scenarios == recipe.env.scenarios
    assert raw["training"]["algorithm"]["total_steps"] == recipe.training.algorithm.total_steps


def test_the_study_plays_all_nine_scenarios_at_its_budgets(bench) -> None:
    recipe = load_config(RECIPE).training
    raw = bench.study_config(
        RECIPE, sft_budget=0.5, rl_budget=0.25, quick=False, all_scenarios=True
    )
    assert raw["env"]["scenarios"] == list(scenario_names())
    assert raw["data"]["max_steps"] >= bench.BUNDLE_MIN_STEPS
    training = raw["training"]
    assert training["sft"]["steps"] == round(recipe.sft.steps * 0.5)
    assert training["algorithm"]["total_steps"] == round(recipe.algorithm.total_steps * 0.25)


def test_dapo_and_grpo_start_from_the_sft_model_and_differ_only_in_the_algorithm(
    bench, tmp_path
) -> None:
    raw = bench.study_config(RECIPE, sft_budget=1, rl_budget=bench.RL_BUDGET, quick=False)
    model = tmp_path / "runs" / "sft" / "model"
    loaded = {}
    for algorithm in ("dapo", "grpo"):
        path = tmp_path / f"{algorithm}.yaml"
        assert bench.run_config(
            raw,
            path,
            model,
            seed=2,
            algorithm=algorithm,
            eval_before_train=algorithm == "dapo",
            eval_split_seed=0,
            sft_steps=0,
        )
        loaded[algorithm] = load_config(path)
        assert loaded[algorithm].agent.model == str(model)
        assert loaded[algorithm].training.seed == 2
        assert loaded[algorithm].training.sft.steps == 0
        # seed 2 keeps the SFT run's (seed 0's) held-out split
        assert loaded[algorithm].training.eval.split_seed == 0
    dapo, grpo = loaded["dapo"].training, loaded["grpo"].training
    # only DAPO re-measures the SFT model; GRPO's start is the same model at the same seed
    assert dapo.eval.before_train and not grpo.eval.before_train
    assert (dapo.algorithm.name, grpo.algorithm.name) == ("dapo", "grpo")
    for key, value in GRPO_PRESETS.items():
        assert getattr(grpo.algorithm, key) == value
    # the recipe's own algorithm settings hold in both (naming the algorithm once replaced the
    # recipe's whole `algorithm:` block, and the RL runs trained at the defaults)
    recipe = load_config(RECIPE).training.algorithm
    kept = ("learning_rate", "warmup_steps", "ppo_mini_batch_size", "max_num_gen_batches")
    for run in (dapo, grpo):
        assert {k: getattr(run.algorithm, k) for k in kept} == {k: getattr(recipe, k) for k in kept}
        assert run.algorithm.total_steps == round(recipe.total_steps * bench.RL_BUDGET)
    for key in ("clip_ratio_high", "dynamic_sampling", "dynamic_sampling_metric", "loss_agg_mode"):
        assert getattr(dapo.algorithm, key) == getattr(recipe, key)
    # same RL budget, rollout and evaluation
    assert dapo.algorithm.total_steps == grpo.algorithm.total_steps > 0
    assert dapo.rollout == grpo.rollout
    assert (dapo.eval.tasks, dapo.eval.samples) == (grpo.eval.tasks, grpo.eval.samples)
    # writing the same config again reports no change (a rerun reuses the finished run)
    again = bench.run_config(
        raw,
        tmp_path / "grpo.yaml",
        model,
        seed=2,
        algorithm="grpo",
        eval_before_train=False,
        eval_split_seed=0,
        sft_steps=0,
    )
    assert again is False
    assert yaml.safe_load((tmp_path / "grpo.yaml").read_text())["agent"]["model"] == str(model)


def test_the_quick_study_reserves_what_its_small_store_can_spare(bench) -> None:
    raw = bench.study_config(RECIPE, sft_budget=1, rl_budget=1, quick=True)
    cfg = load_config(RECIPE)
    assert cfg.training.rollout.reserved_tasks > raw["data"]["tasks"]  # the recipe's would not fit
    quick = raw["training"]["rollout"]["reserved_tasks"]
    assert 0 < quick == bench.QUICK_RESERVED_TASKS
    assert quick < raw["data"]["tasks"] - raw["training"]["eval"]["tasks"]  # SFT keeps the rest


def test_dapo_runs_at_every_seed_and_thread_count_from_one_sft_model(bench, tmp_path) -> None:
    args = bench.argparse.Namespace(seeds=3, threads=[1, 2], grpo=True)
    sft = bench.Run("sft", 0, tmp_path / "runs" / "sft", bench.DEFAULT_THREADS)
    plans = bench.rl_runs(args, sft)
    names = [run.name for run, _ in plans]
    assert names == [
        *(f"dapo-seed{s}-t{t}" for t in (1, 2) for s in range(3)),
        *(f"grpo-seed{s}-t2" for s in range(3)),
    ]
    assert len({run.output for run, _ in plans}) == len(plans)  # each its own folder
    assert all(run.output.parent == sft.output.parent for run, _ in plans)


def test_the_sft_run_ignores_rl_settings_so_changing_them_reuses_its_model(bench, tmp_path):
    raw = bench.study_config(RECIPE, sft_budget=1, rl_budget=1, quick=False)
    path = tmp_path / "sft.yaml"
    assert bench.sft_run_config(raw, path)
    sft = load_config(path).training
    assert sft.algorithm.total_steps == 0 and sft.seed == 0
    assert sft.sft == load_config(RECIPE).training.sft
    assert sft.rollout.reserved_tasks == load_config(RECIPE).training.rollout.reserved_tasks
    raw["training"]["algorithm"]["learning_rate"] = 1.0e-5
    raw["training"]["rollout"].update(group_size=4, shuffle=True)
    assert bench.sft_run_config(raw, path) is False  # unchanged: the finished run is reused
