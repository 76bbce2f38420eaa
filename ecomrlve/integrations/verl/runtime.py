"""verl's runtime hooks: an AgentLoop that plays `EcomEnv` turn by turn, and `compute_score` for
data_source "ecomrlve". The verl config that names them (`ecomrlve train --engine verl`, the
pipeline's verl stage) is written by `launch`.

Tested against verl 0.9.1 (the Makefile installs `verl>=0.8,<0.10` without its dependencies;
the `verl` extra lists what it imports). Rows come from a curriculum's `verl/` shards
(`flows.shards.verl_rows`): `agent_name` names `EcomAgentLoop`, `extra_info` rebuilds the
task, `prompt` is the opening chat without tool text (the loop passes the tool schemas to the
chat template).

The loop, per episode:
1. prompt ids = the chat template over the row's messages with `tools=tool_schemas()`;
2. generate one assistant turn on verl's server manager (tokens in, tokens out, log-probs);
3. the env plays the decoded turn; its tool results and any customer message (the intent
   switch) are rendered by the chat template and appended with mask 0 (not trained on);
4. repeat until the env is done (final answer, turn limit) or the response budget is spent
   (then the episode is judged as truncated).
The verdict travels in `extra_fields["ecomrlve_verdict"]`; verl's reward loop hands it to
`compute_score` in `extra_info`, so DAPO's overlong shaping (verl's `dapo` reward manager) still
applies on top of the env's reward.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.episode.replay import verify
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.tools import tool_schemas
from ecomrlve.integrations.verl.launch import DATA_ENV
from ecomrlve.integrations.verl.rows import AGENT_NAME, DATA_SOURCE, task_from_verl_row

VERDICT_KEY = "ecomrlve_verdict"


# ---- reward ------------------------------------------------------------------------------------


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    data_dir: str | None = None,
    **_: Any,
) -> dict[str, Any]:
    """verl's reward contract for data_source "ecomrlve": the env's verdict.

    With `EcomAgentLoop` the episode was already judged and its verdict arrives in
    `extra_info["ecomrlve_verdict"]`. Without it (e.g. verl's single-turn loop) the response is
    replayed as one assistant turn against a fresh env of the row's task (catalog from
    `data_dir` or $ECOMRLVE_DATA). Returns {"score", "success", "steps", <components>}.
    """
    if data_source != DATA_SOURCE:
        raise NotImplementedError(f"ecomrlve's compute_score scores {DATA_SOURCE!r} rows only")
    extra_info = dict(extra_info or {})
    verdict = extra_info.get(VERDICT_KEY)
    if verdict is None:
        task = task_from_verl_row(extra_info, {"ground_truth": ground_truth})
        catalog = Catalog.load(_data_dir(data_dir))
        verdict = verify(task, [solution_str], catalog).to_json()
    return _score(verdict)


def _score(verdict: dict[str, Any]) -> dict[str, Any]:
    out = {"score": float(verdict["reward"]), "success": float(bool(verdict["success"]))}
    out["steps"] = float(verdict["steps"])
    out.update({f"reward_{k}": float(v) for k, v in verdict["components"].items()})
    return out


def _data_dir(data_dir: str | None) -> str:
    found = data_dir or os.environ.get(DATA_ENV)
    if not found:
        raise ValueError(f"no data directory for the catalog: pass data_dir or set {DATA_ENV}")
    return found


# ---- the agent loop ----------------------------------------------------------------------------


def _agent_loop_base() -> type:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase

    return AgentLoopBase


class _Renderer:
    """Chat-template token bookkeeping for one tokenizer (prompt, then observation deltas)."""

    def __init__(self, tokenizer: Any, template_kwargs: dict[str, Any]):
        self.tokenizer = tokenizer
        self.kwargs = dict(template_kwargs)
        self.end_ids = tokenizer.encode("<|im_end|>\n", add_special_tokens=False)
        anchor = [{"role": "system", "content": "x"}]
        self.anchor = anchor
        self.anchor_text = self._text(anchor, generation=False)

    def _text(self, messages: list[dict[str, Any]], generation: bool, **extra: Any) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation, **self.kwargs, **extra
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict]) -> list[int]:
        return self.encode(self._text(messages, generation=True, tools=tools))

    def observation_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """Tokens of tool/user messages after an assistant turn, plus the next generation prompt
        (what the chat template would render there)."""
        text = self._text(self.anchor + messages, generation=True)
        if not text.startswith(self.anchor_text):
            raise ValueError("the chat template renders a prefix differently; cannot extend")
        return self.encode(text[len(self.anchor_text) :])

    def close_turn(self, generated: list[int]) -> list[int]:
        """Tokens that end an assistant turn the way the template renders it (e.g. after
        `<|im_end|>` the template adds a newline the model did not generate)."""
        end = self.end_ids
        if generated[-len(end) :] == end:
            return []
        if generated[-(len(end) - 1) :] == end[:-1]:
            return end[-1:]
        return end


@dataclass
class EpisodeTokens:
    """Token ids of one episode: the prompt, then the response with its mask and log-probs."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None

    def add(self, ids: list[int], trained: bool, logprobs: list[float] | None = None) -> None:
        self.response_ids += ids
        self.response_mask += [int(trained)] * len(ids)
        if self.response_logprobs is not None:
            self.response_logprobs += logprobs if logprobs is not None else [0.0] * len(ids)


