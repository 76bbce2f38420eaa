"""A `RolloutEngine` on Hugging Face `generate`: batched, left-padded, with per-token log-probs.

On CPU the engine shares the policy module itself, so `sync_weights` has nothing to copy; given
another module or a state dict, it loads those weights.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from ecomrlve.train.engine import Completion, SamplingParams


class _LogprobRecorder(LogitsProcessor):
    """Records log p(sampled token) under softmax(raw logits / T), one step behind.

    Custom processors run before HF's temperature/top-p warpers, so `scores` are the raw
    logits. The token drawn from step t's distribution is visible at step t+1 as the last
    input id; the final step is gathered by `finish`.
    """

    def __init__(self, temperature: float) -> None:
        self.temperature = temperature if temperature > 0 else 1.0
        self.previous: torch.Tensor | None = None
        self.logprobs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        if self.previous is not None:
            self._gather(input_ids[:, -1])
        self.previous = torch.log_softmax(scores.float() / self.temperature, dim=-1)  # (B, V)
        return scores

    def _gather(self, tokens: torch.Tensor) -> None:
        picked = self.previous.gather(1, tokens[:, None].to(self.previous.device))  # (B, 1)
        self.logprobs.append(picked[:, 0])

    def finish(self, last_tokens: torch.Tensor) -> torch.Tensor:
        if self.previous is not None:
            self._gather(last_tokens)
            self.previous = None
        return torch.stack(self.logprobs, dim=1)  # (B, T_new)


class _RowSampler(LogitsProcessor):
    """Samples each row from softmax(logits / T) (top-p filtered) with that row's own
    generator, then leaves only the drawn token, so greedy decoding emits it. A row's draw
    therefore depends on its seed alone, not on the batch it shares."""

    def __init__(self, temperature: float, top_p: float, seeds: list[int], device) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.generators = [
            torch.Generator(device=device).manual_seed(seed % (2**63 - 1)) for seed in seeds
        ]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)  # (B, V)
        if self.top_p < 1.0:
            ordered, order = probs.sort(dim=-1, descending=True)  # (B, V)
            before = ordered.cumsum(-1) - ordered  # (B, V) mass ranked above each token
            ordered = ordered.masked_fill(before >= self.top_p, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, order, ordered)  # (B, V)
        picked = torch.cat(
            [
                torch.multinomial(row, 1, generator=g)
                for row, g in zip(probs, self.generators, strict=True)
            ]
        )  # (B,)
        out = torch.full_like(scores, float("-inf"))  # (B, V)
        return out.scatter(-1, picked[:, None], 0.0)


class HFEngine:
    """Samples with `model.generate`; prompts are chunked into batches of `max_batch_size`."""

    def __init__(self, model: Any, pad_token_id: int, *, max_batch_size: int = 64) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.model = model
        self.pad_token_id = pad_token_id
        self.max_batch_size = max_batch_size

    def sync_weights(self, policy: Any) -> None:
        if policy is self.model:
            return
        state = policy.state_dict() if hasattr(policy, "state_dict") else policy
        self.model.load_state_dict(state)

    def generate(
        self, prompts_token_ids: list[list[int]], sampling: SamplingParams
    ) -> list[Completion]:
        if any(len(p) == 0 for p in prompts_token_ids):
            raise ValueError("every prompt needs at least one token")
        out: list[Completion] = []
        for start in range(0, len(prompts_token_ids), self.max_batch_size):
            chunk = prompts_token_ids[start : start + self.max_batch_size]
            seed = (sampling.seed * 1_000_003 + start) % (2**63 - 1)  # torch seeds are int64
            rows = (
                list(sampling.row_seeds[start : start + self.max_batch_size])
                if sampling.row_seeds
                else None
            )
            out.extend(self._generate_batch(chunk, sampling, seed, rows))
        return out

    @torch.inference_mode()
    def _generate_batch(
        self,
        prompts: list[list[int]],
        sampling: SamplingParams,
        seed: int,
        row_seeds: list[int] | None = None,
    ) -> list[Completion]:
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        recorder = _LogprobRecorder(sampling.temperature)
        greedy = sampling.temperature == 0
        processors = [recorder]
        if row_seeds is not None and not greedy:
            processors.append(_RowSampler(sampling.temperature, sampling.top_p, row_seeds, device))
            greedy = True  # the row sampler has drawn; generate takes its one token
        stop = list(sampling.stop_token_ids) or None
        was_training = self.model.training
        self.model.eval()
        try:
            # bf16 compute on fp32 master weights, as the update runs it (plan.apply_plan)
            autocast = getattr(self.model, "ecomrlve_autocast", None)
            precision = (
                torch.autocast(device.type, dtype=autocast)
                if autocast is not None
                else contextlib.nullcontext()
            )
            with (
                torch.random.fork_rng(devices=[device] if device.type == "cuda" else []),
                precision,
            ):
                torch.manual_seed(seed)
                result = self.model.generate(
                    input_ids=input_ids.to(device),  # (B, P)
                    attention_mask=attention_mask.to(device),  # (B, P)
                    max_new_tokens=sampling.max_new_tokens,
                    do_sample=not greedy,
                    temperature=None if greedy else sampling.temperature,
                    top_p=None if greedy else sampling.top_p,
                    top_k=None,
                    eos_token_id=stop,
                    pad_token_id=self.pad_token_id,
                    logits_processor=LogitsProcessorList(processors),
                    return_dict_in_generate=True,
                    # each rank generates on its own full copy of the weights (gathered from
                    # FSDP shards or never sharded): transformers would otherwise sync every
                    # decoding step across ranks when it sees an FSDP-managed module, and ranks
                    # whose episodes need different numbers of generate calls deadlock
                    synced_gpus=False,
                )
        finally:
            self.model.train(was_training)
        new_tokens = result.sequences[:, width:].cpu()  # (B, T_new)
        logprobs = recorder.finish(result.sequences[:, -1]).cpu()  # (B, T_new)
        stops = set(sampling.stop_token_ids)
        completions = []
        for row in range(len(prompts)):
            ids = new_tokens[row].tolist()
            end = next((i + 1 for i, t in enumerate(ids) if t in stops), None)
            finish = "stop" if end is not None else "length"
            end = end if end is not None else min(len(ids), sampling.max_new_tokens)
            completions.append(
                Completion(ids[:end], logprobs[row, :end].tolist(), finish)  # type: ignore[arg-type]
            )
        return completions
