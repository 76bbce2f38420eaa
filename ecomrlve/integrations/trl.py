"""TRL: an `environment_factory` class for `GRPOTrainer` whose tools are the shop's tools, and a
reward function that reads the env's verdict after the final answer.

    from trl import GRPOConfig, GRPOTrainer
    from ecomrlve.integrations.trl import EcomToolEnv, ecom_reward, load_curriculum_dataset

    model = "data/runs/default/model"                                # or any Qwen3 model folder
    trainer = GRPOTrainer(
        model=model, processing_class=trl_tokenizer(model), args=GRPOConfig(...),
        train_dataset=load_curriculum_dataset("data", "default"),    # verl rows of a curriculum
        environment_factory=EcomToolEnv.factory("data"), reward_funcs=[ecom_reward],
    )

How it maps: TRL calls `reset(**row)` with the dataset row (a curriculum's verl row: `prompt`,
`extra_info`, `reward_model`), and the task is rebuilt from it. Each public method is one
tool (same name, arguments and descriptions as `tool_schemas()`); one tool call is played as one
env turn, and its result is the tool message. When the customer speaks mid-episode (the intent
switch) their words follow the tool result. TRL never shows the environment the model's final
answer, so `ecom_reward` feeds it: it plays the completion's last assistant message (the answer
without a tool call) and returns the verifier's reward (a completion cut off mid-tool-call is
judged as truncated). `get_json_schema` derives every method's schema; `search`'s `filters` is
an object whose keys are listed in its description (the JSON-Schema nesting that
`tool_schemas()` has cannot be spelled in a Python type hint `get_json_schema` reads).

What TRL needs from the tokenizer, `trl_tokenizer` sets: TRL parses tool calls only for chat
templates it knows by their exact text, so the project's tiny model (whose template has Qwen3's
structure but not its text) is given TRL's Qwen3 response template; multi-turn GRPO needs a
prefix-preserving template, so every assistant turn keeps its think block (what TRL's own
`qwen3_training.jinja` does); thinking is off unless `chat_template_kwargs={"enable_thinking":
True}` (TRL passes `GRPOConfig.chat_template_kwargs` to the template); and a tool whose name is
one of ours is written in the system turn as `tool_schemas()` writes it (TRL hands the template
the schemas `get_json_schema` derives from the methods; ours are the ones the model was trained
on, with `search`'s nested filters, and the tiny tokenizer's BPE was learnt on their text).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.tools import TOOL_SPECS, ToolSpec, tool_schemas
from ecomrlve.integrations.verl.rows import VERL_DIR, VERL_VAL_FILE, task_from_verl_row

_PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[str],
    "object": dict,
}


@dataclass(frozen=True)
class TRLWorld:
    """What every environment instance shares: the catalog and the env config."""

    catalog: Catalog
    env_config: EnvConfig


class EcomToolEnv:
    """One rollout's episode for TRL's `GRPOTrainer(environment_factory=...)`.

    The tool methods are attached below from `TOOL_SPECS` (one per shop tool).
    """

    def __init__(self, world: TRLWorld):
        self.world = world
        self.env: EcomEnv | None = None
        self.verdict: Any = None

    @classmethod
    def factory(
        cls, data: str | os.PathLike, env_config: EnvConfig | None = None
    ) -> Callable[[], EcomToolEnv]:
        """A zero-argument factory (what TRL calls) sharing one loaded catalog."""
        world = TRLWorld(Catalog.load(data), env_config or EnvConfig())
        return lambda: cls(world)

    def reset(self, **row: Any) -> None:
        """Start the episode of a verl/TRL row (`extra_info` + `reward_model`); the row's
        `prompt` already holds the opening messages, so nothing is appended to it."""
        extra, reward_model = row.get("extra_info"), row.get("reward_model")
        if not isinstance(extra, dict) or not isinstance(reward_model, dict):
            raise ValueError(
                "EcomToolEnv.reset needs a curriculum verl row (extra_info, reward_model)"
            )
        task = task_from_verl_row(extra, reward_model)
        self.env = EcomEnv(task, self.world.catalog, self.world.env_config)
        self.env.reset(include_tools=False)
        self.verdict = None
        return None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        env = self.env
        if env is None:
            return json.dumps({"error": "no episode: the trainer did not call reset"})
        if env.done:
            return json.dumps({"error": "the episode is over (turn limit reached)", "code": "done"})
        result = env.step({"content": None, "tool_calls": [{"name": name, "arguments": arguments}]})
        text = "\n".join(m["content"] for m in result.observation if m["role"] == "tool")
        said = [m["content"] for m in result.observation if m["role"] == "user"]
        if said:
            text += "\n\nThe customer adds: " + " ".join(said)
        return text

    def _finish(self, final_answer: str | None) -> Any:
        """Play the final answer (None: the rollout was cut) and return the `Verdict`.

        Private: every public method of this class is offered to the model as a tool.
        """
        env = self.env
        if env is None:
            raise ValueError("no episode: the trainer did not call reset")
        if self.verdict is None:
            if final_answer is not None and not env.done:
                env.step(final_answer)
            self.verdict = env.verdict if env.verdict is not None else env.finish()
        return self.verdict


def _docstring(spec: ToolSpec) -> str:
    """Google-style docstring from the tool's schema (what `get_json_schema` parses)."""
    params = spec.schema["function"]["parameters"]["properties"]
    lines = [spec.description, "", "Args:"]
    for name, prop in params.items():
        text = " ".join((prop.get("description") or name).split())
        if prop.get("type") == "object" and "properties" in prop:
            keys = ", ".join(f"{k} ({v.get('type')})" for k, v in prop["properties"].items())
            text += f" An object with any of the keys: {keys}."
        lines.append(f"    {name}: {text}")
    if not params:
        lines.pop()
    return "\n".join(lines)


