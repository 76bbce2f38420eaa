"""`ecomrlve train --engine verl` and the pipeline's verl stage: verl's trainer on our config.

`verl_launch(config, data, curriculum, output)` turns our YAML into verl overrides (GRPO
advantages with DAPO's clip-higher, token-mean loss, filter_groups and the overlong buffer;
the curriculum's order kept) and the files verl needs; `compose_verl_config` checks them with
verl's own loader; `VerlLaunch.run` runs `python -m verl.trainer.main_ppo ...`, bound to this
process (`procs.run_bound`).

verl's runtime hooks, the AgentLoop that plays `EcomEnv` and `compute_score`, live in
`ecomrlve.integrations.verl.runtime`: the config names them by module path, and verl imports
them in its workers (this module never imports them).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecomrlve.config import AgentConfig, EcomConfig, TrainingConfig
from ecomrlve.integrations.verl.rows import AGENT_NAME, VERL_DIR, VERL_VAL_FILE

DATA_ENV = "ECOMRLVE_DATA"  # where compute_score and the loop find the catalog
VERL_VERSIONS = ">=0.8,<0.10"
# opening prompt budget: system text + customer profile + the 15 tool schemas rendered by the
# Qwen3 template + the request come to ~2,000 tokens with the real tokenizer
PROMPT_TOKENS = 4096

# the module verl imports our AgentLoop and compute_score from (named, not imported, here)
HOOKS_MODULE = "ecomrlve.integrations.verl.runtime"


def hooks_file() -> Path:
    """The source file of `HOOKS_MODULE` (verl's `custom_reward_function.path` loads it)."""
    spec = importlib.util.find_spec(HOOKS_MODULE)
    if spec is None or spec.origin is None:
        raise ValueError(f"cannot find {HOOKS_MODULE}")
    return Path(spec.origin).resolve()


@dataclass(frozen=True)
class VerlLaunch:
    """The command that runs verl's trainer on a curriculum, and the files it needs."""

    overrides: list[str]
    files: dict[Path, str]  # written before launch: the AgentLoop registry entry, env config

    def write_files(self) -> None:
        from ecomrlve.store import atomic_write_bytes

        for path, text in self.files.items():
            atomic_write_bytes(text.encode(), path)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "verl.trainer.main_ppo", *self.overrides]

    def shell(self) -> str:
        return " ".join(shlex.quote(part) for part in self.command())

    def run(self, data: str | os.PathLike) -> int:
        """Run verl's trainer on the catalog in `data` (the files written already); its exit
        status. The trainer ends with this process, even on `kill -9` (`procs.run_bound`)."""
        from ecomrlve.procs import run_bound

        env = {**os.environ, DATA_ENV: str(Path(data).expanduser().resolve())}
        return run_bound(self.command(), env=env).returncode


def verl_launch(
    cfg: EcomConfig,
    data: str | os.PathLike,
    curriculum: str,
    output: str | os.PathLike,
    *,
    gpus: int = 1,
) -> VerlLaunch:
    """verl overrides for our config: GRPO advantages with DAPO's clip-higher, token-mean loss,
    filter_groups (dynamic sampling) and the overlong buffer; the curriculum's order kept
    (no shuffle); our AgentLoop as the default loop; compute_score as the reward."""
    from ecomrlve.store import DataPaths, validate_identifier

    t, agent = cfg.training, cfg.agent
    root = DataPaths.of(data).root
    folder = root / "curricula" / validate_identifier(curriculum, "curriculum name")
    shards = sorted(str(p) for p in (folder / VERL_DIR).glob("shard-*.parquet"))
    if not shards:
        command = DataPaths.of(data).curriculum_build_command(curriculum)
        raise ValueError(f"no verl rows in {folder}: run `{command}` first")
    val = folder / VERL_VAL_FILE
    val_files = [str(val)] if val.exists() else shards[:1]
    out = Path(output).expanduser().resolve()
    loops = out / "verl" / "agent_loops.yaml"
    o = [
        *_data_overrides(t, agent, shards, val_files),
        *_algorithm_overrides(t),
        *_actor_overrides(t, agent),
        *_rollout_overrides(t, agent, loops, gpus),
        *_reward_overrides(t, agent, root, out),
        *_trainer_overrides(t, out, curriculum, gpus),
    ]
    if t.algorithm.clip_ratio_c is not None:
        o.append(f"actor_rollout_ref.actor.clip_ratio_c={t.algorithm.clip_ratio_c}")
    files = {
        loops: f"- name: {AGENT_NAME}\n  _target_: {HOOKS_MODULE}.EcomAgentLoop\n",
        out / "verl" / "env.json": cfg.env.model_dump_json(indent=2) + "\n",
    }
    return VerlLaunch(o, files)


def _data_overrides(
    t: TrainingConfig, agent: AgentConfig, shards: list[str], val_files: list[str]
) -> list[str]:
    """The curriculum's rows in their order (no shuffle), the prompt and response lengths."""
    response = agent.max_episode_tokens
    return [
        f"data.train_files={_list(shards)}",
        f"data.val_files={_list(val_files)}",
        "data.shuffle=False",
        "data.prompt_key=prompt",
        "data.return_raw_chat=True",
        "data.filter_overlong_prompts=False",
        f"data.max_prompt_length={PROMPT_TOKENS}",
        f"data.max_response_length={response}",
        f"data.train_batch_size={t.rollout.prompts_per_step}",
        f"data.seed={t.seed}",
    ]


