"""Token sequences to padded tensors, and the policy's forward pass over them.

Shared by SFT, DAPO's old-log-prob pass and its update, so all three see exactly the same
positions: `logprobs[:, t]` is log p(token t+1 | tokens <= t), and `loss_mask[:, t]` says whether
token t+1 is an assistant token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch.utils.checkpoint import checkpoint

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


# Elements of one fp32 logits chunk (tokens x vocab): 2^26 floats = 256 MiB, e.g. 443 tokens of
# Qwen3's 151,936-token vocabulary. The full (B, L, V) logits never exist.
LOGIT_CHUNK_ELEMENTS = 1 << 26


def forward_logprobs(
    model: torch.nn.Module,
    batch: Batch,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_elements: int = LOGIT_CHUNK_ELEMENTS,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (B, L-1) of the batch's own next tokens, and optionally entropy.

    Only the trained positions (`batch.loss_mask`) are computed; the others are 0. For the
    length of the call the LM head is replaced: it picks the final hidden states of the trained
    positions and runs them through the head's weight in chunks of `chunk_elements` logits,
    each under activation checkpointing, so backward recomputes a chunk instead of keeping
    (tokens x vocab) fp32 logits alive; the full (B, L, V) logits never exist.
    With `model.ecomrlve_autocast` set (see `plan.apply_plan`), the forward runs in that
    dtype under autocast while the weights stay fp32 (the master copy).
    """
    autocast_dtype = getattr(model, "ecomrlve_autocast", None)
    context = (
        torch.autocast(batch.input_ids.device.type, dtype=autocast_dtype)
        if autocast_dtype is not None
        else contextlib.nullcontext()
    )
    head = _lm_head(model)
    if head is None:  # no LM head to take over: the plain path (full logits; small models)
        with context:
            return _full_logprobs(model, batch, temperature, with_entropy)
    trained = batch.loss_mask > 0  # (B, L-1)
    targets = batch.input_ids[:, 1:][trained]  # (N,)
    per_chunk = max(1, chunk_elements // max(head.weight.shape[0], 1))

    def trained_positions_head(hidden: torch.Tensor) -> torch.Tensor:
        # Runs as the LM head, inside the model's forward, so FSDP holds the full head weight
        # and its backward hooks see the result (returned as the model's `logits`).
        picked = hidden[:, :-1][trained]  # (N, H)  position t predicts token t+1
        parts = []
        for start in range(0, targets.shape[0], per_chunk):
            args = (
                picked[start : start + per_chunk],
                head.weight,
                targets[start : start + per_chunk],
            )
            if torch.is_grad_enabled():
                parts.append(checkpoint(_head_logprobs, *args, temperature, use_reentrant=False))
            else:
                parts.append(_head_logprobs(*args, temperature))
        if not parts:
            return picked.new_zeros(0, 2, dtype=torch.float32) + 0.0 * picked.sum()
        return torch.cat(parts)  # (N, 2): log-prob, entropy

    with context, _head_replaced(head, trained_positions_head):
        packed = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    shape, device = batch.loss_mask.shape, packed.device
    logprobs = torch.zeros(shape, dtype=torch.float32, device=device).masked_scatter(
        trained, packed[:, 0]
    )  # (B, L-1)
    entropy = None
    if with_entropy:
        entropy = torch.zeros(shape, dtype=torch.float32, device=device).masked_scatter(
            trained, packed[:, 1].detach()
        )  # (B, L-1)
    return logprobs, entropy


@contextlib.contextmanager
def _head_replaced(head: torch.nn.Module, forward: Callable[[torch.Tensor], torch.Tensor]):
    head.forward = forward
    try:
        yield
    finally:
        del head.forward  # back to the class's forward


def _lm_head(model: torch.nn.Module) -> torch.nn.Linear | None:
    """The bias-free linear LM head whose input is the final hidden state (Qwen3, Llama...)."""
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if get_head is not None else None
    if not isinstance(head, torch.nn.Linear) or head.bias is not None:
        return None
    return head


def _head_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float
) -> torch.Tensor:
    """log softmax(hidden @ W^T / T) at the targets and the entropy, in fp32;
    hidden (n, H) -> (n, 2). The entropy carries no gradient."""
    logits = torch.nn.functional.linear(hidden, weight).float()  # (n, V)
    if temperature > 0:
        logits = logits / temperature
    logz = torch.logsumexp(logits, dim=-1)  # (n,)
    picked = logits.gather(-1, targets[:, None]).squeeze(-1) - logz  # (n,)
    with torch.no_grad():
        entropy = logz - (torch.softmax(logits, dim=-1) * logits).sum(-1)  # (n,)
    return torch.stack([picked, entropy], dim=-1)  # (n, 2)


def _full_logprobs(
    model: torch.nn.Module, batch: Batch, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logits = logits[:, :-1]  # (B, L-1, V)  position t predicts token t+1
    targets = batch.input_ids[:, 1:]  # (B, L-1)
    mask = batch.loss_mask  # (B, L-1)
    logprobs = token_logprobs(logits, targets, temperature) * mask  # (B, L-1)
    entropy = token_entropy(logits, temperature) * mask if with_entropy else None  # (B, L-1)
    return logprobs, entropy


def padding_sequence(pad_token_id: int) -> TokenSequence:
    """Two pad tokens, the second 'trained': the micro-batch a rank with less data runs at
    weight 0, so its forward and backward still touch every weight as FSDP's collectives need,
    while the gradient stays unchanged."""
    sequence = TokenSequence()
    sequence.add_prompt([pad_token_id])
    sequence.add_generated([pad_token_id], [0.0])
    return sequence


def token_micro_batches(
    indices: Sequence[int],
    lengths: Sequence[int] | Mapping[int, int],
    max_tokens: int,
    max_sequences: int,
) -> list[list[int]]:
    """Split `indices` into micro-batches whose padded size, sequences x longest sequence,
    stays within `max_tokens` and which hold at most `max_sequences` sequences. The indices are
    taken shortest first (ties in the given order), so each micro-batch pads to a length near
    its own: the step's loss is the same sum, with fewer padded positions computed. A sequence
    longer than `max_tokens` gets a micro-batch of its own.

    >>> token_micro_batches([0, 1, 2, 3], [10, 30, 10, 5], max_tokens=40, max_sequences=8)
    [[3, 0, 2], [1]]
    """
    out: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in sorted(indices, key=lambda i: lengths[i]):
        length = lengths[index]
        wider = max(longest, length)
        if current and (wider * (len(current) + 1) > max_tokens or len(current) >= max_sequences):
            out.append(current)
            current, wider = [], length
        current.append(index)
        longest = wider
    if current:
        out.append(current)
    return out
