"""Crash safety: `kill -9` (SIGKILL to the whole process group) at seeded random moments of
`ecomrlve catalog`, `ecomrlve generate` and the publish step, 20 times.

After every kill:
* before any recovery, a store without a publish journal shows exactly the old or the new
  dataset (the journal marks the only window where it may show a mix);
* after recovery (the next writer's lock) the store is the old or the new dataset, byte for
  byte; no journal and no temp file is left; the views answer; no task_id is duplicated or
  lost (the tasks view holds exactly the old or the new id set);
* rerunning the killed command completes to the bytes of the uninterrupted run.

The data is small (2,000 products, 300 + 300 tasks) so a kill costs about a second. Delays are
stratified over the uninterrupted run's measured wall time; publish kills wait for the driver's
"publishing" line and spread over the publish itself, which the driver slows (a short sleep per
rename) so that kills land between the renames of a journaled publish.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import psutil
import pytest

from ecomrlve import store
from ecomrlve.testing.env_tasks import sql_rows

pytestmark = pytest.mark.slow  # subprocesses killed with kill -9

PRODUCTS = 2000
TASKS = 300
KILLS = {"catalog": 6, "generate": 6, "publish": 8}  # 20 in all
ECOMRLVE = [sys.executable, "-m", "ecomrlve"]

# Reads a frame and publishes it as one run (what `ecomrlve generate` and the pipeline's publish
# stage do after generating), each rename slowed to widen the window between journal and end.
PUBLISH_DRIVER = """
import os, sys, time
import polars as pl
from ecomrlve.generators import write_tasks
real_replace = os.replace
def slow_replace(a, b):
    real_replace(a, b)
    time.sleep(0.004)
