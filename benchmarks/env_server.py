"""Loopback load on `ecomrlve env-server`: sessions held, steps/s, p50/p99 latency.

    python benchmarks/env_server.py                       # 128 sessions, 30 s
    python benchmarks/env_server.py --sessions 32 --seconds 10

Builds a small store (3k products, 180 tasks) once under --data, starts `ecomrlve env-server` as
a subprocess on 127.0.0.1 (the real CLI, token and limits on), then opens N WebSocket sessions
at once from this process (OpenEnv's client, one asyncio loop). Each session plays reference
episodes (reset, then the reference turns, ending with the final answer) until the time is up;
every verdict is checked to be a success. Latency is one request's round trip (reset or step).
Bounded: at most --seconds of load, sessions <= the server's cap. The client loop and the
server share the machine's cores, so the figures are a floor for a server with its own cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from ecomrlve.integrations.env_server import EcomAction, EcomEnvClient

ECOMRLVE = [sys.executable, "-m", "ecomrlve"]


def build_store(data: Path, products: int, tasks: int) -> dict[str, list]:
    """The store and every task's reference turns (built once, reused on later runs)."""
    references = data / "reference.jsonl"
    if not references.exists():
        for args in (
            ["catalog", "--products", str(products)],
            ["generate", "--tasks", str(tasks)],
            ["solve", "--out", str(references)],
        ):
            subprocess.run([*ECOMRLVE, *args, "--data", str(data)], check=True)
    rows = [json.loads(line) for line in references.read_text().splitlines()]
    return {row["task_id"]: row["turns"] for row in rows}


def start_server(data: Path, token: str, port: int, sessions: int) -> subprocess.Popen:
    env = {**os.environ, "ECOMRLVE_ENV_TOKEN": token}
    command = [*ECOMRLVE, "env-server", "--data", str(data), "--port", str(port)]
    command += ["--max-sessions", str(sessions), "--max-steps", "64"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit("the env server did not start")
        time.sleep(0.2)


async def session(
    url: str, token: str, episodes: list[tuple[str, list]], stop_at: float, held: asyncio.Event
) -> tuple[list[float], int, int, bool]:
    latencies: list[float] = []
    played = successes = 0
    client = EcomEnvClient(url, token=token, message_timeout_s=120)
    await client.connect()
    opened = False
    try:
        await client.reset(task_id=episodes[0][0])  # the session exists once reset answers
        opened = True
        held.set()
        i = 0
        while time.monotonic() < stop_at:
            task_id, turns = episodes[i % len(episodes)]
            i += 1
            t = time.perf_counter()
            await client.reset(task_id=task_id)
            latencies.append(time.perf_counter() - t)
            for turn in turns:
                t = time.perf_counter()
                result = await client.step(EcomAction(turn=turn))
                latencies.append(time.perf_counter() - t)
            played += 1
            successes += bool(result.done and result.observation.verdict["success"])
    finally:
        await client.close()
    return latencies, played, successes, opened


async def load(url: str, token: str, references: dict, sessions: int, seconds: float) -> dict:
    items = sorted(references.items())
    stop_at = time.monotonic() + seconds
    held = [asyncio.Event() for _ in range(sessions)]
    started = time.perf_counter()
    runs = await asyncio.gather(
        *(session(url, token, items[k:] + items[:k], stop_at, held[k]) for k in range(sessions))
    )
    wall = time.perf_counter() - started
    latencies = np.asarray([x for run in runs for x in run[0]]) * 1000
    return {
        "sessions": sum(run[3] for run in runs),
        "episodes": sum(run[1] for run in runs),
        "successes": sum(run[2] for run in runs),
        "requests": latencies.size,
        "wall": wall,
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/ecomrlve-bench-env-server"))
    parser.add_argument("--sessions", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if not 1 <= args.sessions <= 512 or not 0 < args.seconds <= 300:
        raise SystemExit("--sessions must be 1-512 and --seconds 0-300")
    references = build_store(args.data, products=3_000, tasks=180)
    token = secrets.token_urlsafe(16)
    server = start_server(args.data, token, args.port, args.sessions)
    try:
        url = f"http://127.0.0.1:{args.port}"
        result = asyncio.run(load(url, token, references, args.sessions, args.seconds))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    steps_per_s = result["requests"] / result["wall"]
    print(f"env server under loopback load ({os.cpu_count()} cores, client and server together)")
    print(f"{'what':<34} {'measured':>14}")
    for what, value in (
        ("sessions held at once", f"{result['sessions']} / {args.sessions}"),
        ("episodes played (all success)", f"{result['episodes']:,} ({result['successes']:,})"),
        ("requests (reset + step)", f"{result['requests']:,}"),
        ("requests / s", f"{steps_per_s:,.0f}"),
        ("latency p50", f"{result['p50']:.1f} ms"),
        ("latency p99", f"{result['p99']:.1f} ms"),
        ("wall", f"{result['wall']:.1f} s"),
    ):
        print(f"{what:<34} {value:>14}")
    if result["successes"] != result["episodes"]:
        raise SystemExit("some reference episodes did not succeed over the server")


if __name__ == "__main__":
    main()
