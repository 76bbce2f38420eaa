"""Shared builders of the training tests: a one-layer tiny Qwen3, a small generated store.

Plain cached functions (not fixtures), so each test module wraps what it needs in a fixture
and every module shares one build per session."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TRAIN_PRODUCTS = 2000
TRAIN_TASKS = 72

# a whole SFT + DAPO run through `ecomrlve train` in a minute or two on 2 cores (the CLI tests)
TINY_RUN: dict = {
    "env": {"max_steps": 4},
    "agent": {"model": "tiny-qwen3", "max_new_tokens": 24, "max_episode_tokens": 1024},
    "training": {
        "total_steps": 2,
        "prompts_per_step": 2,
        "group_size": 2,
        "mini_batch_size": 4,
        "max_num_gen_batches": 2,
        "overlong_buffer": 128,
        "learning_rate": 1.0e-4,
        "sft_epochs": 1,
        "sft_batch_size": 16,
        "sft_learning_rate": 3.0e-3,
        "eval_tasks": 4,
        "eval_samples": 2,
        "adaptive_episodes": 4,
    },
}


def run_offline(command: list[str], *, timeout: float) -> str:
    """Run `command` from the repository root, offline, one thread a process and without the
    caller's WORLD_SIZE; its stdout. A failed run raises AssertionError with its stderr's tail;
    `timeout` is a hang guard (subprocess.TimeoutExpired)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("WORLD_SIZE", None)
    done = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr[-5000:])
    return done.stdout


@functools.lru_cache(maxsize=1)
def tiny_lm_pair():
    """(model, tokenizer): a 1-layer Qwen3 (head_dim 32) over a small byte-level BPE.
    Shared: copy the model before changing its weights."""
    from ecomrlve.train.model import build_tiny_qwen3, build_tiny_tokenizer

    corpus = [
        '<tool_call>\n{"name": "search", "arguments": {"query": "red running shoes"}}\n'
        "</tool_call>",
        "Your order O1001 shipped on 2025-03-02 and arrives in 3 days.",
    ] * 20
    tokenizer = build_tiny_tokenizer(corpus, 400)
    return build_tiny_qwen3(tokenizer, one_layer_spec(512)), tokenizer


def one_layer_spec(max_position_embeddings: int = 8192, vocab_size: int = 4096):
    """The smallest tiny Qwen3 the training tests use: one layer, hidden 64, head_dim 32."""
    from ecomrlve.train.model import TinySpec

    return TinySpec(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=max_position_embeddings,
    )


def small_qwen3_config(**overrides):
    """A `Qwen3Config` for weight-level tests that need no tokenizer: 2 layers, vocab 48,
    hidden 32, head_dim 32, tied embeddings, pad 0, eos 1; `overrides` replace any field."""
    from transformers import Qwen3Config

    fields = {
        "vocab_size": 48,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "tie_word_embeddings": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": None,
    }
    return Qwen3Config(**(fields | overrides))


@contextlib.contextmanager
def deterministic_algorithms() -> Iterator[None]:
    """torch's deterministic algorithms on inside the block, the previous setting after."""
    import torch

    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


@functools.lru_cache(maxsize=1)
def train_store_dir() -> Path:
    """A data directory: 2k-product catalog and 72 easy generated tasks (<= 3 steps).
    Treat it as read-only apart from result tables."""
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.generators import generate_tasks, write_tasks

    data = Path(tempfile.mkdtemp(prefix="ecomrlve-train-store-"))
    atexit.register(shutil.rmtree, data, ignore_errors=True)
    build_catalog(data, TRAIN_PRODUCTS, seed=3)
    tasks, _ = generate_tasks(data, TRAIN_TASKS, seed=5, difficulty=(0, 1), max_steps=3)
    write_tasks(data, tasks, "gen_s5")
    return data


