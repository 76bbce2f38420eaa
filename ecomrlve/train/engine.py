"""The rollout-engine interface: what the trainer needs from whatever generates tokens.

Two calls, so a vLLM engine can slot in later without touching the loop: `generate` takes token
ids (the trainer owns the chat format and the loss mask, so the engine never re-tokenizes) and
returns the sampled token ids with their log-probs; `sync_weights` pushes the policy's current
weights into the engine after an update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ecomrlve.env import Verdict

FinishReason = Literal["stop", "length"]


def has_prompts(prompts_token_ids: list[list[int]]) -> bool:
    """Whether there is anything to generate; raises ValueError on an empty prompt."""
    if any(len(p) == 0 for p in prompts_token_ids):
        raise ValueError("every prompt needs at least one token")
    return bool(prompts_token_ids)


class Judged:
    """An episode's outcome read off its verdict (none yet: no reward, no success, one step
    per turn). Mixed into the dataclasses that hold `verdict` and `turns`."""

    verdict: Verdict | None
    turns: list[str]

    @property
    def reward(self) -> float:
        return self.verdict.reward if self.verdict else 0.0

    @property
    def success(self) -> bool:
        return bool(self.verdict and self.verdict.success)

    @property
    def steps(self) -> int:
        return self.verdict.steps if self.verdict else len(self.turns)


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one assistant turn. temperature 0 means greedy."""

    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop_token_ids: tuple[int, ...] = ()
    seed: int = 0
    # One seed per prompt: each row's sample then depends on its own seed only, not on which
    # other prompts share the batch (so N ranks splitting a batch sample what one process does).
    row_seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass
class Completion:
    """One sampled continuation.

    `logprobs[i]` is log p(token_ids[i]) under the sampling distribution (logits / temperature),
    `finish_reason` is "stop" when it ended on a stop token (kept as the last token) and
    "length" when it hit max_new_tokens.
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(
                f"completion has {len(self.token_ids)} tokens but {len(self.logprobs)} logprobs"
            )


@runtime_checkable
class RolloutEngine(Protocol):
    """Generates completions for a batch of token-id prompts; takes weight updates."""

    def generate(
        self, prompts_token_ids: list[list[int]], sampling: SamplingParams
    ) -> list[Completion]:
        """One completion per prompt, in order."""
        ...

    def sync_weights(self, policy: Any) -> None:
        """Load the trainer's current weights (a module or a state dict)."""
        ...
