"""Asynchronous RL (issue 32): decoupled PPO, bounded staleness, rollout processes.

* the decoupled objective weights stale tokens by pi_proximal / pi_behaviour and leaves out the
  ones above the cap, and is the plain DAPO loss where behaviour = proximal;
* with max_staleness 0 the asynchronous loop (episodes played in a rollout process) computes the
  synchronous loop's losses, weights and curriculum bit for bit, also across a resume;
* with max_staleness 1 every train_rollouts row is at most one version behind, and a batch older
  than that (a pool completing out of order) is dropped, never trained;
* a rollout process never outlives its trainer, even one killed with SIGKILL.
The episodes are the tiny rewardable task of `ecomrlve.testing.training.even_id_play`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ecomrlve
from ecomrlve.config import ConfigError, config_from_dict
from ecomrlve.testing.training import (
    EVEN_TURN_TOKENS,
    even_id_play,
    failing_play,
    outliving,
    running,
    tiny_lm_pair,
    train_store_dir,
)
from ecomrlve.train import dapo
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.curriculum import AdaptiveDifficulty, CurriculumSampler, read_store_tasks
from ecomrlve.train.engines.hf import HFEngine
from ecomrlve.train.loop import train_dapo
from ecomrlve.train.results import ROLLOUT_SCHEMA, STEP_SCHEMA, frame
from ecomrlve.train.rollout_workers import (
    EngineRolloutWorkers,
    PlayedBatch,
    ProcessRolloutWorkers,
    RolloutOrder,
    WorkerSpec,
    usable_cpus,
)

STEPS = 3


# ---------------------------------------------------------------------------------------------
# The decoupled objective
# ---------------------------------------------------------------------------------------------


def _loss_inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    logprobs = (-torch.rand(3, 5, generator=g)).requires_grad_(True)  # (B, T)
    old = logprobs.detach() + 0.1 * torch.randn(3, 5, generator=g)  # (B, T)
    adv = torch.tensor([1.0, -0.5, 2.0])  # (B,)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0]])  # (B, T)
    return logprobs, old, adv, mask


KNOBS = {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "loss_agg_mode": "token-mean"}


def test_decoupled_loss_is_the_plain_loss_where_behaviour_is_proximal():
    logprobs, old, adv, mask = _loss_inputs()
    plain, _ = dapo.policy_loss(logprobs, old, adv, mask, **KNOBS)
    (plain_grad,) = torch.autograd.grad(plain, logprobs)
    same, stats = dapo.policy_loss(
        logprobs, old, adv, mask, **KNOBS, behaviour_logprobs=old.clone(), behaviour_ratio_cap=2.0
    )
    (same_grad,) = torch.autograd.grad(same, logprobs)
    assert torch.equal(plain, same) and torch.equal(plain_grad, same_grad)
    assert stats.behaviour_capped == 0


def test_decoupled_loss_weights_stale_tokens_and_leaves_out_those_above_the_cap():
    logprobs, old, adv, mask = _loss_inputs()
    shift = torch.zeros(3, 5)
    shift[0, 0], shift[1, 2] = 0.5, 3.0  # pi_prox / pi_behav = e^0.5 (kept), e^3 (over the cap)
    behaviour = old - shift
    loss, stats = dapo.policy_loss(
        logprobs, old, adv, mask, **KNOBS, behaviour_logprobs=behaviour, behaviour_ratio_cap=5.0
    )
    ratio = torch.exp(logprobs.detach() - old)
    a = adv[:, None]
    per_token = torch.maximum(-a * ratio, -a * ratio.clamp(0.8, 1.28))
    weight = torch.exp(shift)
    weight[1, 2] = 0.0
    expected = (per_token * weight * mask).sum() / mask.sum()  # the cap keeps the denominator
    assert torch.allclose(loss.detach(), expected)
    assert stats.behaviour_capped == 1
    with pytest.raises(ValueError, match="behaviour_ratio_cap"):
        dapo.policy_loss(logprobs, old, adv, mask, **KNOBS, behaviour_ratio_cap=1.0)


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------


def test_async_keys_load_flat_and_nested_and_unsupported_engines_are_refused():
    flat = config_from_dict({"training": {"async": True, "max_staleness": 1}}).training
    nested = config_from_dict(
        {"training": {"rollout": {"async": True, "max_staleness": 1}}}
    ).training
    assert flat.rollout == nested.rollout
    assert flat.rollout.asynchronous and flat.rollout.max_staleness == 1
    assert config_from_dict({}).training.rollout.max_staleness == 2
    with pytest.raises(ConfigError, match="same setting"):
        config_from_dict({"training": {"async": True, "rollout": {"asynchronous": False}}})
    with pytest.raises(ConfigError, match="engine vllm is not supported: an in-process vLLM"):
        config_from_dict({"training": {"async": True, "rollout_engine": "vllm"}})
    pool = {"rollout_endpoints": ["http://127.0.0.1:1/v1"], "rollout_weights_dir": "w"}
    training = {"async": True, "rollout_engine": "endpoint", **pool}
    assert config_from_dict({"training": training}).training.rollout.asynchronous
    with pytest.raises(ConfigError, match="the pool plays the episodes"):
        config_from_dict({"training": {**training, "rollout_processes": 2}})
    with pytest.raises(ConfigError, match=r"needs rollout\.async"):
        config_from_dict({"training": {"rollout": {"processes": 2}}})
    two = config_from_dict({"training": {"async": True, "rollout_processes": 2}}).training
    assert two.rollout.processes == 2
    with pytest.raises(ConfigError, match="one trainer rank"):
        config_from_dict({"training": {"async": True, "gpus": 2}})


def test_auto_engine_plans_hf_for_async_runs():
    from ecomrlve.train.plan import PlanError, resolve_engines

    cfg = config_from_dict({"training": {"async": True}})
    plan = resolve_engines(cfg, cuda_available=True, world_size=1, vllm_installed=True)
    assert plan.rollout_engine == "hf"
    with pytest.raises(PlanError, match="one trainer rank"):
        resolve_engines(cfg, cuda_available=False, world_size=2)


# ---------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    model, tokenizer = tiny_lm_pair()
    chat = ChatFormat(tokenizer, [])
    tasks = read_store_tasks(train_store_dir()).head(16)
    return model, chat, tasks


def _cfg(steps: int = STEPS, **training):
    return config_from_dict(
        {
            "agent": {"max_new_tokens": EVEN_TURN_TOKENS, "max_episode_tokens": 128},
            "training": {
                "total_steps": steps,
                "prompts_per_step": 4,
                "group_size": 4,
                "ppo_mini_batch_size": 2,
                "ppo_epochs": 2,
                "mini_batch_size": 4,
                "max_tokens_per_micro_batch": 256,
                "learning_rate": 2e-2,
                "weight_decay": 0.0,
                "dynamic_sampling_metric": "reward",
                "overlong_buffer": 16,
                "adaptive_episodes": 4,
                "seed": 1,
                **training,
            },
        }
    )


def _sampler(tasks) -> CurriculumSampler:
    levels = CurriculumSampler.levels_of(tasks)
    adaptive = AdaptiveDifficulty(levels, width=1, threshold=0.3, episodes=4)
    return CurriculumSampler(tasks, seed=0, adaptive=adaptive)


@contextlib.contextmanager
def _trainer_threads():
    """The threads a trainer keeps beside one rollout process, for a synchronous run too:
    CPU matmuls may round differently under another thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, usable_cpus() - 1))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(world, cfg, *, policy=None, checkpoints=None, record=None, play=even_id_play, pool=None):
    """(policy, sampler, result) of the real DAPO loop, asynchronous when `cfg` says so: with a
    rollout process, or with `EngineRolloutWorkers` driving `pool` (a `PoolEngine`)."""
    model, chat, tasks = world
    torch.manual_seed(0)
    policy = policy if policy is not None else copy.deepcopy(model)
    sampler = _sampler(tasks)
    engine = HFEngine(policy, chat.pad_token_id)
    kwargs = {"checkpoints": checkpoints, "record": record}
    if not cfg.training.rollout.asynchronous:
        with _trainer_threads():
            result = train_dapo(
                policy, engine, chat, None, sampler, cfg, play=even_id_play, **kwargs
            )
        return policy, sampler, result
    spec = WorkerSpec(
        model=policy,
        pad_token_id=chat.pad_token_id,
        chat=chat,
        env=cfg.env,
        agent=cfg.agent,
        group_size=cfg.training.rollout.group_size,
        play=play,
        processes=cfg.training.rollout.processes,
    )
    if pool is not None:  # a thread driving an engine of its own, on the trainer's threads
        with _trainer_threads(), EngineRolloutWorkers(spec, pool, holds=0) as workers:
            result = train_dapo(policy, engine, chat, None, sampler, cfg, workers=workers, **kwargs)
        return policy, sampler, result
    with ProcessRolloutWorkers(spec) as workers:
        result = train_dapo(policy, engine, chat, None, sampler, cfg, workers=workers, **kwargs)
    return policy, sampler, result