def _make_agent_loop_class() -> type:
    """verl's agent-loop class for our env, built on first use (verl is imported only then).
    Over 80 lines only because it holds the class: `__init__`, `catalog` and the 54-line `run`
    that plays one episode."""
    AgentLoopBase = _agent_loop_base()
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput, register

    class EcomAgentLoop(AgentLoopBase):
        """Plays one `EcomEnv` episode on verl's server manager (see the module docstring)."""

        _catalog: Catalog | None = None

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.response_length = int(self.rollout_config.response_length)
            self.prompt_length = int(self.rollout_config.prompt_length)
            ours = self.config.get("ecomrlve", None) or {}
            self.data_dir = ours.get("data_dir") or os.environ.get(DATA_ENV)
            # per assistant turn (agent.max_new_tokens); the episode's budget is response_length
            self.turn_tokens = int(ours.get("max_turn_tokens") or self.response_length)
            env_file = ours.get("env_config", None)
            self.env_config = (
                EnvConfig.model_validate_json(Path(env_file).read_text()) if env_file else None
            )
            self.renderer = _Renderer(self.tokenizer, self.apply_chat_template_kwargs)

        def catalog(self) -> Catalog:
            if EcomAgentLoop._catalog is None:
                EcomAgentLoop._catalog = Catalog.load(_data_dir(self.data_dir))
            return EcomAgentLoop._catalog

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            task = task_from_verl_row(dict(kwargs["extra_info"]), dict(kwargs["reward_model"]))
            env = EcomEnv(task, self.catalog(), self.env_config)
            env.reset(include_tools=False)
            messages = [dict(m) for m in kwargs["raw_prompt"]]
            prompt_ids = self.renderer.prompt_ids(messages, tool_schemas())
            if len(prompt_ids) > self.prompt_length:  # verl pads prompts to this length
                raise ValueError(
                    f"task {task.task_id}: the prompt is {len(prompt_ids)} tokens, over "
                    f"data.max_prompt_length={self.prompt_length}; raise it"
                )
            tokens = EpisodeTokens(list(prompt_ids), [], [], [])
            request_id = uuid4().hex
            turns = 1
            while not env.done:
                budget = self.response_length - len(tokens.response_ids)
                if budget <= 0:
                    break
                params = {**sampling_params, "max_tokens": min(budget, self.turn_tokens)}
                output = await self.server_manager.generate(
                    request_id=request_id,
                    prompt_ids=tokens.prompt_ids + tokens.response_ids,
                    sampling_params=params,
                )
                generated = list(output.token_ids)[:budget]
                logprobs = list(output.log_probs)[:budget] if output.log_probs else None
                tokens.add(generated, trained=True, logprobs=logprobs)
                if tokens.response_logprobs is not None and logprobs is None:
                    tokens.response_logprobs = None
                turns += 1
                text = self.tokenizer.decode(generated, skip_special_tokens=False)
                result = env.step(text.replace("<|im_end|>", "").replace("<|endoftext|>", ""))
                if env.done or len(tokens.response_ids) >= self.response_length:
                    break
                tokens.add(self.renderer.close_turn(generated), trained=False)
                tokens.add(self.renderer.observation_ids(result.observation), trained=False)
                turns += 1
            verdict = env.verdict if env.verdict is not None else env.finish()
            n = self.response_length
            return AgentLoopOutput(
                prompt_ids=tokens.prompt_ids,
                response_ids=tokens.response_ids[:n],
                response_mask=tokens.response_mask[:n],
                response_logprobs=tokens.response_logprobs[:n]
                if tokens.response_logprobs
                else None,
                num_turns=turns,
                metrics=AgentLoopMetrics(),
                extra_fields={
                    VERDICT_KEY: verdict.to_json(),
                    "turn_scores": [],
                    "tool_rewards": [],
                },
            )

    EcomAgentLoop.__module__ = __name__
    EcomAgentLoop.__qualname__ = "EcomAgentLoop"
    return register(AGENT_NAME)(EcomAgentLoop)  # after naming: verl records the import path


def __getattr__(name: str) -> Any:
    """`EcomAgentLoop` is built (and registered with verl) on first access, so importing this
    module for `compute_score` does not import verl."""
    if name == "EcomAgentLoop":
        cls = _make_agent_loop_class()
        globals()["EcomAgentLoop"] = cls
        return cls
    raise AttributeError(name)
