"""Episodes as token sequences, rendered with the tokenizer's own chat template and `tools=`.

For Qwen3 that is the Hermes format: tool schemas in the system turn, `<tool_call>{json}
</tool_call>` inside assistant turns, tool results grouped in a user turn as `<tool_response>`
blocks. The sequence is built incrementally, never re-rendered: the assistant's tokens are kept
exactly as sampled (so their log-probs stay valid), and each observation is the text the
template adds after the assistant's stop token, tokenized on its own. Qwen3's template is not
prefix-stable (it drops earlier turns' `<think>` blocks), which is why we take deltas.

Loss mask: 1 on the tokens the assistant produced (its turn text and stop token), 0 on the
prompt, tool responses and user messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_PROBE_USER = {"role": "user", "content": "\u2063"}
_PROBE_REPLY = "\u2064"


class ChatFormat:
    """The tokenizer's chat template, the tool schemas and `enable_thinking`, in one place."""

    def __init__(
        self, tokenizer: Any, tools: list[dict[str, Any]], *, enable_thinking: bool = False
    ) -> None:
        self.tokenizer = tokenizer
        self.tools = tools
        self.enable_thinking = enable_thinking
        stops = [tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id]
        unk = getattr(tokenizer, "unk_token_id", None)
        self.stop_token_ids: tuple[int, ...] = tuple(
            dict.fromkeys(t for t in stops if t is not None and t != unk)
        )
        if not self.stop_token_ids:
            raise ValueError("tokenizer has neither <|im_end|> nor an eos token to stop turns")
        self.pad_token_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_token_ids[0]
        )
        self._after_stop = self._text_after_stop()

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        generation_prompt: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """`messages` as text, with `tools` (default: the chat's own) in the system turn."""
        return self.tokenizer.apply_chat_template(
            messages,
            tools=(self.tools if tools is None else tools) or None,
            tokenize=False,
            add_generation_prompt=generation_prompt,
            enable_thinking=self.enable_thinking,
        )

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt_ids(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """The opening messages (system, user) up to the assistant's generation prompt, offering
        `tools` (default: the chat's own; the tool curriculum offers fewer)."""
        return self.encode(self.render(messages, generation_prompt=True, tools=tools))

    def observation_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """What follows the assistant's stop token: the new tool/user messages, then the next
        generation prompt. Rendered by the template as the difference between a probe
        conversation with and without them."""
        base = self.render([_PROBE_USER], generation_prompt=False)
        full = self.render([_PROBE_USER, *messages], generation_prompt=True)
        if not full.startswith(base):
            raise ValueError("chat template is not prefix-stable for tool/user messages")
        return self.encode(self._after_stop + full[len(base) :])

    def assistant_ids(self, text: str) -> list[int]:
        """A scripted assistant turn (e.g. a reference solution) as the model would emit it."""
        return [*self.encode(text), self.stop_token_ids[0]]

    def decode_turn(self, token_ids: list[int]) -> str:
        """Assistant turn text for the env parser (markup such as <tool_call> is kept)."""
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)

    def _text_after_stop(self) -> str:
        """What the template writes between an assistant's stop token and the next message."""
        stop_text = self.tokenizer.convert_ids_to_tokens(self.stop_token_ids[0])
        text = self.render(
            [_PROBE_USER, {"role": "assistant", "content": _PROBE_REPLY}], generation_prompt=False
        )
        marker = _PROBE_REPLY + stop_text
        at = text.rfind(marker)
        if at < 0:
            raise ValueError(f"chat template does not end assistant turns with {stop_text}")
        return text[at + len(marker) :]


@dataclass
class TokenSequence:
    """One episode's tokens with the loss mask and the sampling log-probs, kept aligned."""

    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    prompt_length: int = 0

    def add_prompt(self, ids: list[int]) -> None:
        self.add_context(ids)
        self.prompt_length = len(self.token_ids)

    def add_context(self, ids: list[int]) -> None:
        """Tokens the model reads but is not trained on (prompt, tool results, user turns)."""
        self.token_ids.extend(ids)
        self.loss_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))

    def add_generated(self, ids: list[int], logprobs: list[float] | None = None) -> None:
        """Assistant tokens: trained on."""
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"{len(ids)} tokens but {len(logprobs)} logprobs")
        self.token_ids.extend(ids)
        self.loss_mask.extend([1] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def response_length(self) -> int:
        """Tokens after the opening prompt (assistant turns and observations)."""
        return len(self.token_ids) - self.prompt_length

    @property
    def generated_tokens(self) -> int:
        return sum(self.loss_mask)