class PoolEngine(HFEngine):
    """An engine with weights of its own, as a server pool has: they change only by a push,
    and every push is counted (with the step the trainer was at)."""

    def __init__(self, model, pad_token_id: int) -> None:
        super().__init__(copy.deepcopy(model), pad_token_id)
        self.pushes = 0

    def sync_weights(self, policy) -> None:
        super().sync_weights(policy)
        self.pushes += 1


def _same_run(ours, ref) -> None:
    (policy, sampler, result), (ref_policy, ref_sampler, ref_result) = ours, ref
    assert [h["step"] for h in result.history] == [h["step"] for h in ref_result.history]
    for mine, theirs in zip(result.history, ref_result.history, strict=True):
        for key in ("loss", "grad_norm", "reward_mean", "groups_trained", "clip_fraction"):
            assert mine.get(key) == theirs.get(key), (mine["step"], key)
    reference = ref_policy.state_dict()
    for name, tensor in policy.state_dict().items():
        assert torch.equal(tensor, reference[name]), name
    assert sampler.state_dict() == ref_sampler.state_dict()


@pytest.mark.slow  # three short DAPO runs, two of them with a rollout process
def test_eta_zero_reproduces_the_synchronous_losses_exactly(world, tmp_path: Path):
    from ecomrlve.train.checkpoint import Checkpointer

    sync = _run(world, _cfg())
    assert sync[2].updates >= 2 and any(h["loss"] for h in sync[2].history)
    asynchronous = _run(world, _cfg(**{"async": True, "max_staleness": 0}))
    _same_run(asynchronous, sync)
    assert all(h["staleness_max"] == 0 for h in asynchronous[2].history)

    # stopped after step 1 and resumed (as after a SIGKILL): still the synchronous run
    root = tmp_path / "checkpoints"
    _run(
        world,
        _cfg(1, **{"async": True, "max_staleness": 0}),
        checkpoints=Checkpointer(root, every=50),
    )
    resumed = _run(
        world,
        _cfg(**{"async": True, "max_staleness": 0}),
        checkpoints=Checkpointer(root, every=50, resume=True),
    )
    assert [h["step"] for h in resumed[2].history] == list(range(2, STEPS + 1))
    for mine, theirs in zip(resumed[2].history, sync[2].history[1:], strict=True):
        assert mine.get("loss") == theirs.get("loss")
    ref_state = sync[0].state_dict()
    assert all(torch.equal(t, ref_state[k]) for k, t in resumed[0].state_dict().items())


