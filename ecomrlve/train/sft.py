"""SFT warm-start on reference trajectories: the first half of the SFT -> RL recipe.

Each task's reference solution (`ecomrlve.env.reference_turns`, what `ecomrlve solve` writes) is
played in the env, so the tool responses are real, and laid out exactly like a rollout
(`rollout.reference_episode`). The loss is the negative log-likelihood of the assistant tokens
only: prompt, tool responses and user turns are context.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ecomrlve.config import AgentConfig, EnvConfig, TrainingConfig
from ecomrlve.env import Catalog
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.tasks import Task
from ecomrlve.train.batching import (
    collate,
    forward_logprobs,
    padding_sequence,
    token_micro_batches,
)
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.dapo import sft_loss
from ecomrlve.train.distributed import (
    DistContext,
    all_gather_objects,
    all_reduce_sum,
    shard_items,
)
from ecomrlve.train.memory import micro_batch_tokens
from ecomrlve.train.rollout import reference_episode
from ecomrlve.train.schedule import lr_factor, set_lr

log = logging.getLogger(__name__)


@dataclass
class SFTData:
    sequences: list[TokenSequence]
    skipped_failed: int = 0  # references the verifier rejects (a generator bug, logged)
    skipped_long: int = 0  # longer than agent.max_episode_tokens


@dataclass
class SFTResult:
    steps: int = 0
    sequences: int = 0
    tokens: int = 0
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    rows: list[dict[str, float | int]] = field(default_factory=list)  # the sft_steps table


def sft_total_steps(config: TrainingConfig, sequences: int) -> int:
    """Optimizer steps SFT takes: `sft_steps` when set, else `sft_epochs` passes."""
    if sequences == 0:
        return 0
    if config.sft.steps is not None:
        return config.sft.steps
    return -(-sequences // config.sft.batch_size) * config.sft.epochs


def reference_data(
    tasks: list[Task],
    chat: ChatFormat,
    catalog: Catalog,
    env_config: EnvConfig,
    agent: AgentConfig,
    tools_for: Callable[[Task], list[dict[str, Any]] | None] | None = None,
) -> SFTData:
    """Token sequences of the reference solutions that verify and fit the episode budget;
    `tools_for(task)` is the tool schemas each prompt offers (None: the chat's own)."""
    data = SFTData([])
    for task in tasks:
        tools = tools_for(task) if tools_for is not None else None
        episode = reference_episode(task, chat, catalog, env_config, tools)
        if not episode.success:
            data.skipped_failed += 1
            log.warning("reference of %s does not verify; not used for SFT", task.task_id)
        elif len(episode.sequence) > agent.max_episode_tokens:
            data.skipped_long += 1
        else:
            data.sequences.append(episode.sequence)
    return data


def train_sft(
    model: torch.nn.Module,
    sequences: list[TokenSequence],
    config: TrainingConfig,
    *,
    pad_token_id: int,
    progress: ProgressFn | None = None,
    ctx: DistContext | None = None,
) -> SFTResult:
    """`sft_steps` optimizer steps (default: `sft_epochs` passes) over `sequences`,
    `sft_batch_size` sequences per step, at the warmup/decay schedule of `sft_lr_schedule`,
    micro-batched by `max_tokens_per_micro_batch` (at most `mini_batch_size` sequences); loss
    on assistant tokens only. Under torchrun each rank takes every world_size-th sequence of a
    step, normalised by the step's global token count, so the summed gradient is one process's.
    """
    result = SFTResult()
    total = sft_total_steps(config, len(sequences))
    if total == 0:
        return result
    ctx = ctx or DistContext(device=next(model.parameters()).device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.sft.learning_rate, weight_decay=config.algorithm.weight_decay
    )
    started = time.perf_counter()
    model.train()
    for step, batch_ids in enumerate(sft_batches(len(sequences), total, config), start=1):
        lr = config.sft.learning_rate * lr_factor(
            step, total, warmup=config.sft.warmup_steps, schedule=config.sft.lr_schedule
        )
        set_lr(optimizer, lr)
        total_tokens = float(sum(sequences[i].generated_tokens for i in batch_ids))
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for micro, weight in rank_micro_batches(
            shard_items(batch_ids, ctx), sequences, config, ctx
        ):
            batch = collate(micro, pad_token_id).to(ctx.device)
            logprobs, _ = forward_logprobs(model, batch)  # (b, L-1)
            loss = sft_loss(logprobs, batch.loss_mask, total_tokens=total_tokens)
            (loss * weight).backward()
            loss_sum += float(loss.detach()) * weight
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.algorithm.max_grad_norm)
        optimizer.step()
        loss_total = all_reduce_sum(loss_sum, ctx)
        result.steps += 1
        result.sequences += len(batch_ids)
        result.tokens += int(total_tokens)
        result.losses.append(loss_total)
        result.rows.append(
            {
                "step": step,
                "loss": loss_total,
                "tokens": int(total_tokens),
                "sequences": len(batch_ids),
                "lr": lr,
                "seconds": time.perf_counter() - started,
            }
        )
        if progress:
            elapsed = time.perf_counter() - started
            rate = {"tokens/s": result.tokens / elapsed} if elapsed > 0 else {}
            metrics = {"loss": loss_total, **rate}
            progress(ProgressEvent("sft", step, total, unit="step", metrics=metrics))
    result.seconds = time.perf_counter() - started
    return result


def sft_batches(count: int, total: int, config: TrainingConfig) -> Iterator[list[int]]:
    """`total` batches of `sft_batch_size` indices into `count` sequences: reshuffled passes
    (a pass's last batch may be short), from the run's seed."""
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 11]))
    made = 0
    while True:
        order = rng.permutation(count)
        for start in range(0, count, config.sft.batch_size):
            if made == total:
                return
            made += 1
            yield order[start : start + config.sft.batch_size].tolist()


def rank_micro_batches(
    indices: list[int], sequences: list[TokenSequence], config: TrainingConfig, ctx: DistContext
) -> list[tuple[list[TokenSequence], float]]:
    """This rank's `indices` cut into token-budget micro-batches, as (sequences, weight). Every
    rank gets the same count (FSDP gathers layers in each forward): a rank with fewer pads with
    weight-0 micro-batches of `padding_sequence`."""
    cuts = token_micro_batches(
        indices,
        {i: len(sequences[i]) for i in indices},
        micro_batch_tokens(config),
        config.scale.mini_batch_size,
    )
    out = [([sequences[i] for i in cut], 1.0) for cut in cuts]
    count = max(all_gather_objects(len(out), ctx))
    pad = padding_sequence(0)
    return out + [([pad], 0.0)] * (count - len(out))
