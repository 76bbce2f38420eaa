"""Config loading: the article's config, ignored DAPO-irrelevant keys, unknown-key errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ecomrlve.config import ConfigError, EcomConfig, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_article_config_loads_with_warning_naming_ignored_keys() -> None:
    with pytest.warns(UserWarning) as record:
        cfg = load_config(ROOT / "configs" / "ecom_rlve.yaml")
    messages = " ".join(str(w.message) for w in record)
    assert "critic_lr" in messages and "gamma" in messages
    assert cfg.ignored_keys == ["training.critic_lr", "training.gamma"]
    assert cfg.agent.model == "Qwen/Qwen3-8B"
    assert cfg.env.max_steps == 10
    w = cfg.env.reward_weights
    assert (w.success, w.step_bonus, w.efficiency) == (1.0, 0.1, 0.2)
    algorithm = cfg.training.algorithm
    assert (algorithm.clip_ratio_low, algorithm.clip_ratio_high) == (0.2, 0.28)
    assert cfg.training.rollout.group_size == 32
    assert algorithm.loss_agg_mode == "token-mean" and algorithm.dynamic_sampling
    assert algorithm.overlong_shaping and algorithm.kl_coef == 0.0


def test_every_shipped_config_loads() -> None:
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert isinstance(load_config(path), EcomConfig), path


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"training": {"learning_rte": 1e-6}}, "unknown key 'training.learning_rte'"),
        ({"envv": {}}, "unknown key 'envv'"),
        ({"env": {"max_steps": 0}}, "env.max_steps"),
        ({"training": {"clip_ratio_low": 0.3, "clip_ratio_high": 0.2}}, "clip_ratio_high"),
        ({"env": {"scenarios": ["Cart!"]}}, "not a scenario name"),
        ({"data": {"products": -5}}, "data.products"),
        ({"data": {"events_from": 12}}, "data.events_from: .*less than or equal to 11"),
        ({"data": {"events_from": -1}}, "data.events_from"),
        ({"data": {"events_from": "8"}}, "data.events_from: .*valid integer"),
        ({"data": {"events_from": True}}, "data.events_from"),
        ([1, 2], "mapping"),
    ],
)
def test_bad_configs_name_the_problem(raw, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict(raw)


def test_events_from_defaults_to_8_and_null_or_11_turns_events_off() -> None:
    assert EcomConfig().data.events_from == 8 and EcomConfig().data.events_threshold == 8
    assert config_from_dict({"data": {"events_from": None}}).data.events_threshold == 11
    assert config_from_dict({"data": {"events_from": 11}}).data.events_threshold == 11
    assert config_from_dict({"data": {"events_from": 0}}).data.events_threshold == 0


def test_a_bad_events_from_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"data": {"events_from": 12}}, source="run.yaml")
    assert str(err.value) == "run.yaml: data.events_from: Input should be less than or equal to 11"


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("env: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
