"""Worker processes that die with their parent.

A `kill -9` of a command that runs a process pool (`ecomrlve generate --workers N`) leaves
its spawned workers orphaned: they would keep a loaded catalog (~170 MB each) alive for ever.
`exit_with_parent()` — called first thing in a worker's initializer — starts a daemon thread
that polls the parent's pid and ends the worker as soon as it has been re-parented. Polling
(not `PR_SET_PDEATHSIG`) because Linux sends that signal when the *thread* that spawned the
worker exits, and pool threads come and go.
"""

from __future__ import annotations

import os
import threading
import time

PARENT_POLL_SECONDS = 0.25


def exit_with_parent(parent_pid: int | None = None, interval: float = PARENT_POLL_SECONDS) -> None:
    """End this process (exit code 1, no cleanup) once `parent_pid` is no longer its parent."""
    parent = os.getppid() if parent_pid is None else parent_pid

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)  # the parent is gone: nobody will read our results

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
