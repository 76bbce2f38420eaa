"""Token sequences to padded tensors, and the policy's forward pass over them.

Shared by SFT, DAPO's old-log-prob pass and its update, so all three see exactly the same
positions: `logprobs[:, t]` is log p(token t+1 | tokens <= t), and `loss_mask[:, t]` says whether
token t+1 is an assistant token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ecomrlve.train.chat import TokenSequence
from ecomrlve.train.dapo import token_entropy, token_logprobs


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, L) right-padded
    attention_mask: torch.Tensor  # (B, L)
    loss_mask: torch.Tensor  # (B, L-1) aligned with the predicted token
    sampling_logprobs: torch.Tensor  # (B, L-1) engine log-probs of the predicted token

    def to(self, device: torch.device | str) -> Batch:
        return Batch(*(t.to(device) for t in vars(self).values()))

    @property
    def tokens(self) -> int:
        return int(self.loss_mask.sum())


def collate(sequences: Sequence[TokenSequence], pad_token_id: int) -> Batch:
    if not sequences:
        raise ValueError("cannot collate an empty batch")
    width = max(len(s) for s in sequences)
    n = len(sequences)
    input_ids = torch.full((n, width), pad_token_id, dtype=torch.long)  # (B, L)
    attention = torch.zeros((n, width), dtype=torch.long)  # (B, L)
    mask = torch.zeros((n, width), dtype=torch.float32)  # (B, L)
    sampled = torch.zeros((n, width), dtype=torch.float32)  # (B, L)
    for row, seq in enumerate(sequences):
        length = len(seq)
        input_ids[row, :length] = torch.tensor(seq.token_ids, dtype=torch.long)
        attention[row, :length] = 1
        mask[row, :length] = torch.tensor(seq.loss_mask, dtype=torch.float32)
        sampled[row, :length] = torch.tensor(seq.logprobs, dtype=torch.float32)
    return Batch(input_ids, attention, mask[:, 1:], sampled[:, 1:])


def forward_logprobs(
    model: torch.nn.Module, batch: Batch, *, temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (B, L-1) of the batch's own next tokens, and optionally entropy."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logits = logits[:, :-1]  # (B, L-1, V)  position t predicts token t+1
    targets = batch.input_ids[:, 1:]  # (B, L-1)
    logprobs = token_logprobs(logits, targets, temperature)  # (B, L-1)
    entropy = token_entropy(logits, temperature) if with_entropy else None  # (B, L-1)
    return logprobs, entropy


def micro_batches(indices: Sequence[int], size: int) -> list[list[int]]:
    return [list(indices[i : i + size]) for i in range(0, len(indices), size)]
