"""The seed article's config and command: its YAML loads verbatim and means what it says, and
`python train.py` / `ecomrlve train --dry-run` work from the repo root."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.config import config_from_dict
from ecomrlve.train.run import data_dir_for, offered_tools

ROOT = Path(__file__).resolve().parents[1]
ARTICLE_YAML = """\
env: {name: EcomEnv, catalog_path: ./data/catalog.json, max_steps: 10,
      reward_weights: {success: 1.0, step_bonus: 0.1, efficiency: 0.2}}
agent: {model: Qwen/Qwen3-8B, tokenizer: Qwen/Qwen3-8B, max_new_tokens: 256,
        tools: [search, add_to_cart, remove_from_cart, view_cart, checkout]}
training: {algorithm: DAPO, learning_rate: 1e-5, batch_size: 32, num_rollout_steps: 1024,
           epochs_per_iteration: 4, clip_epsilon: 0.2, critic_lr: 3e-5, gamma: 0.99}
"""
ARTICLE_TOOLS = ["search", "add_to_cart", "remove_from_cart", "view_cart", "checkout"]


def test_the_article_yaml_loads_verbatim_with_its_meaning(caplog) -> None:
    with pytest.warns(UserWarning) as record:
        cfg = config_from_dict(yaml.safe_load(ARTICLE_YAML))
    warned = " ".join(str(w.message) for w in record)
    assert "critic_lr is ignored" in warned and "gamma is ignored" in warned
    t = cfg.training
    assert t.algorithm.name == "dapo" and t.algorithm.learning_rate == pytest.approx(1e-5)
    assert (t.rollout.prompts_per_step, t.rollout.group_size) == (32, 32)  # 1024 episodes per step
    assert t.algorithm.ppo_epochs == 4
    assert (t.algorithm.clip_ratio_low, t.algorithm.clip_ratio_high) == (0.2, 0.28)
    assert cfg.env.name == "EcomEnv" and cfg.agent.tokenizer == "Qwen/Qwen3-8B"
    assert [s["function"]["name"] for s in offered_tools(cfg.agent.tools)] == ARTICLE_TOOLS
    assert data_dir_for(cfg, None) == Path("data")  # ./data/catalog.json selects ./data
    assert data_dir_for(cfg, Path("elsewhere")) == Path("elsewhere")  # --data wins


def test_a_catalog_path_inside_a_data_folder_selects_that_folder(tmp_path) -> None:
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "products.parquet").write_bytes(b"")
    cfg = config_from_dict(
        {"env": {"catalog_path": str(tmp_path / "catalog" / "products.parquet")}}
    )
    assert data_dir_for(cfg, None) == tmp_path


def test_unknown_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown tool"):
        offered_tools(["search", "teleport"])


def test_the_shipped_article_config_keeps_the_articles_keys() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shipped = yaml.safe_load((ROOT / "configs" / "ecom_rlve.yaml").read_text())
        article = yaml.safe_load(ARTICLE_YAML)
        for block, values in article.items():
            for key, value in values.items():
                assert shipped[block][key] == value, (block, key)
        config_from_dict(shipped)


@pytest.mark.parametrize(
    ("gpus", "memory", "code", "expected"),
    [
        (8, 80, 0, "fits: peak"),
        (1, 80, 2, "would fit: training.scale.lora_rank: 64 on 1 GPU"),
    ],
)
def test_dry_run_plans_memory_before_loading(gpus, memory, code, expected) -> None:
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            str(ROOT / "configs" / "ecom_rlve.yaml"),
            "--dry-run",
            "--gpus",
            str(gpus),
            "--gpu-memory",
            str(memory),
        ],
    )
    assert result.exit_code == code, result.output
    assert expected in result.output
    assert "optimizer (AdamW)" in result.output and "vLLM share" in result.output
    if code == 2:
        assert "--gpus 4" in result.output


@pytest.mark.slow  # a subprocess
def test_train_py_forwards_to_ecomrlve_train() -> None:
    done = subprocess.run(
        [sys.executable, "train.py", "--config", "configs/ecom_rlve.yaml", "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2  # a full Qwen3-8B fine-tune on one 80 GB GPU does not fit
    assert done.stderr.strip().splitlines()[-1].startswith("error: does not fit")
    assert "Traceback" not in done.stderr


def test_tasks_that_need_tools_not_offered_are_counted_in_a_warning(caplog) -> None:
    import logging

    from ecomrlve.testing.training import train_store_dir
    from ecomrlve.train.curriculum import read_store_tasks
    from ecomrlve.train.run import _warn_unsolvable

    frame = read_store_tasks(train_store_dir())
    with caplog.at_level(logging.WARNING, logger="ecomrlve.train.run"):
        _warn_unsolvable(frame, {"search"})
    assert "cannot succeed" in caplog.text and f"of {frame.height} tasks" in caplog.text


def _dry_run(config: Path, gpus: int = 8, memory: float = 80) -> tuple[int, str]:
    args = ["train", "--config", str(config), "--dry-run", "--gpus", str(gpus)]
    result = CliRunner().invoke(app, [*args, "--gpu-memory", str(memory)])
    return result.exit_code, result.output


def test_the_article_yaml_verbatim_plans_on_8_x_80_gb(tmp_path) -> None:
    """Neither memory setting is in the article's YAML: the planner picks ones that fit (no
    recomputation, one whole 8192-token episode per micro-batch) and the dry-run says so."""
    config = tmp_path / "article.yaml"
    config.write_text(ARTICLE_YAML)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, output = _dry_run(config)
    assert code == 0, output
    assert "fits: peak" in output and "activations at 8192 tokens" in output
    assert (
        "planner chose gradient_checkpointing: false, max_tokens_per_micro_batch: 8192 "
        "(not set in the config)"
    ) in " ".join(output.split())


def test_longer_episodes_make_the_planner_turn_on_gradient_checkpointing(tmp_path) -> None:
    raw = yaml.safe_load(ARTICLE_YAML)
    raw["agent"]["max_episode_tokens"] = 16384  # one micro-batch holds a whole episode
    config = tmp_path / "long.yaml"
    config.write_text(yaml.safe_dump(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, output = _dry_run(config)
    assert code == 0, output
    assert "gradient checkpointing" in output and "activations at 16384 tokens" in output
    assert "gradient_checkpointing: true, max_tokens_per_micro_batch: 16384" in " ".join(
        output.split()
    )


def test_an_explicit_setting_that_cannot_fit_is_refused_naming_what_would(tmp_path) -> None:
    raw = yaml.safe_load(ARTICLE_YAML)
    raw["agent"]["max_episode_tokens"] = 16384
    raw["training"]["gradient_checkpointing"] = False  # the user's word stands
    config = tmp_path / "no_recompute.yaml"
    config.write_text(yaml.safe_dump(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, output = _dry_run(config)
    assert code == 2
    last = " ".join(output.split()).split("error: ")[-1]
    assert last.startswith("does not fit: peak 104.8 GiB of 74.5 GiB per GPU; would fit: ")
    assert "training.scale.gradient_checkpointing: true" in last
    assert "planner chose gradient_checkpointing" not in output
    # an explicit micro-batch budget stays too: the planner only adds checkpointing
    raw["training"].pop("gradient_checkpointing")
    raw["training"]["max_tokens_per_micro_batch"] = 16384
    config.write_text(yaml.safe_dump(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, output = _dry_run(config)
    flat = " ".join(output.split())
    assert code == 0 and "planner chose gradient_checkpointing: true (not set" in flat


def test_the_docs_figure_for_the_shipped_config_is_what_the_dry_run_prints() -> None:
    """A new user ran the dry-run on `configs/ecom_rlve.yaml` and got 39.0 GiB where the README
    said 63.0 GiB (the seed article's YAML): the training guide names the shipped config's
    figure."""
    import re

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, output = _dry_run(ROOT / "configs" / "ecom_rlve.yaml")
    assert code == 0, output
    peak = re.search(r"fits: peak ([\d.]+) GiB", output)
    assert peak is not None, output
    guide = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert f"`configs/ecom_rlve.yaml` plans {peak.group(1)} GiB per GPU on 8 x 80 GB" in guide