def _tool_method(spec: ToolSpec) -> Callable[..., str]:
    properties = spec.schema["function"]["parameters"]["properties"]

    def method(self: EcomToolEnv, **arguments: Any) -> str:
        return self._call(spec.name, {k: v for k, v in arguments.items() if v is not None})

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for name in spec.params:
        hint = _PY_TYPES[properties[name]["type"]]
        if name in spec.required:
            default = inspect.Parameter.empty
        else:
            default = properties[name].get("default")
            hint = hint if default is not None else hint | None
        annotations[name] = hint
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=hint
            )
        )
    annotations["return"] = str
    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = _docstring(spec)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)
    return method


for _spec in TOOL_SPECS.values():
    setattr(EcomToolEnv, _spec.name, _tool_method(_spec))


def _final_answer(completion: Any) -> str | None:
    """The completion's last assistant message when it calls no tool (else None: cut off)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(completion or []):
        if message.get("role") != "assistant":
            continue
        if message.get("tool_calls"):
            return None
        content = message.get("content")
        if isinstance(content, list):  # multimodal-style parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content or ""
    return None


def ecom_reward(
    completions: list[Any], environments: list[EcomToolEnv] | None = None, **_: Any
) -> list[float]:
    """TRL reward function: the env's verdict reward after each completion's final answer."""
    if environments is None:
        raise ValueError("ecom_reward needs GRPOTrainer(environment_factory=EcomToolEnv...)")
    return [
        float(env._finish(_final_answer(completion)).reward)
        for completion, env in zip(completions, environments, strict=True)
    ]


def load_curriculum_dataset(data: str | os.PathLike, name: str, split: str = "train") -> Any:
    """A curriculum's verl rows as a `datasets.Dataset` (`split`: "train" or "validation").

    Same rows as `load_dataset(DIR/curricula/NAME)[split]` (the folder's dataset card names the
    files), read without the card.
    """
    from datasets import load_dataset

    from ecomrlve.store import DataPaths, validate_identifier

    folder = DataPaths.of(data).curricula / validate_identifier(name, "curriculum name")
    if split == "train":
        files = sorted(str(p) for p in (folder / VERL_DIR).glob("shard-*.parquet"))
    elif split == "validation":
        files = [str(folder / VERL_VAL_FILE)] if (folder / VERL_VAL_FILE).exists() else []
    else:
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    if not files:
        command = DataPaths.of(data).curriculum_build_command(name)
        raise ValueError(f"no {split} rows in {folder}: run `{command}` first")
    return load_dataset("parquet", data_files=files, split="train")


# ---------------------------------------------------------------------------------------------
# The tokenizer TRL needs
# ---------------------------------------------------------------------------------------------

# (what QWEN3_STYLE_CHAT_TEMPLATE says, what the TRL template says instead)
_TOOL_LINE = "        {{- tool | tojson }}\n"
_OUR_TOOL_LINE = """\
        {%- set fn = tool.function if tool.function is defined else tool %}
        {%- if fn.name in ecom_tool_text %}
            {{- ecom_tool_text[fn.name] }}
        {%- else %}
            {{- tool | tojson }}
        {%- endif %}
