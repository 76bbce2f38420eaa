"""A store with the env fixture tasks and a curriculum built over them (verl/TRL rows), shared
by the integration tests."""

from __future__ import annotations

from pathlib import Path

from ecomrlve import store
from ecomrlve.env.shop.products import Catalog
from ecomrlve.flows import shards as cur
from ecomrlve.tasks import Task
from ecomrlve.testing import env_tasks as fx

CURRICULUM = "demo"


def switch_task(catalog: Catalog) -> Task:
    """A cart task whose customer adds a second wish at the intent-switch turn."""
    task = fx.cart_task(catalog)
    goal = task.goal.model_copy(update={"intent_switch": "please make it a gift"})
    return task.model_copy(update={"task_id": "fx-switch", "goal": goal})


def curriculum_store(data: Path) -> Path:
    """Build the fixture catalog, the fixture tasks (plus `switch_task` and `event_task`, all
    stamped with the store's catalog) and curriculum `demo` under `data`; return `data`."""
    from ecomrlve.catalogs import build_catalog

    build_catalog(data, fx.N_PRODUCTS, fx.CATALOG_SEED)
    catalog = Catalog.load(data)
    # `event_task`: a shop that changes mid-episode, played alike by every integration
    tasks = [*fx.all_tasks(catalog), switch_task(catalog), fx.event_task(catalog)]
    stamped = [t.model_copy(update={"catalog_hash": catalog.catalog_hash}) for t in tasks]
    fx.write_store(data, stamped)
    with store.exclusive_lock(data):
        cur.build_curriculum(data, CURRICULUM)
    return data


def agent_loop(verl_config, tokenizer, server):
    """Our verl agent loop over `server` (verl's server manager contract), as verl builds it."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from ecomrlve.integrations.verl.runtime import EcomAgentLoop

    return EcomAgentLoop(
        trainer_config=DictConfigWrap(verl_config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(verl_config.data),
    )
