"""Shared fixtures. Each area may add its own fixture block below; keep them session-scoped
where building data is costly."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ecomrlve.flows import prefect_env

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SMALL_CATALOG = 3_000

# No timed assertions: hypothesis' default 200 ms deadline per example failed
# test_seed_sequence_is_numpys_for_any_entropy (280 ms) and test_add_typos_draws_like_word_by_word
# (308 ms) on a loaded 2-core machine, each 0.2 ms when rerun. Tests judge behaviour only.
settings.register_profile("no_deadline", deadline=None)
settings.load_profile("no_deadline")


@pytest.fixture(scope="session")
def small_catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding a 3k-product catalog (seed 7). Treat it as read-only."""
    from ecomrlve.catalogs import build_catalog

    data = tmp_path_factory.mktemp("catalog")
    build_catalog(data, SMALL_CATALOG, seed=7)
    return data


@pytest.fixture(scope="module")
def fx_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the env fixture catalog and tasks (`env_tasks.write_store`)."""
    from ecomrlve.testing import env_tasks

    root = tmp_path_factory.mktemp("store") / "data"
    env_tasks.write_store(root)
    return root


# ---- flows (Prefect) ---------------------------------------------------------------------------
# Prefect reads its settings when it is first imported, so the quiet offline defaults and a
# private PREFECT_HOME are set here, before any test module imports prefect.
_PREFECT_DIR = tempfile.mkdtemp(prefix="ecomrlve-prefect-")
atexit.register(shutil.rmtree, _PREFECT_DIR, ignore_errors=True)
prefect_env(_PREFECT_DIR)  # PREFECT_HOME under it, telemetry off, 120 s server start-up


@pytest.fixture(autouse=True)
def _log_handlers_write_to_an_open_stream() -> Iterator[None]:
    """A logging handler made during a `CliRunner` invocation (Prefect's console handler, set
    up when a command first imports or configures Prefect) keeps that invocation's captured
    stderr, which is closed when it ends; its next record then printed a "--- Logging error ---
    Traceback" into whatever invocation came next, so a test passed or failed by test order.
    After each test such a handler writes to the session's stderr again."""
    yield
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            stream = getattr(handler, "stream", None)
            if stream is not None and getattr(stream, "closed", False):
                handler.stream = sys.stderr  # not setStream: it flushes the closed one
                if getattr(handler, "console", None) is not None:  # rich's Console, Prefect's
                    handler.console.file = sys.stderr


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect server (SQLite) for the whole session, without flow heartbeats."""
    from prefect.testing.utilities import prefect_test_harness

    from ecomrlve.flows import quiet_settings

    with prefect_test_harness(server_startup_timeout=120), quiet_settings():
        yield


# ---- the env tests' small shop ------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog():
    """The small hand-made catalog of `ecomrlve.testing.env_tasks` (one per test module)."""
    from ecomrlve.testing import env_tasks

    return env_tasks.small_catalog()


@pytest.fixture(scope="module")
def ctx():
    """A generation context on the fuzzer's small shop (`testing.fuzzer.gen_context`), for
    modules that generate tasks; a module may define its own `ctx` instead."""
    from ecomrlve.testing.fuzzer import gen_context

    return gen_context()


@pytest.fixture(scope="module")
def tasks(catalog):
    """Its hand-made tasks by id."""
    from ecomrlve.testing import env_tasks

    return {t.task_id: t for t in env_tasks.all_tasks(catalog)}