os.replace = slow_replace
df = pl.read_parquet(sys.argv[2])
print("publishing", flush=True)
write_tasks(sys.argv[1], df, sys.argv[3])
print("published", flush=True)
"""


def _visible(data: Path) -> dict[str, str]:
    """sha256 of every file a reader can see under catalog/ and tasks/ (hidden names are
    temp files; search-* is the search index cache, rebuilt on demand)."""
    out = {}
    for folder in ("catalog", "tasks"):
        root = data / folder
        if not root.exists():
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(data)
            if path.is_dir() or any(p.startswith((".", "search-")) for p in rel.parts):
                continue
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _temp_files(data: Path) -> list[str]:
    found = [str(p.relative_to(data)) for p in data.rglob(".*.tmp-*")]
    if (data / store.JOURNAL_NAME).exists():
        found.append(store.JOURNAL_NAME)
    return found


def _task_ids(data: Path) -> list[str]:
    con = store.connect(data)
    try:
        if not con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'tasks'"
        ).fetchall()[0][0]:
            return []
        return [r[0] for r in con.execute("SELECT task_id FROM tasks").fetchall()]
    finally:
        con.close()


@dataclass(frozen=True)
class Case:
    name: str
    template: Path  # the old dataset, copied for each kill
    command: list[str]  # `{data}` is replaced by the trial's data directory
    old: dict[str, str]
    new: dict[str, str]
    old_ids: frozenset[str]
    new_ids: frozenset[str]
    wall_s: float  # the uninterrupted command's wall time
    rerun: Callable[[Path], None]  # the same work through the library (no CLI start-up)
    marker: str | None = None  # wait for this stdout line before the delay starts
    window_s: float = 0.0  # with a marker: spread the kills over this many seconds


def _copy(template: Path, to: Path) -> Path:
    shutil.copytree(template, to)
    store.refresh_views(to)  # the views hold absolute paths: point them at the copy
    return to


def _argv(case: Case, data: Path) -> list[str]:
    return [str(data) if a == "{data}" else a for a in case.command]


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _make_case(
    name: str,
    template: Path,
    command: list[str],
    rerun: Callable[[Path], None],
    work: Path,
    marker: str | None = None,
) -> Case:
    reference = _copy(template, work / f"{name}-reference")
    probe = Case(name, template, command, {}, {}, frozenset(), frozenset(), 0.0, rerun, marker)
    started = time.perf_counter()
    done = _run(_argv(probe, reference))
    wall = time.perf_counter() - started
    # the shortest of three runs: a slow spell of the shared machine only lengthens a run, and
    # kill delays spread over a lengthened one land after the end (`finished`) in a fast spell
    for k in range(2):
        started = time.perf_counter()
        _run(_argv(probe, _copy(template, work / f"{name}-timing-{k}")))
        wall = min(wall, time.perf_counter() - started)
    window = 0.0
    if marker:  # the publish: from the marker line to the end, measured by the driver's output
        window = max(0.3, _publish_seconds(_argv(probe, _copy(template, work / f"{name}-w"))))
    assert done.returncode == 0
    return Case(
        name,
        template,
        command,
        _visible(template),
        _visible(reference),
        frozenset(_task_ids(template)),
        frozenset(_task_ids(reference)),
        wall,
        rerun,
        marker,
        window,
    )


def _publish_seconds(argv: list[str]) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "publishing"
    started = time.perf_counter()
    assert proc.stdout.readline().strip() == "published"
    seconds = time.perf_counter() - started
    proc.wait(timeout=60)
    return seconds


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.generators import generate_tasks, write_tasks

    work = tmp_path_factory.mktemp("crash")
    old = work / "old"
    build_catalog(old, PRODUCTS, seed=0)
    tasks, _ = generate_tasks(old, TASKS, seed=0)
    write_tasks(old, tasks, "gen_s0")
    # the first publish of tasks into a store that has none yet (no tasks view before it)
    bare = work / "bare"
    build_catalog(bare, PRODUCTS, seed=0)
    frame = work / "incoming.parquet"
    generate_tasks(old, TASKS, seed=2)[0].write_parquet(frame)

    def catalog_rerun(data: Path) -> None:
        with store.exclusive_lock(data):
            build_catalog(data, PRODUCTS, seed=1)

    def generate_rerun(data: Path) -> None:
        write_tasks(data, generate_tasks(data, TASKS, seed=1)[0], "gen_s1")

    def publish_rerun(data: Path) -> None:
        write_tasks(data, pl.read_parquet(frame), "gen_s2")

    catalog = [*ECOMRLVE, "catalog", "--products", str(PRODUCTS), "--seed", "1"]
    generate = [*ECOMRLVE, "generate", "--tasks", str(TASKS), "--seed", "1", "--workers", "1"]
    publish = [sys.executable, "-c", PUBLISH_DRIVER, "{data}", str(frame), "gen_s2"]
    return {
        "catalog": _make_case("catalog", old, [*catalog, "--data", "{data}"], catalog_rerun, work),
        "generate": _make_case(
            "generate", old, [*generate, "--data", "{data}"], generate_rerun, work
        ),
        "publish": _make_case("publish", bare, publish, publish_rerun, work, marker="publishing"),
    }


def _delays(case: Case, n: int, seed: int) -> list[float]:
    """One delay in each of n equal slices of the run (or of the publish window)."""
    rng = np.random.default_rng(seed)
    span = case.window_s if case.marker else case.wall_s * 0.85
    return [float(span * (i + rng.random()) / n) for i in range(n)]


def _kill_at(case: Case, data: Path, delay: float) -> bool:
    """Start the command, SIGKILL its process group after `delay`; True if it was running."""
    proc = subprocess.Popen(
        _argv(case, data),
        start_new_session=True,
        stdout=subprocess.PIPE if case.marker else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        if case.marker:
            assert proc.stdout.readline().strip() == case.marker
        time.sleep(delay)
        running = proc.poll() is None
        if running:
            os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.stdout:
            proc.stdout.close()
    return running


def _same_bytes(case: Case, data: Path, when: str) -> None:
    seen = _visible(data)
    if seen == case.new:
        return
    differing = sorted(k for k in set(seen) | set(case.new) if seen.get(k) != case.new.get(k))
    detail = ""
    first = differing[0]
    reference = case.template.parent / f"{case.name}-reference" / first
    if first.endswith(".parquet") and (data / first).exists() and reference.exists():
        ours, ref = pl.read_parquet(data / first), pl.read_parquet(reference)
        if ours.columns == ref.columns and ours.height == ref.height:
            columns = [c for c in ref.columns if not ours[c].equals(ref[c])]
            detail = f"; columns differing in {first}: {columns}"
            if columns:
                row = next(
                    j for j in range(ref.height) if ours[columns[0]][j] != ref[columns[0]][j]
                )
                detail += f"; row {row}: {ours.row(row)} vs {ref.row(row)}"
        else:
            detail = f"; {first}: {ours.shape} vs {ref.shape}"
    raise AssertionError(
        f"{case.name} {when}: {len(differing)} files differ: {differing[:4]}{detail}"
    )


def _check_old_or_new(case: Case, data: Path, when: str) -> str:
    seen = _visible(data)
    assert seen in (case.old, case.new), (
        f"{case.name} {when}: the store is neither the old nor the new dataset: "
        f"{sorted(set(seen.items()) ^ set(case.new.items()))[:6]}"
    )
    return "old" if seen == case.old else "new"


@pytest.mark.parametrize("name", list(KILLS))
def test_kill_9_leaves_the_old_or_the_new_dataset(cases, name: str, tmp_path: Path) -> None:
    case = cases[name]
    outcomes = {"old": 0, "new": 0, "journal": 0, "finished": 0}
    sql_checked = False
    for i, delay in enumerate(_delays(case, KILLS[name], seed=list(KILLS).index(name))):
        data = _copy(case.template, tmp_path / f"trial-{i}")
        if not _kill_at(case, data, delay):
            outcomes["finished"] += 1
        # before recovery: without a journal the store is already exactly old or new
        if (data / store.JOURNAL_NAME).exists():
            outcomes["journal"] += 1
        else:
            _check_old_or_new(case, data, f"kill {i} at {delay:.3f} s, before recovery")
        with store.exclusive_lock(data):  # what the next writer does first: recover()
            pass
        state = _check_old_or_new(case, data, f"kill {i} at {delay:.3f} s, after recovery")
        outcomes[state] += 1
        assert _temp_files(data) == [], f"kill {i}: stray files after recovery"
        ids = _task_ids(data)
        assert len(ids) == len(set(ids)), f"kill {i}: duplicated task_id"
        assert set(ids) == (case.old_ids if state == "old" else case.new_ids)
        assert sql_rows(data, "SELECT count(*) FROM products")[0][0] == PRODUCTS
        if state == "new" and not sql_checked:  # the views through the real CLI, once per case
            query = "SELECT count(*) AS n FROM tasks"
            out = _run([*ECOMRLVE, "sql", query, "--data", str(data), "--format", "csv"])
            assert out.stdout.split() == ["n", str(len(case.new_ids))]
            sql_checked = True
        # the rerun completes to the uninterrupted run's bytes (every other one through the CLI)
        if i % 2 == 0:
            _run(_argv(case, data))
        else:
            case.rerun(data)
        _same_bytes(case, data, f"rerun after kill {i} at {delay:.3f} s ({state})")
        assert sorted(_task_ids(data)) == sorted(case.new_ids)
        shutil.rmtree(data)
    killed = KILLS[name] - outcomes["finished"]
    assert killed >= KILLS[name] - 1, f"{name}: most kills should land mid-run: {outcomes}"
    print(f"{name}: {outcomes}, wall {case.wall_s:.2f} s, window {case.window_s:.2f} s")


def test_a_crash_between_the_renames_and_the_view_refresh_is_rolled_forward(
    tmp_path: Path, monkeypatch
) -> None:
    """Regression: the journal was dropped before the views were refreshed, so a first publish
    of tasks killed in between left task files without a `tasks` view, and nothing fixed it."""
    from ecomrlve.tasks import TASK_SCHEMA

    data = tmp_path / "data"
    store.ensure_writable(data)
    row = {c: None for c in TASK_SCHEMA} | {"task_id": "t1", "scenario": "cart", "difficulty": 1}
    frame = pl.DataFrame([row], schema=TASK_SCHEMA)
    target = data / "tasks" / "scenario=cart" / "difficulty=1" / "run.parquet"

    def crash(*args):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(store, "_create_views", crash)
    with pytest.raises(KeyboardInterrupt), store.publish(data) as tx:
        tx.write_parquet(frame, target)
    monkeypatch.undo()
    assert target.exists() and (data / store.JOURNAL_NAME).exists()
    with store.exclusive_lock(data):
        pass
    assert not (data / store.JOURNAL_NAME).exists()
    assert _task_ids(data) == ["t1"]


def test_recovery_spares_temp_files_of_live_processes(tmp_path: Path) -> None:
    """A search index another process is building (written without the writer lock) survives
    a writer's recovery; one of a dead process is swept."""
    data = tmp_path / "data"
    (data / "catalog").mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = data / "catalog" / f".search-abc.tmp-{sleeper.pid}-0000aaaa"
        live.mkdir()
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
        ).stdout.strip()
        stale = data / "catalog" / f".products.parquet.tmp-{dead}-0000bbbb"
        stale.write_bytes(b"half")
        with store.exclusive_lock(data):
            pass
        assert live.exists() and not stale.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def _kill_parent_once_workers_run(argv: list[str], workers: int, log: Path) -> list[psutil.Process]:
    """Start `argv` (output to `log`), wait for `workers` spawned pool workers, `kill -9` the
    command alone (not its group) and return every descendant it had then that is still alive
    15 s later."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        parent = psutil.Process(proc.pid)
        children: list[psutil.Process] = []
        spawned: list[psutil.Process] = []
        deadline = time.monotonic() + 150  # a pipeline first starts Prefect's server
        while time.monotonic() < deadline and proc.poll() is None:
            children = parent.children(recursive=True)
            spawned = [p for p in children if "spawn_main" in " ".join(_cmdline(p))]
            if len(spawned) >= workers:
                break
            time.sleep(0.2)
        assert len(spawned) >= workers, f"the pool never started: {log.read_text()[-3000:]}"
        children = parent.children(recursive=True)  # the resource tracker, a server, ...
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        _, alive = psutil.wait_procs(children, timeout=15)
        return alive
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def test_workers_die_with_their_parent(small_catalog_dir, tmp_path: Path) -> None:
    """`kill -9` of `ecomrlve generate --workers 3` alone (not its group): its spawned workers
    and their resource tracker notice the dead parent and exit within seconds instead of
    lingering as orphans."""
    data = tmp_path / "data"
    shutil.copytree(small_catalog_dir, data)
    argv = [*ECOMRLVE, "generate", "--tasks", "20000", "--seed", "3", "--workers", "3"]
    alive = _kill_parent_once_workers_run(
        [*argv, "--data", str(data)], workers=2, log=tmp_path / "generate.log"
    )
    assert not alive, [(p.pid, _cmdline(p)) for p in alive]


def test_pipeline_children_die_with_it(tmp_path: Path) -> None:
    """The same for `ecomrlve pipeline --task-runner processes`: the generation pool's workers,
    Prefect's temporary API server (a uvicorn child Prefect stops only from an atexit hook) and
    the reaper that ends it are all gone after a `kill -9` of the pipeline."""
    argv = [*ECOMRLVE, "pipeline", "--data", str(tmp_path / "data"), "--products", "3000"]
    argv += ["--tasks", "20000", "--skip-train", "--task-runner", "processes", "--workers", "2"]
    alive = _kill_parent_once_workers_run(argv, workers=2, log=tmp_path / "pipeline.log")
    assert not alive, [(p.pid, _cmdline(p)) for p in alive]


# The pids go out in one os.write: with PYTHONUNBUFFERED=1 a print writes piece by piece, and a
# child writing to the same pipe could land between the pieces. The parent learns the launched
# child's pid from run_bound's own reap_on_exit call, so nothing waits on a guessed sleep.
REAPED_PARENT = """
import os, signal, subprocess, sys, threading
from ecomrlve import procs
registered, launched_pids, reap = threading.Event(), [], procs.reap_on_exit
def recorded(pid):
    launched_pids.append(pid)
    reaped = reap(pid)
    registered.set()
    return reaped
