"""The endpoint tests' and benchmark's world: the training store plus a tiny Qwen3 warmed up by
a short SFT on reference episodes, so that greedy decoding emits tool calls and episodes run
several turns (a random tiny model only answers with blank text).

Thinking mode is on (`enable_thinking: true`): Qwen3's template then renders earlier assistant
turns exactly as they were generated, so a chat server's re-rendered history is the trainer's
token layout. With thinking off, the template drops the empty `<think>` block of every earlier
turn when a server re-renders the conversation, and greedy continuations may differ from turn 2
on (see docs/evaluation.md, "Same verdicts as local")."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SFT_TASKS = 24
# one token per digit makes the references longer: after 12 epochs the greedy model opened
# every episode with a bare "</tool_call>"; 24 gave a tool call in 18 of 18 first turns
SFT_EPOCHS = 30
ENABLE_THINKING = True


@functools.lru_cache(maxsize=1)
def endpoint_world():
    """(data dir, catalog, tasks, model folder). Cached per process; the model folder lives
    under the store's `models/` and is read-only for its users."""
    import torch

    from ecomrlve.config import EnvConfig, config_from_dict
    from ecomrlve.env import Catalog, tool_schemas
    from ecomrlve.testing.training import one_layer_spec, train_store_dir
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task
    from ecomrlve.train.model import ensure_tiny_model, load_model_and_tokenizer
    from ecomrlve.train.run import tiny_corpus
    from ecomrlve.train.sft import reference_data, train_sft

    data = train_store_dir()
    catalog = Catalog.load(data)
    tasks = [row_to_task(r) for r in read_store_tasks(data).iter_rows(named=True)]
    seen = tasks[:: max(1, len(tasks) // SFT_TASKS)][:SFT_TASKS]
    corpus = tiny_corpus(data, seen, catalog, EnvConfig(), enable_thinking=ENABLE_THINKING)
    spec = one_layer_spec(vocab_size=2048)
    base = ensure_tiny_model(data / "models", corpus, spec)
    warmed = Path(data) / "models" / "tiny-endpoint-sft"
    if (warmed / "config.json").exists():
        return data, catalog, tasks, warmed
    cfg = config_from_dict(
        {
            "agent": {
                "model": str(base),
                "max_episode_tokens": 4096,
                "enable_thinking": ENABLE_THINKING,
            },
            "training": {
                "sft_epochs": SFT_EPOCHS,
                "sft_batch_size": 8,
                "mini_batch_size": 8,
                "sft_learning_rate": 1e-2,
                "dynamic_sampling": False,
            },
        }
    )
    torch.manual_seed(0)
    model, tokenizer = load_model_and_tokenizer(str(base), device="cpu")
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=ENABLE_THINKING)
    sequences = reference_data(seen, chat, catalog, cfg.env, cfg.agent).sequences
    train_sft(model, sequences, cfg.training, pad_token_id=chat.pad_token_id)
    model.save_pretrained(warmed)
    tokenizer.save_pretrained(warmed)
    return data, catalog, tasks, warmed


@contextlib.contextmanager
def scripted_server(reply: Callable[[dict[str, Any], int], Any]) -> Iterator[str]:
    """A chat server whose answer to the n-th request of an episode is `reply(body, n)`:
    a message dict, an int (that HTTP status) or a float (sleep that long, then answer).
    Yields its base URL (`http://127.0.0.1:PORT/v1`)."""
    from fastapi import Body, FastAPI
    from fastapi.responses import JSONResponse

    from ecomrlve.testing.loopback import serve

    api = FastAPI()
    seen: dict[str, int] = {}

    @api.get("/v1/models")
    async def models() -> dict:
        return {"data": [{"id": "scripted"}]}

    @api.post("/v1/chat/completions")
    async def chat(body: dict[str, Any] = Body(...)):
        key = body["messages"][1]["content"]  # the task's prompt names the episode
        seen[key] = seen.get(key, 0) + 1
        answer = reply(body, seen[key])
        if isinstance(answer, float):
            await asyncio.sleep(answer)
            answer = {"content": "Sorry, I was slow."}
        if isinstance(answer, int):
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=answer)
        return {
            "choices": [{"message": {"role": "assistant", **answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3},
        }

    with serve(api, max_seconds=120) as url:
        yield url
