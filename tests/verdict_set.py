"""A fixed set of trajectories and their verdicts, pinned in `tests/data/verdicts/`.

`test_env_verdicts.py` replays every trajectory on the pinned catalog and compares each verdict's
JSON with the stored line byte for byte, so an optimisation of the env, the verifier, the reward,
the milestones or the answer check cannot change a verdict unnoticed. Everything the replay
needs is stored (catalog Parquet, task rows, turns), so changes to the catalog synthesis or the
generators do not touch it.

The set: tasks of all nine scenarios at difficulties 0/2/5/8/10 plus the hand-made fixtures,
each with its reference, the reference cut short, a bland final answer, the reference played
against a decoy goal's answer, a "hacked" answer that lists every spelling of every fact, and
two fuzzed episodes.

    PYTHONHASHSEED=0 python tests/verdict_set.py   # rebuild (only for an intended change;
                                                   # the fuzzer iterates sets of ids)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import polars as pl

DATA = Path(__file__).resolve().parent / "data" / "verdicts"
PRODUCTS = DATA / "products.parquet"
POLICIES = DATA / "policies.parquet"
EPISODES = DATA / "episodes.jsonl.gz"
VERDICTS = DATA / "verdicts.jsonl"
MESSAGES = DATA / "messages.sha256"


def verdict_line(verdict: Any) -> str:
    """The canonical bytes of one verdict (sorted keys; floats as Python writes them)."""
    return json.dumps(verdict.to_json(), sort_keys=True, ensure_ascii=True)


def messages_digest(task: Any, turns: list[Any], catalog: Any) -> str:
    """sha256 of the tool results an env shows while `turns` are played. The system prompt
    and the simulated user's words are left out: rewording a tool description or a reply of
    `env/episode/user.py` is no change of the tools."""
    from ecomrlve.env import EcomEnv

    env = EcomEnv(task, catalog)
    env.reset()
    for turn in turns:
        if env.done:
            break
        env.step(turn)
    shown = [m for m in env.messages if m.get("role") == "tool" and m.get("name") != "ask_user"]
    text = json.dumps(shown, sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _round_trips(turns: list[Any]) -> bool:
    try:
        text = json.dumps(turns, ensure_ascii=True)
        return json.dumps(json.loads(text), ensure_ascii=True) == text
    except (TypeError, ValueError):
        return False


def _fuzzed(task: Any, catalog: Any, seed: int) -> list[Any]:
    from ecomrlve.env import EcomEnv
    from ecomrlve.testing.fuzzer import Fuzzer

    fuzzer = Fuzzer(random.Random(seed), task, catalog)
    env = EcomEnv(task, catalog)
    fuzzer.observe(env.reset())
    turns: list[Any] = []
    while not env.done:
        turn = fuzzer.turn(0.05)
        turns.append(turn)
        fuzzer.observe(env.step(turn).observation)
    return turns


def trajectories(task: Any, catalog: Any, k: int) -> list[tuple[str, list[Any]]]:
    """(kind, turns) played on `task`: reference, perturbed, hacked and failing episodes."""
    from ecomrlve.env import reference_turns
    from ecomrlve.env.judge.facts import spellings
    from ecomrlve.testing.leaks import goal_decoy

    reference = reference_turns(task)
    out = [("reference", reference)]
    if len(reference) > 1:
        out.append(("cut_short", [*reference[:-2], "I have done everything you asked."]))
    out.append(("bland_answer", [*reference[:-1], "Done, all sorted!"]))
    decoy = goal_decoy(task, catalog, seed=k)
    out.append(("decoy_answer", [*reference[:-1], reference_turns(decoy)[-1]]))
    every = [s for fact in task.goal.answer_facts for s in spellings(fact)]
    out.append(("spelling_dump", [*reference[:-1], " / ".join(every) or "yes no maybe"]))
    out.append(("answer_only", [reference[-1]]))
    for seed in (k, k + 1000):
        turns = _fuzzed(task, catalog, seed)
        if _round_trips(turns):
            out.append((f"fuzz{seed}", turns))
    return out


def build() -> None:
    """Write the catalog, the episodes and the verdicts of today's code."""
    from ecomrlve.catalogs import CLASSIC_SHOP, build_policies, build_products
    from ecomrlve.env import verify
    from ecomrlve.testing import env_tasks as fx
    from ecomrlve.testing.fuzzer import task_pool

    DATA.mkdir(parents=True, exist_ok=True)
    products = build_products(fx.N_PRODUCTS, fx.CATALOG_SEED)
    policies = build_policies(CLASSIC_SHOP)
    products.write_parquet(PRODUCTS, compression="zstd", statistics=False)
    policies.write_parquet(POLICIES, compression="zstd", statistics=False)
    catalog = load_catalog()
    episodes, verdicts, digests = [], [], []
    for k, task in enumerate(task_pool()):
        for kind, turns in trajectories(task, catalog, k):
            # key order kept: a turn's argument order decides which bad argument is named
            episodes.append(json.dumps({"kind": kind, "task": task.to_row(), "turns": turns}))
            verdicts.append(verdict_line(verify(task, turns, catalog)))
            digests.append(messages_digest(task, turns, catalog))
    raw = ("\n".join(episodes) + "\n").encode()
    EPISODES.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    VERDICTS.write_text("\n".join(verdicts) + "\n")
    MESSAGES.write_text("\n".join(digests) + "\n")
    print(f"{len(episodes)} episodes over {len(task_pool())} tasks written to {DATA}")


def load_catalog() -> Any:
    from ecomrlve.env import Catalog

    return Catalog.from_frames(pl.read_parquet(PRODUCTS), pl.read_parquet(POLICIES))


def load_episodes() -> list[tuple[str, Any, list[Any]]]:
    """(kind, task, turns) of every stored episode, in file order."""
    from ecomrlve.tasks import Task

    out = []
    tasks: dict[str, Task] = {}
    for line in gzip.decompress(EPISODES.read_bytes()).decode().splitlines():
        record = json.loads(line)
        row = record["task"]
        task = tasks.get(row["task_id"])
        if task is None:
            task = tasks[row["task_id"]] = Task.from_row(row)
        out.append((record["kind"], task, record["turns"]))
    return out


if __name__ == "__main__":
    build()
