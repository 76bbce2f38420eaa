"""Child processes that die with their parent.

A `kill -9` of a command that runs helpers would leave them orphaned: spawned generation
workers keep a loaded catalog (~170 MB each) alive for ever, and Prefect's temporary API server
(a uvicorn process) keeps its port and database. Two mechanisms, for the two kinds of child:

* `exit_with_parent()` — called first thing in a pool worker's initializer — starts a daemon
  thread that polls the parent's pid and ends the worker as soon as it has been re-parented.
  Polling (not `PR_SET_PDEATHSIG`) because Linux sends that signal when the *thread* that
  spawned the worker exits, and pool threads come and go.
* `reap_on_exit(pid)` — for a child whose code is not ours (Prefect's server, the torchrun or
  verl trainer a pipeline stage launches through `run_bound`) — hands the pid
  to a small reaper process that holds the read end of a pipe from this one. When this process
  ends, however it ends, the pipe closes; the reaper then sends SIGTERM to every pid it was
  given that still runs, and SIGKILL after a grace period. The reaper holds a pidfd of each
  (Linux ≥ 5.3), so a pid the system has reused since is never signalled.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

log = logging.getLogger(__name__)

PARENT_POLL_SECONDS = 0.25
REAP_GRACE_SECONDS = 5.0


def exit_with_parent(parent_pid: int | None = None, interval: float = PARENT_POLL_SECONDS) -> None:
    """End this process (exit code 1, no cleanup) once `parent_pid` is no longer its parent."""
    parent = os.getppid() if parent_pid is None else parent_pid

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)  # the parent is gone: nobody will read our results

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


# The reaper runs as `python -I -c` (isolated: no site, no imports of this package), so it
# starts in ~20 ms. It reads one pid per line until EOF, i.e. until every copy of the pipe's
# write end is closed: this process's only copy is non-inheritable (PEP 446), so only this
# process's end closes it (a child forked without exec would keep it open until it exits).
_REAPER = """
import os, select, signal, sys, time
fds = []
for line in sys.stdin:
    try:
        fds.append(os.pidfd_open(int(line)))
    except (ValueError, OSError):
        pass  # gone already
def alive(fd):
    return not select.select([fd], [], [], 0)[0]  # a pidfd reads ready once its process ended
def send(sig):
    for fd in fds:
        try:
            signal.pidfd_send_signal(fd, sig)
        except OSError:
            pass
send(signal.SIGTERM)
deadline = time.monotonic() + float(sys.argv[1])
while any(alive(fd) for fd in fds) and time.monotonic() < deadline:
    time.sleep(0.05)
send(signal.SIGKILL)
"""

_reaper_lock = threading.Lock()
_reaper: subprocess.Popen[str] | None = None  # kept referenced: it outlives us by design


def reap_on_exit(pid: int) -> bool:
    """Make sure process `pid` ends when this process ends, even by SIGKILL: SIGTERM, then
    SIGKILL after `REAP_GRACE_SECONDS`. False (and nothing done) where pidfds are missing."""
    global _reaper
    if not hasattr(os, "pidfd_open"):
        log.debug("no pidfd_open here: process %d is not reaped when this one dies", pid)
        return False
    with _reaper_lock:
        if _reaper is None or _reaper.poll() is not None:
            _reaper = subprocess.Popen(
                [sys.executable, "-I", "-c", _REAPER, str(REAP_GRACE_SECONDS)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,  # a Ctrl-C of the terminal's job must not end it first
            )
        pipe: IO[str] | None = _reaper.stdin
        if pipe is None:  # never: stdin=PIPE
            return False
        pipe.write(f"{pid}\n")
        pipe.flush()
    return True


def run_bound(command: Sequence[str], **popen: Any) -> subprocess.CompletedProcess:
    """`subprocess.run(command, **popen)` (no `check`, no `input`) whose child ends with this
    process even on `kill -9` (`reap_on_exit`): a pipeline killed mid-training must not leave
    torchrun ranks holding the GPUs."""
    capture = popen.pop("capture_output", False)
    if capture:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    with subprocess.Popen(command, **popen) as process:
        reap_on_exit(process.pid)
        try:
            stdout, stderr = process.communicate()
        except BaseException:  # interrupted: do not leave it running
            process.kill()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