def _algorithm_overrides(t: TrainingConfig) -> list[str]:
    """GRPO advantages; DAPO's dynamic sampling (filter_groups)."""
    return [
        "algorithm.adv_estimator=grpo",
        "algorithm.use_kl_in_reward=False",
        f"algorithm.filter_groups.enable={t.algorithm.dynamic_sampling}",
        f"algorithm.filter_groups.metric={_FILTER_METRIC[t.algorithm.dynamic_sampling_metric]}",
        f"algorithm.filter_groups.max_num_gen_batches={t.algorithm.max_num_gen_batches}",
    ]


def _actor_overrides(t: TrainingConfig, agent: AgentConfig) -> list[str]:
    """The policy update: optimizer, DAPO's clip-higher and token-mean loss, KL."""
    mini_batch = t.algorithm.ppo_mini_batch_size or t.rollout.prompts_per_step
    return [
        f"actor_rollout_ref.model.path={agent.model}",
        f"actor_rollout_ref.actor.optim.lr={t.algorithm.learning_rate}",
        f"actor_rollout_ref.actor.optim.weight_decay={t.algorithm.weight_decay}",
        f"actor_rollout_ref.actor.grad_clip={t.algorithm.max_grad_norm}",
        f"actor_rollout_ref.actor.clip_ratio_low={t.algorithm.clip_ratio_low}",
        f"actor_rollout_ref.actor.clip_ratio_high={t.algorithm.clip_ratio_high}",
        f"actor_rollout_ref.actor.loss_agg_mode={t.algorithm.loss_agg_mode}",
        f"actor_rollout_ref.actor.ppo_epochs={t.algorithm.ppo_epochs}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={mini_batch}",
        f"actor_rollout_ref.actor.use_kl_loss={t.algorithm.kl_coef > 0}",
        f"actor_rollout_ref.actor.kl_loss_coef={t.algorithm.kl_coef}",
        "actor_rollout_ref.actor.shuffle=False",
    ]


def _rollout_overrides(t: TrainingConfig, agent: AgentConfig, loops: Path, gpus: int) -> list[str]:
    """vLLM rollouts, async, with our AgentLoop as the default loop."""
    return [
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.n={t.rollout.group_size}",
        f"actor_rollout_ref.rollout.temperature={agent.temperature}",
        f"actor_rollout_ref.rollout.top_p={agent.top_p}",
        f"actor_rollout_ref.rollout.gpu_memory_utilization={t.rollout.vllm_gpu_memory_utilization}",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
        f"actor_rollout_ref.rollout.agent.num_workers={max(1, gpus)}",
    ]


def _reward_overrides(t: TrainingConfig, agent: AgentConfig, root: Path, out: Path) -> list[str]:
    """compute_score as the reward, DAPO's overlong buffer, and what our AgentLoop reads."""
    response = agent.max_episode_tokens
    overlong = t.algorithm.overlong_shaping and 0 < t.algorithm.overlong_buffer < response
    overlong_buffer = t.algorithm.overlong_buffer if overlong else 0
    return [
        "reward.reward_manager.name=dapo",
        f"reward.custom_reward_function.path={hooks_file()}",
        "reward.custom_reward_function.name=compute_score",
        f"+reward.reward_kwargs.max_resp_len={response}",
        f"+reward.reward_kwargs.overlong_buffer_cfg.enable={overlong}",
        f"+reward.reward_kwargs.overlong_buffer_cfg.len={overlong_buffer}",
        f"+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor={t.algorithm.overlong_penalty}",
        "+reward.reward_kwargs.overlong_buffer_cfg.log=False",
        f"+ecomrlve.data_dir={root}",
        f"+ecomrlve.max_turn_tokens={agent.max_new_tokens}",
        f"+data.apply_chat_template_kwargs.enable_thinking={agent.enable_thinking}",
        f"+ecomrlve.env_config={out / 'verl' / 'env.json'}",
    ]


def _trainer_overrides(t: TrainingConfig, out: Path, curriculum: str, gpus: int) -> list[str]:
    """Steps, checkpoints, loggers and GPUs."""
    return [
        f"trainer.total_training_steps={t.algorithm.total_steps}",
        f"trainer.save_freq={t.checkpoint.save_every}",
        f"trainer.default_local_dir={out / 'verl' / 'checkpoints'}",
        "trainer.project_name=ecomrlve",
        f"trainer.experiment_name={curriculum}",
        f"trainer.logger={_list(_verl_loggers(t.loggers))}",
        f"trainer.n_gpus_per_node={gpus}",
        "trainer.nnodes=1",
    ]


# compute_score's key each DAPO dynamic-sampling metric reads
_FILTER_METRIC = {"success": "success", "reward": "score"}


def _verl_loggers(loggers: list[str]) -> list[str]:
    """`training.loggers` as verl's `trainer.logger` (same names; DuckDB is ours alone)."""
    return [name for name in loggers if name != "duckdb"] or ["console"]


def _list(items: list[str]) -> str:
    return "[" + ",".join(f"'{i}'" for i in items) + "]"


def compose_verl_config(launch: VerlLaunch) -> Any:
    """verl's own config loader (Hydra compose of `ppo_trainer`) over the overrides; raises on
    an override verl does not accept."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    spec = importlib.util.find_spec("verl")  # its config folder, without importing verl
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"verl is not installed: pip install --no-deps 'verl{VERL_VERSIONS}'")
    config_dir = Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=launch.overrides)