procs.reap_on_exit = recorded
launched = threading.Thread(target=procs.run_bound, daemon=True, args=(  # as a trainer is launched
    [sys.executable, "-c", "import time; time.sleep(60)"],))
launched.start()
assert registered.wait(60)
procs.reap_on_exit = reap
polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"],
    stdout=subprocess.PIPE)
stubborn.stdout.readline()  # its SIGTERM handler is in place
assert reap(polite.pid) and reap(stubborn.pid)
pids = (launched_pids[0], polite.pid, stubborn.pid, procs._reaper.pid)
os.write(1, (" ".join(map(str, pids)) + "\\n").encode())
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_reaped_children_end_when_their_parent_is_killed() -> None:
    """`reap_on_exit`: after a `kill -9` of the parent, a child gets SIGTERM and one that
    ignores it SIGKILL after the grace period; a `run_bound` child (how the pipeline launches
    torchrun and verl) ends too, and so does the reaper."""
    run = subprocess.run(
        [sys.executable, "-c", REAPED_PARENT], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    watched = [int(pid) for pid in run.stdout.split()]  # run_bound's child, two, the reaper
    assert len(watched) == 4, run.stdout
    processes = []
    for pid in watched:
        with contextlib.suppress(psutil.NoSuchProcess):  # gone already: fine
            processes.append(psutil.Process(pid))
    _, alive = psutil.wait_procs(processes, timeout=10)  # the grace is 5 s
    assert not alive, [(p.pid, _cmdline(p)) for p in alive]
