"""SFT warm-start on reference trajectories: the first half of the SFT -> RL recipe.

Each task's reference solution (`ecomrlve.env.reference_turns`, what `ecomrlve solve` writes) is
played in the env, so the tool responses are real, and laid out exactly like a rollout
(`rollout.reference_episode`). The loss is the negative log-likelihood of the assistant tokens
only: prompt, tool responses and user turns are context.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ecomrlve.config import AgentConfig, EnvConfig, TrainingConfig
from ecomrlve.env import Catalog
from ecomrlve.tasks import Task
from ecomrlve.train.batching import collate, forward_logprobs, micro_batches
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.dapo import sft_loss
from ecomrlve.train.rollout import reference_episode

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, float], None]


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


def reference_data(
    tasks: list[Task],
    chat: ChatFormat,
    catalog: Catalog,
    env_config: EnvConfig,
    agent: AgentConfig,
) -> SFTData:
    """Token sequences of the reference solutions that verify and fit the episode budget."""
    data = SFTData([])
    for task in tasks:
        episode = reference_episode(task, chat, catalog, env_config)
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
) -> SFTResult:
    """`sft_epochs` passes over `sequences`, `sft_batch_size` sequences per optimizer step,
    micro-batched by `mini_batch_size`; loss on assistant tokens only."""
    result = SFTResult()
    if config.sft_epochs == 0 or not sequences:
        return result
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.sft_learning_rate, weight_decay=config.weight_decay
    )
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 11]))
    steps_per_epoch = -(-len(sequences) // config.sft_batch_size)
    total = steps_per_epoch * config.sft_epochs
    started = time.perf_counter()
    model.train()
    for _ in range(config.sft_epochs):
        order = rng.permutation(len(sequences))
        for start in range(0, len(order), config.sft_batch_size):
            batch_ids = order[start : start + config.sft_batch_size]
            total_tokens = float(sum(sequences[i].generated_tokens for i in batch_ids))
            optimizer.zero_grad(set_to_none=True)
            loss_sum = 0.0
            for micro in micro_batches(batch_ids.tolist(), config.mini_batch_size):
                batch = collate([sequences[i] for i in micro], pad_token_id).to(device)
                logprobs, _ = forward_logprobs(model, batch)  # (b, L-1)
                loss = sft_loss(logprobs, batch.loss_mask, total_tokens=total_tokens)
                loss.backward()
                loss_sum += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            result.steps += 1
            result.sequences += len(batch_ids)
            result.tokens += int(total_tokens)
            result.losses.append(loss_sum)
            if progress:
                progress("sft", result.steps / total)
    result.seconds = time.perf_counter() - started
    return result
