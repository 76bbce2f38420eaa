"""`training` in blocks (algorithm, rollout, sft, eval, checkpoint, scale): every flat key that
loaded before still loads into the same value, nested and flat forms give equal configs, and the
same setting given both ways with different values is a one-line error naming both."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.config import (
    FLAT_TRAINING_KEYS,
    ConfigError,
    config_from_dict,
    load_config,
)
from ecomrlve.generators.registry import scenario_names

ROOT = Path(__file__).resolve().parents[1]

# Valid values for a few flat keys of every block (each alone is a valid config).
FLAT_VALUES = {
    "learning_rate": st.floats(1e-7, 1e-2),
    "lr_warmup_steps": st.integers(0, 50),
    "total_steps": st.integers(0, 500),
    "ppo_epochs": st.integers(1, 8),
    "clip_ratio_low": st.floats(0.05, 0.2),  # GRPO presets clip_ratio_high 0.2
    "dynamic_sampling_metric": st.sampled_from(["success", "reward"]),
    "loss_agg_mode": st.sampled_from(["token-mean", "seq-mean-token-mean"]),
    "group_size": st.integers(2, 64),
    "rollout_engine": st.sampled_from(["auto", "hf", "vllm"]),
    "rollout_concurrency": st.integers(1, 256),
    "adaptive_threshold": st.floats(0.1, 1.0),
    "tool_curriculum": st.booleans(),
    "sft_steps": st.none() | st.integers(0, 1000),
    "sft_lr_schedule": st.sampled_from(["constant", "cosine"]),
    "sft_batch_size": st.integers(1, 64),
    "eval_temperature": st.none() | st.floats(0.0, 2.0),
    "eval_tasks": st.integers(0, 100),
    "keep_checkpoints": st.integers(1, 10),
    "resume": st.booleans(),
    "gradient_checkpointing": st.none() | st.booleans(),
    "max_tokens_per_micro_batch": st.none() | st.integers(1, 1 << 16),
    "seed": st.integers(0, 2**31),
}


def _nested(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        if key not in FLAT_TRAINING_KEYS:
            out[key] = value
            continue
        block, field = FLAT_TRAINING_KEYS[key]
        out.setdefault(block, {})[field] = value
    return out


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({}, optional=FLAT_VALUES), st.sampled_from(["dapo", "grpo"]))
def test_flat_and_nested_forms_give_equal_configs(flat: dict, algorithm: str) -> None:
    flat = {"algorithm": algorithm, **flat}
    a = config_from_dict({"training": flat})
    b = config_from_dict({"training": _nested(flat)})
    assert a == b
    # and half flat, half nested: the same again
    keys = sorted(flat)  # "algorithm" lands among the nested half (a flat one would shadow it)
    keys.remove("algorithm")
    keys.insert(0, "algorithm")
    mixed = {**_nested({k: flat[k] for k in keys[::2]}), **{k: flat[k] for k in keys[1::2]}}
    assert config_from_dict({"training": mixed}) == a
    # a dump (what a run folder stores) loads back equal
    assert config_from_dict(a.model_dump(mode="json")) == a


def test_each_flat_key_lands_in_its_block() -> None:
    cfg = config_from_dict(
        {
            "training": {
                "sft_steps": 7,
                "eval_temperature": 0.0,
                "rollout_engine": "hf",
                "keep_checkpoints": 5,
                "lora_rank": 4,
                "lr_warmup_steps": 3,
                "algorithm": "DAPO",
            }
        }
    ).training
    assert cfg.sft.steps == 7 and cfg.eval.temperature == 0.0 and cfg.rollout.engine == "hf"
    assert cfg.checkpoint.keep == 5 and cfg.scale.lora_rank == 4
    assert cfg.algorithm.warmup_steps == 3 and cfg.algorithm.name == "dapo"


@pytest.mark.parametrize(
    ("training", "names"),
    [
        ({"sft_steps": 3, "sft": {"steps": 4}}, ("training.sft_steps", "training.sft.steps")),
        (
            {"eval_temperature": 0.0, "eval": {"temperature": 1.0}},
            ("training.eval_temperature", "training.eval.temperature"),
        ),
        (
            {"rollout_engine": "hf", "rollout": {"engine": "vllm"}},
            ("training.rollout_engine", "training.rollout.engine"),
        ),
        (
            {"batch_size": 8, "rollout": {"prompts_per_step": 4}},  # the article's name
            ("training.prompts_per_step", "training.rollout.prompts_per_step"),
        ),
    ],
)
def test_flat_and_nested_with_different_values_is_one_line_naming_both(training, names) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"training": training})
    message = str(err.value)
    assert "\n" not in message and all(name in message for name in names), message


def test_flat_and_nested_with_the_same_value_load() -> None:
    cfg = config_from_dict({"training": {"sft_steps": 3, "sft": {"steps": 3}}})
    assert cfg.training.sft.steps == 3


def test_grpo_presets_fill_only_what_the_config_leaves_unset() -> None:
    for training in (
        {"algorithm": "grpo", "clip_ratio_high": 0.28},
        {"algorithm": {"name": "grpo", "clip_ratio_high": 0.28}},
        {"algorithm": {"name": "GRPO"}, "clip_ratio_high": 0.28},
    ):
        algorithm = config_from_dict({"training": training}).training.algorithm
        assert algorithm.name == "grpo" and algorithm.clip_ratio_high == 0.28, training
        assert not algorithm.dynamic_sampling and algorithm.loss_agg_mode == "seq-mean-token-mean"
    assert config_from_dict({}).training.algorithm.dynamic_sampling  # dapo keeps its defaults


def _load_quietly(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_config(path)


def test_a_run_folder_config_written_before_the_blocks_loads_and_resumes(tmp_path: Path) -> None:
    """`OUT/config.yaml` of a run written with flat training keys: loads into the article's
    values, and with `resume: true` (how a run folder is resumed) too."""
    old = ROOT / "tests" / "data" / "run_config_flat.yaml"
    article = _load_quietly(ROOT / "configs" / "ecom_rlve.yaml")
    loaded = _load_quietly(old).model_dump()
    # (a run written before scenarios registered themselves names all nine; the article's
    # config names none: every registered scenario)
    assert loaded["env"].pop("scenarios") == list(scenario_names())
    expected = article.model_dump()
    assert expected["env"].pop("scenarios") == []
    assert loaded == expected
    raw = yaml.safe_load(old.read_text())
    raw["training"]["resume"] = True
    cfg = config_from_dict(raw)
    assert cfg.training.checkpoint.resume and cfg.training.algorithm.total_steps == 50


def test_pipeline_overrides_may_name_flat_training_keys() -> None:
    from ecomrlve.flows.params import PipelineParams, with_overrides

    params = PipelineParams(data_dir="data")
    changed = with_overrides(params, {"config": {"training": {"total_steps": 3, "sft_steps": 2}}})
    training = changed.config.training
    assert training.algorithm.total_steps == 3 and training.sft.steps == 2
    assert training.rollout == params.config.training.rollout  # the rest kept