"""
_ALWAYS_THINK = """\
        {{- '<|im_start|>' + message.role + '\\n<think>\\n' \
+ reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
"""
_THINK_OFF_IF_FALSE = "{%- if enable_thinking is defined and enable_thinking is false %}"
_THINK_OFF_UNLESS_TRUE = "{%- if not (enable_thinking is defined and enable_thinking) %}"


def trl_chat_template() -> str:
    """The project's Qwen3-style chat template as TRL's GRPO needs it (see the module doc)."""
    from ecomrlve.train.model import HISTORY_THINK_BLOCK, QWEN3_STYLE_CHAT_TEMPLATE

    text = json.dumps(
        {s["function"]["name"]: json.dumps(s, ensure_ascii=False) for s in tool_schemas()},
        ensure_ascii=False,
    )
    template = "{%- set ecom_tool_text = " + text + " %}\n" + QWEN3_STYLE_CHAT_TEMPLATE
    for old, new in (
        (_TOOL_LINE, _OUR_TOOL_LINE),
        (HISTORY_THINK_BLOCK, _ALWAYS_THINK),
        (_THINK_OFF_IF_FALSE, _THINK_OFF_UNLESS_TRUE),
    ):
        if template.count(old) != 1:
            raise ValueError(f"the Qwen3-style chat template changed; cannot find {old.strip()!r}")
        template = template.replace(old, new)
    return template


def trl_tokenizer(model: str | os.PathLike | Any) -> Any:
    """The tokenizer to give `GRPOTrainer(processing_class=...)` for a Qwen3-template model (a
    local model folder, or a tokenizer already loaded): `trl_chat_template()` and TRL's Qwen3
    response template, so TRL parses `<tool_call>` blocks into tool calls."""
    from transformers import AutoTokenizer, PreTrainedTokenizerBase
    from trl import chat_template_utils as trl_templates

    if isinstance(model, PreTrainedTokenizerBase):
        tokenizer = model
    else:
        if not os.path.isdir(model):
            raise ValueError(f"trl_tokenizer needs a local model folder, {str(model)!r} is not one")
        tokenizer = AutoTokenizer.from_pretrained(os.fspath(model), local_files_only=True)
    vocab = tokenizer.get_vocab()
    missing = [
        t for t in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>") if t not in vocab
    ]
    if missing:
        raise ValueError(f"not a Qwen3-template tokenizer: no {', '.join(missing)} token")
    tokenizer.chat_template = trl_chat_template()
    if getattr(trl_templates, "_SUPPORTS_RESPONSE_TEMPLATE", False):
        tokenizer.response_template = trl_templates.qwen3_template
    else:
        tokenizer.response_schema = trl_templates.qwen3_schema
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


__all__ = [
    "EcomToolEnv",
    "TRLWorld",
    "ecom_reward",
    "load_curriculum_dataset",
    "trl_chat_template",
    "trl_tokenizer",
]