def dapo_world(models_dir: Path, total_steps: int, max_new_tokens: int):
    """(catalog, task frame, tiny model folder, config) for runs of the real DAPO loop: the
    env fixtures' tasks, a 2-layer tiny Qwen3 whose tokenizer is trained on their rendered
    prompts, and a config small enough for a few CPU steps (no SFT, no dynamic sampling)."""
    import polars as pl

    from ecomrlve.config import EnvConfig, config_from_dict
    from ecomrlve.env import EcomEnv, tool_schemas
    from ecomrlve.testing.env_tasks import all_tasks, small_catalog
    from ecomrlve.train.model import TinySpec, ensure_tiny_model, render_chat_text

    catalog = small_catalog()
    tasks = all_tasks(catalog)
    frame = pl.DataFrame([t.to_row() for t in tasks])
    corpus = []
    for task in tasks:  # the rendered prompts, so the tiny tokenizer compresses them well
        env = EcomEnv(task, catalog, EnvConfig())
        env.reset(include_tools=False)
        corpus.append(render_chat_text(env.messages, tool_schemas(), enable_thinking=False))
    spec = TinySpec(vocab_size=2048, hidden_size=64, intermediate_size=128, num_hidden_layers=2)
    model_dir = ensure_tiny_model(models_dir, corpus, spec)
    cfg = config_from_dict(
        {
            "env": {"max_steps": 2},
            "agent": {
                "model": str(model_dir),
                "max_new_tokens": max_new_tokens,
                "max_episode_tokens": 1024,
            },
            "training": {
                "total_steps": total_steps,
                "prompts_per_step": 2,
                "group_size": 2,
                "mini_batch_size": 2,
                "learning_rate": 1e-3,
                "dynamic_sampling": False,
                "overlong_buffer": 256,
                "adaptive_episodes": 2,
                "sft_epochs": 0,
                "seed": 3,
            },
        }
    )
    return catalog, frame, model_dir, cfg


# ---- a tiny rewardable task for the real DAPO loop (the env is swapped out via `play`)
EVEN_TURN_TOKENS = 6
# the DAPO settings under which the tiny model learns the even-id task in a few steps
EVEN_LEARNING: dict = {
    "learning_rate": 2e-2,
    "weight_decay": 0.0,
    "dynamic_sampling_metric": "reward",
    "overlong_buffer": 16,
    "adaptive_difficulty": False,
    "seed": 1,
}
EVEN_PROMPT = "<|im_start|>user\nred running shoes<|im_end|>\n<|im_start|>assistant\n"


def even_id_play(tasks, engine, chat, catalog, *, samples_per_task, group_seeds, **_):
    """`run_episodes`' stand-in: one-turn episodes from a fixed prompt; reward = share of even
    token ids sampled. Importable by name, so a rollout process can play it too."""
    import numpy as np

    from ecomrlve.env.judge.verifier import Verdict
    from ecomrlve.train.chat import TokenSequence
    from ecomrlve.train.engine import SamplingParams
    from ecomrlve.train.rollout import Episode

    prompt = chat.encode(EVEN_PROMPT)
    episodes = []
    for group, task in enumerate(tasks):
        seeds = tuple(
            int(np.random.SeedSequence([group_seeds[group], s]).generate_state(1)[0])
            for s in range(samples_per_task)
        )
        sampling = SamplingParams(max_new_tokens=EVEN_TURN_TOKENS, row_seeds=seeds)
        for sample, completion in enumerate(engine.generate([prompt] * samples_per_task, sampling)):
            sequence = TokenSequence()
            sequence.add_prompt(prompt)
            sequence.add_generated(completion.token_ids, completion.logprobs)
            share = float(np.mean([t % 2 == 0 for t in completion.token_ids]))
            verdict = Verdict(task.task_id, share >= 0.5, share, {"even": share}, 1)
            episodes.append(Episode(task, group, sample, sequence, [""], verdict, finish="length"))
    return episodes


def even_mass(policy, chat) -> float:
    """Probability of an even next token right after `EVEN_PROMPT`."""
    import torch

    ids = torch.tensor([chat.encode(EVEN_PROMPT)])
    with torch.no_grad():
        probs = torch.softmax(policy(input_ids=ids).logits[0, -1].float(), dim=-1)  # (V,)
    return float(probs[::2].sum())


def failing_play(tasks, engine, chat, catalog, **_):
    """A `play` that raises, to see a rollout process's error reach the trainer."""
    raise RuntimeError(f"cannot play {len(tasks)} task(s)")


def running(pid: int) -> bool:
    """Whether process `pid` still runs (Linux /proc); a zombie has ended."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def outliving(pids: list[int], bound_s: float = 60.0) -> list[int]:
    """The processes of `pids` still running once all have ended or `bound_s` has passed (a
    bound, not a measurement: it polls every 0.1 s)."""
    deadline = time.monotonic() + bound_s
    while any(map(running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if running(pid)]