@pytest.mark.slow  # a short asynchronous run with one or two rollout processes
@pytest.mark.parametrize("processes", [1, 2])
def test_staleness_never_exceeds_eta_in_the_recorded_rows(world, processes: int):
    steps, rows = [], []
    record = lambda metrics, scenarios, rollouts: (steps.append(metrics), rows.extend(rollouts))  # noqa: E731
    cfg = _cfg(4, **{"async": True, "max_staleness": 1, "rollout_processes": processes})
    _, _, result = _run(world, cfg, record=record)
    assert result.steps == 4 and result.updates >= 1
    table = frame(rows, ROLLOUT_SCHEMA)  # the train_rollouts columns
    assert table["staleness"].max() <= 1
    for row in rows:
        assert row["staleness"] == row["step"] - 1 - row["policy_version"], row
    # the worker played the next batch while the trainer updated: it ran one version behind
    assert table["staleness"].max() == 1
    step_rows = frame([{**m, "success_by_scenario": "{}"} for m in steps], STEP_SCHEMA)
    assert step_rows["staleness_max"].max() <= 1
    if processes == 1:  # one FIFO worker is never too late; two may finish out of order
        assert step_rows["stale_dropped"].to_list() == [0] * 4
    assert step_rows["queue_fill"].null_count() == 0


