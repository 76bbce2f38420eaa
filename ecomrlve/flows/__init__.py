"""Prefect flows: catalog → tasks → store → curriculum shards → training, as one pipeline.

Prefect reads its settings once, when it is first imported. So the quiet, offline defaults are
put in the environment by `prefect_env(data_dir)` *before* any module of this package that
imports prefect (`stages`, `pipeline`, `serve`) is imported; the CLI and the tests do that.
This module itself imports neither prefect nor anything heavy.

Layout of the package:
* `params`     the pydantic parameter models and the chunk plan (no prefect);
* `curriculum` DuckDB selection, easy → hard ordering, shards, verl/TRL rows, manifest;
* `regenerate` seeds and per-scenario targets for fresh step-band tasks (no prefect);
* `plots`      PNG plots of the dataset;
* `stages`     the small typed Prefect tasks (cached on inputs + source, I/O retries);
* `pipeline`   the thin flows that sequence them;
* `serve`      deployments with a cron schedule; `cli` the `pipeline`/`curriculum`/`serve` commands.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

# Set unless the user chose otherwise. Telemetry off, a startup timeout long enough for a loaded
# 2-core machine (the default 20 s is not).
QUIET_DEFAULTS: dict[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}

PREFECT_DIR = ".prefect"


def prefect_env(data_dir: str | os.PathLike, *, console_log_level: str | None = None) -> Path:
    """Put the quiet offline Prefect settings in the environment; return the PREFECT_HOME used.

    PREFECT_HOME defaults to `DATA_DIR/.prefect` (the temporary server's database, memo store)
    so nothing is written to `~/.prefect`; a PREFECT_HOME the user set wins. Call it before
    prefect is imported: afterwards the settings are frozen and only a warning is logged.
    `console_log_level` (e.g. "WARNING") quiets Prefect's console handler and the temporary
    server's own log; flow and task logs still reach the Prefect API and UI.
    """
    for key, value in QUIET_DEFAULTS.items():
        os.environ.setdefault(key, value)
    home = os.environ.setdefault(
        "PREFECT_HOME", str(Path(data_dir).expanduser().resolve() / PREFECT_DIR)
    )
    if console_log_level:
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", console_log_level)
        # the temporary server logs its own shutdown races (events still being recorded as
        # it stops) as tracebacks; keep them off a quiet terminal
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    # prefect creates PREFECT_HOME itself but not its parents (a fresh --data directory)
    Path(home).mkdir(parents=True, exist_ok=True)
    if "prefect" in sys.modules:
        log.warning("prefect was imported before prefect_env(); its settings may not apply")
    return Path(home)


@contextlib.contextmanager
def quiet_settings() -> Iterator[None]:
    """Run flows without the per-flow-run heartbeat thread (it costs about 1 s per run).

    The heartbeat setting cannot be switched off through the environment (it must be None and
    the environment only gives strings), so it is set for the duration of this context.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def start_api_server() -> None:
    """Start Prefect's temporary API server now if flows will need one (no PREFECT_API_URL),
    and make it end with this process.

    Prefect starts it lazily as a uvicorn child and stops it from an `atexit` hook, which a
    `kill -9` of the command never runs: the server would live on as an orphan holding its port
    and database. Started here, its pid goes to `procs.reap_on_exit`. Flows then reuse it
    (Prefect keeps one temporary server per process).
    """
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    from ecomrlve.procs import reap_on_exit

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled:
        return
    server = SubprocessASGIServer()
    server.start()
    if server.server_process is not None:
        reap_on_exit(server.server_process.pid)
