"""Evaluation through an OpenAI-compatible endpoint vs the local HF engine, on the same model.

Serves the SFT-warmed tiny Qwen3 of the endpoint tests with the loopback server (its own
process on 127.0.0.1, which stops by itself), plays the same tasks greedily through
`/v1/chat/completions` at concurrency 1, 8 and 32, then locally with `HFEngine` (lockstep
batches), and prints episodes/s and p50/p99 turn latency. Bounded: a fixed number of episodes,
and the server exits after --max-seconds.

    .venv/bin/python benchmarks/endpoint.py [--tasks 24] [--concurrency 1,8,32]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ecomrlve.config import config_from_dict
from ecomrlve.env import tool_schemas
from ecomrlve.testing.endpoint import ENABLE_THINKING, endpoint_world
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.engines.endpoint import EndpointEngine, run_chat_episodes
from ecomrlve.train.engines.hf import HFEngine
from ecomrlve.train.evaluate import evaluate_episodes
from ecomrlve.train.model import load_model_and_tokenizer

console = Console(width=120)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


class TimedEngine:
    """HFEngine with each `generate` call (one turn of every active episode) timed."""

    def __init__(self, engine: HFEngine) -> None:
        self.engine = engine
        self.calls: list[float] = []

    def generate(self, prompts, sampling):
        started = time.perf_counter()
        out = self.engine.generate(prompts, sampling)
        self.calls.append(time.perf_counter() - started)
        return out

    def sync_weights(self, policy) -> None:
        self.engine.sync_weights(policy)


def start_server(model_dir: Path, max_seconds: float) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "ecomrlve", "loopback", "--model", str(model_dir)]
    command += ["--name", "tiny", "--max-seconds", str(max_seconds)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if not line.startswith("serving"):
        server.kill()
        raise SystemExit(f"the loopback server did not start: {line!r}")
    return server, line.split(" at ")[1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24, help="episodes per setting")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="server lifetime")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]

    started = time.perf_counter()
    _, catalog, tasks, model_dir = endpoint_world()
    console.print(f"world (store + SFT-warmed tiny model): {time.perf_counter() - started:.1f} s")
    chosen = tasks[:: max(1, len(tasks) // args.tasks)][: args.tasks]
    cfg = config_from_dict(
        {
            "env": {"max_steps": 4},
            "agent": {
                "model": str(model_dir),
                "max_new_tokens": 64,
                "max_episode_tokens": 4096,
                "temperature": 0.0,
                "enable_thinking": ENABLE_THINKING,
            },
        }
    )
    rows: list[tuple[str, int, float, float, float, float]] = []

    server, url = start_server(model_dir, args.max_seconds)
    try:
        kwargs = {"enable_thinking": ENABLE_THINKING}
        for concurrency in levels:
            engine = EndpointEngine(
                url, "tiny", concurrency=concurrency, chat_template_kwargs=kwargs
            )
            began = time.perf_counter()
            episodes = run_chat_episodes(
                chosen, engine, catalog, env_config=cfg.env, agent=cfg.agent
            )
            wall = time.perf_counter() - began
            latencies = [t for e in episodes for t in e.turn_latencies]
            turns = sum(len(e.turns) for e in episodes)
            rows.append(
                (
                    f"endpoint c={concurrency}",
                    len(episodes),
                    len(episodes) / wall,
                    turns / wall,
                    quantile(latencies, 0.5),
                    quantile(latencies, 0.99),
                )
            )
    finally:
        server.terminate()
        server.wait(timeout=30)

    policy, tokenizer = load_model_and_tokenizer(str(model_dir), device="cpu")
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=ENABLE_THINKING)
    timed = TimedEngine(HFEngine(policy, chat.pad_token_id))
    began = time.perf_counter()
    report = evaluate_episodes(
        chosen, timed, chat, catalog, cfg, samples=1, k=1, seed=0, stage="bench"
    )
    wall = time.perf_counter() - began
    turns = int(report.episodes["steps"].sum())
    rows.append(
        (
            "local HF (lockstep)",
            report.episodes.height,
            report.episodes.height / wall,
            turns / wall,
            quantile(timed.calls, 0.5),
            quantile(timed.calls, 0.99),
        )
    )

    table = Table(title=f"{len(chosen)} greedy episodes, tiny Qwen3 on CPU (max 4 turns, 64 tok)")
    for column in ("engine", "episodes", "episodes/s", "turns/s", "turn p50 s", "turn p99 s"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, count, eps, tps, p50, p99 in rows:
        table.add_row(name, str(count), f"{eps:.2f}", f"{tps:.2f}", f"{p50:.3f}", f"{p99:.3f}")
    console.print(table)
    console.print(
        "turn latency: endpoint = one chat request (queueing included); local = one lockstep "
        "generate call over every active episode"
    )


if __name__ == "__main__":
    main()