@pytest.mark.slow  # two short DAPO runs and one asynchronous one on a pool's engine
def test_engine_workers_push_between_batches_and_keep_eta(world):
    """`EngineRolloutWorkers` (the endpoint pool's workers): with eta 0 the synchronous run, bit
    for bit; with eta 1 the pool receives each new version before the batch that samples it."""
    model, chat, _ = world
    sync = _run(world, _cfg())
    pool = PoolEngine(model, chat.pad_token_id)
    _same_run(_run(world, _cfg(**{"async": True, "max_staleness": 0}), pool=pool), sync)
    assert pool.pushes == STEPS - 1  # version 0 was served already; the last is never sampled

    pool = PoolEngine(model, chat.pad_token_id)
    rows = []
    record = lambda metrics, scenarios, rollouts: rows.extend(rollouts)  # noqa: E731
    cfg = _cfg(4, **{"async": True, "max_staleness": 1})
    _, _, result = _run(world, cfg, record=record, pool=pool)
    assert result.steps == 4 and rows
    assert all(r["staleness"] == r["step"] - 1 - r["policy_version"] <= 1 for r in rows)
    versions = sorted({r["policy_version"] for r in rows})
    assert pool.pushes >= len(versions) - 1 >= 1  # each version sampled was pushed first


class ScriptedWorkers:
    """In-process workers that complete batches newest first (as a pool may) and claim the
    first one was sampled by weights far older than any the trainer published."""

    def __init__(self, model, chat, cfg) -> None:
        self.model, self.chat, self.cfg = copy.deepcopy(model), chat, cfg
        self.orders: list[RolloutOrder] = []
        self.version = -1
        self.taken = 0

    @property
    def in_flight(self) -> int:
        return len(self.orders)

    @property
    def ready(self) -> int:
        return len(self.orders)

    def submit(self, order: RolloutOrder) -> None:
        self.orders.append(order)

    def publish(self, policy, version: int) -> None:
        self.model.load_state_dict(policy.state_dict())
        self.version = version

    def next_batch(self) -> PlayedBatch:
        order = self.orders.pop()  # newest first: out of submission order
        engine = HFEngine(self.model, self.chat.pad_token_id)
        episodes = even_id_play(
            order.tasks,
            engine,
            self.chat,
            None,
            samples_per_task=self.cfg.training.rollout.group_size,
            group_seeds=order.group_seeds,
        )
        version = self.version - 5 if self.taken == 0 else self.version
        self.taken += 1
        for episode in episodes:
            episode.policy_version = version
        return PlayedBatch(order.order, episodes, version, 0.01)

    def close(self) -> None:
        pass


def test_a_batch_older_than_eta_is_dropped_never_trained(world):
    model, chat, tasks = world
    cfg = _cfg(2, **{"async": True, "max_staleness": 2})
    policy = copy.deepcopy(model)
    steps, rows = [], []
    result = train_dapo(
        policy,
        HFEngine(policy, chat.pad_token_id),
        chat,
        None,
        _sampler(tasks),
        cfg,
        workers=ScriptedWorkers(model, chat, cfg),
        record=lambda m, s, r: (steps.append(m), rows.extend(r)),
    )
    assert result.steps == 2
    assert steps[0]["stale_dropped"] == 1 and steps[1]["stale_dropped"] == 0
    assert rows and all(r["staleness"] <= 2 for r in rows)
    assert all(r["policy_version"] >= 0 for r in rows)  # the -5 batch never reached a row


