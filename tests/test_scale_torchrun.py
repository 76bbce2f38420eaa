"""`torchrun --nproc_per_node 2 -m ecomrlve train` on gloo against one process.

The two ranks are started as the pipeline's train stage starts them (`train_with_torchrun`, for
`training.scale.gpus: 2`), which runs that very command.

The same tiny run (SFT, then two DAPO steps with PPO mini-batches), written with the article's
training keys, once as a plain `ecomrlve train` and once as two FSDP2 ranks: each rank plays
half the groups (every episode samples from its own seed) and trains on them, token counts
are global, rank 0 writes. Both must log the same losses and end with the same weights.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest
import torch
import yaml
from safetensors.torch import load_file

from ecomrlve.config import config_from_dict
from ecomrlve.testing.training import run_offline, train_store_dir
from ecomrlve.train.run import train_with_torchrun

pytestmark = pytest.mark.slow  # torchrun subprocesses


def _config(data: Path) -> dict:
    return {
        "env": {"name": "EcomEnv", "catalog_path": str(data / "catalog.json"), "max_steps": 3},
        "agent": {"model": "tiny-qwen3", "max_new_tokens": 24, "max_episode_tokens": 1536},
        "training": {
            "algorithm": "DAPO",
            "batch_size": 4,
            "num_rollout_steps": 8,  # 4 prompts x 2 samples
            "epochs_per_iteration": 2,
            "clip_epsilon": 0.2,
            "ppo_mini_batch_size": 2,
            "max_tokens_per_micro_batch": 2048,
            "mini_batch_size": 2,
            "total_steps": 2,
            "learning_rate": 1e-3,
            "weight_decay": 0.0,
            "dynamic_sampling": False,
            "adaptive_difficulty": False,
            "overlong_buffer": 256,
            "sft_epochs": 1,
            "sft_batch_size": 36,
            "sft_learning_rate": 3e-3,
            "eval_tasks": 0,
            "save_every": 100,
            "seed": 2,
        },
    }


def _train(
    launcher: list[str], config: Path, output: Path, *more: str, timeout: float = 400
) -> None:
    """`ecomrlve train` under `launcher` (`timeout`: a hang guard, not a timing check)."""
    run_offline(
        [*launcher, "-m", "ecomrlve", "train", "--config", str(config), "--output", str(output),
         *more],
        timeout=timeout,
    )  # fmt: skip


def _run_rows(data: Path, output: Path, sql: str) -> list[tuple]:
    """`sql` on the store at `data`, its one `?` the id of the run that wrote `output`."""
    run_id = json.loads((output / "summary.json").read_text())["run_id"]
    with duckdb.connect(str(data / "ecomrlve.duckdb"), read_only=True) as con:
        return con.execute(sql, [run_id]).fetchall()


def _steps(data: Path, output: Path) -> list[dict]:
    rows = _run_rows(
        data,
        output,
        "SELECT step, loss, sequences_trained, clip_fraction FROM train_steps "
        "WHERE run_id = ? ORDER BY step",
    )
    return [dict(zip(("step", "loss", "sequences", "clip"), r, strict=True)) for r in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    data = train_store_dir()
    root = tmp_path_factory.mktemp("torchrun")
    config = root / "tiny_article.yaml"
    config.write_text(yaml.safe_dump(_config(data)))
    single, ranks = root / "single", root / "ranks"
    _train([sys.executable], config, single)  # also builds the tiny model cache
    # two ranks the way the pipeline's train stage starts them (training.scale.gpus: 2)
    cfg = config_from_dict(_config(data))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        patch.delenv("WORLD_SIZE", raising=False)
        summary = train_with_torchrun(cfg, data, ranks, None, gpus=2)
    assert summary["rl_steps"] == 2 and summary["sft_steps"] == 2
    return data, single, ranks


def test_two_gloo_ranks_log_the_losses_of_one_process(runs):
    data, single, ranks = runs
    one, two = _steps(data, single), _steps(data, ranks)
    assert [s["step"] for s in one] == [s["step"] for s in two] == [1, 2]
    for a, b in zip(one, two, strict=True):
        assert a["sequences"] == b["sequences"] == 8
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4, abs=1e-6)
        assert b["clip"] == pytest.approx(a["clip"], abs=1e-6)


def test_two_gloo_ranks_end_with_the_weights_of_one_process(runs):
    _, single, ranks = runs
    one = load_file(single / "model" / "model.safetensors")
    two = load_file(ranks / "model" / "model.safetensors")
    assert one.keys() == two.keys()
    # fp tolerance: summed reduce-scatter vs one backward. AdamW moves an element by up to ~lr
    # per update whatever the size of its gradient, so an element whose gradient is ~0 may step
    # differently on the two runs (its last bits differ): a handful of elements can be off by
    # a sizeable part of lr (2.1e-4 seen at lr 1e-3), so the test bounds how many differ, and
    # by no more than a few updates' worth; a wrong reduction would move most of them
    gap = torch.cat([(two[n] - one[n]).abs().flatten() for n in one])
    assert float(gap.mean()) < 1e-6
    assert int((gap > 1e-5).sum()) <= max(10, gap.numel() // 10_000)
    assert float(gap.max()) < 1e-2
    assert not (ranks / "summary.json.tmp").exists()


def _unequal_turns_config(data: Path) -> dict:
    """SFT long enough that the policy makes tool calls; a small episode token budget then ends
    episodes after as many turns as their tool responses leave room for (search results are
    long, an order list short), so the two ranks' shares of a step need different numbers of
    `generate` rounds. (With a turn limit that every episode reaches, the ranks stay equal.)"""
    return {
        "env": {"max_steps": 10},
        "agent": {"model": "tiny-qwen3", "max_new_tokens": 48, "max_episode_tokens": 768},
        "training": {
            "total_steps": 3,
            "prompts_per_step": 4,
            "group_size": 2,
            "mini_batch_size": 4,
            "max_tokens_per_micro_batch": 4096,
            "learning_rate": 1e-4,
            "weight_decay": 0.0,
            "dynamic_sampling": False,
            "adaptive_difficulty": False,
            "overlong_buffer": 256,
            "sft_steps": 60,
            "sft_batch_size": 16,
            "sft_learning_rate": 3e-3,
            "eval_tasks": 0,
            "save_every": 100,
            "seed": 4,
        },
    }


@pytest.mark.slow
def test_two_ranks_whose_episodes_take_different_turns_finish(tmp_path):
    """Ranks play their own groups; when one rank's episodes need more `generate` rounds than
    the other's, neither may wait for the other inside generation (transformers syncs every
    decoding step across ranks for an FSDP-managed module unless `synced_gpus=False`)."""
    data = train_store_dir()
    config = tmp_path / "unequal.yaml"
    config.write_text(yaml.safe_dump(_unequal_turns_config(data)))
    output = tmp_path / "ranks"
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",
    ]
    # a hang guard, not a timing check: a deadlocked pair of ranks never returns
    _train(torchrun, config, output, "--data", str(data), timeout=900)
    rounds = _run_rows(
        data,
        output,
        # rank r plays the groups g with g % 2 == r; its generate rounds = its longest episode
        'SELECT step, max(steps) FILTER ("group" % 2 = 0), max(steps) FILTER ("group" % 2 = 1)'
        " FROM train_rollouts WHERE run_id = ? GROUP BY step ORDER BY step",
    )
    assert [r[0] for r in rounds] == [1, 2, 3]
    assert any(r[1] != r[2] for r in rounds), rounds  # the case this test is about happened
