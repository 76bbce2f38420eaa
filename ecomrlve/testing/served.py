"""The env server's test world and client: what the env-server tests and the served-paths test
share.

    world = served_world(catalog, tasks, max_sessions=8)
    with serve_in_thread(world, TOKEN) as url, sync_client(url, TOKEN) as client: ...
"""

from __future__ import annotations

from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env import Catalog
from ecomrlve.integrations.env_server import EcomEnvClient, ServedWorld, ServerLimits, TaskPool
from ecomrlve.tasks import Task


def served_world(catalog: Catalog, tasks: list[Task], **limits: Any) -> ServedWorld:
    """`tasks` served on `catalog` with the default env config and these `ServerLimits`."""
    return ServedWorld(catalog, TaskPool.from_tasks(tasks), EnvConfig(), ServerLimits(**limits))


def sync_client(url: str, token: str) -> Any:
    """A synchronous OpenEnv client of the server at `url` (60 s per message)."""
    return EcomEnvClient(url, token=token, message_timeout_s=60).sync()