def test_train_dapo_refuses_async_without_workers_and_workers_without_async(world):
    model, chat, tasks = world
    policy = copy.deepcopy(model)
    engine = HFEngine(policy, chat.pad_token_id)
    with pytest.raises(ValueError, match="needs rollout workers"):
        train_dapo(policy, engine, chat, None, _sampler(tasks), _cfg(**{"async": True}))
    with pytest.raises(ValueError, match="async is false"):
        train_dapo(
            policy,
            engine,
            chat,
            None,
            _sampler(tasks),
            _cfg(),
            workers=ScriptedWorkers(model, chat, _cfg()),
        )


# ---------------------------------------------------------------------------------------------
# The rollout process
# ---------------------------------------------------------------------------------------------


def test_an_error_in_the_rollout_process_reaches_the_trainer(world):
    with pytest.raises(RuntimeError, match=r"(?s)rollout process failed:.*cannot play 4 task"):
        _run(world, _cfg(1, **{"async": True}), play=failing_play)
    pool = PoolEngine(world[0], world[1].pad_token_id)
    with pytest.raises(RuntimeError, match=r"(?s)rollout thread failed:.*cannot play 4 task"):
        _run(world, _cfg(1, **{"async": True}), play=failing_play, pool=pool)


_KEEP_WORKERS = """
import sys, time
from ecomrlve.config import EcomConfig
from ecomrlve.testing.training import even_id_play, tiny_lm_pair
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.rollout_workers import ProcessRolloutWorkers, WorkerSpec

if __name__ == "__main__":
    model, tokenizer = tiny_lm_pair()
    chat = ChatFormat(tokenizer, [])
    cfg = EcomConfig()
    spec = WorkerSpec(
        model, chat.pad_token_id, chat, cfg.env, cfg.agent, 2, play=even_id_play, processes=2
    )
    workers = ProcessRolloutWorkers(spec)
    print(*workers.pids, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_the_rollout_process_ends_when_its_trainer_is_killed(tmp_path: Path):
    script = tmp_path / "trainer.py"
    script.write_text(_KEEP_WORKERS)
    root = str(Path(ecomrlve.__file__).parents[1])  # this checkout, not another install
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    trainer = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        workers = [int(pid) for pid in trainer.stdout.readline().split()]
        assert len(workers) == 2 and all(map(running, workers))
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        left = outliving(workers)  # each worker polls its parent every 0.25 s
        assert not left, f"rollout processes {left} outlived their trainer"
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()


# ---------------------------------------------------------------------------------------------
# What users run
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # a tiny SFT + 3 asynchronous DAPO steps through `ecomrlve train`
def test_ecomrlve_train_runs_asynchronously_and_records_staleness(tmp_path: Path):
    import multiprocessing

    import yaml
    from typer.testing import CliRunner

    from ecomrlve.cli import app
    from ecomrlve.testing.env_tasks import sql_rows
    from ecomrlve.testing.training import TINY_RUN

    data = train_store_dir()
    raw = copy.deepcopy(TINY_RUN)
    raw["training"] |= {
        "async": True,
        "max_staleness": 1,
        "total_steps": 3,
        "sft_steps": 1,
        "eval_tasks": 2,
        "eval_before_train": False,
    }
    config = tmp_path / "async.yaml"
    config.write_text(yaml.safe_dump(raw))
    output = tmp_path / "run"
    args = ["train", "--config", str(config), "--output", str(output), "--data", str(data)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    run_id = yaml.safe_load((output / "summary.json").read_text())["run_id"]
    saved = yaml.safe_load((output / "config.yaml").read_text())["training"]["rollout"]
    assert saved["asynchronous"] is True and saved["max_staleness"] == 1
    rows = sql_rows(
        data,
        "SELECT step, policy_version, staleness FROM train_rollouts WHERE run_id = ?",
        [run_id],
    )
    assert rows and all(s <= 1 and s == step - 1 - v for step, v, s in rows)
    steps = sql_rows(
        data,
        "SELECT staleness_max, stale_dropped, queue_fill FROM train_steps WHERE run_id = ?",
        [run_id],
    )
    assert len(steps) == 3 and all(m <= 1 and d == 0 and q is not None for m, d, q in steps)
    assert not [p for p in multiprocessing.active_children() if p.name == "ecomrlve-rollout"]
