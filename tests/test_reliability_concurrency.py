"""Concurrency on one data directory: a second writer is refused with a clear one-line message
(exit 2, nothing written); two `ecomrlve generate` runs at once leave a consistent store; and
readers (`ecomrlve sql`, `store.connect`) keep answering while a writer publishes over and over,
each read seeing the whole of a publish or none of it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from ecomrlve import store
from ecomrlve.testing.env_tasks import sql_rows

pytestmark = pytest.mark.slow  # several ecomrlve subprocesses at once

PRODUCTS = 2000
TASKS = 200
ECOMRLVE = [sys.executable, "-m", "ecomrlve"]
LOCK_MESSAGE = "another ecomrlve writer holds the lock"
ROUNDS = 6  # publishes while the readers read
READERS = 1  # tight reader loops, besides one `ecomrlve sql` loop

# Publishes the two frames alternately as one run (prune: files of partitions the frame does not
# fill are removed in the same publish), `rounds` times.
CHURN_WRITER = """
import sys
import polars as pl
from ecomrlve.generators import write_tasks
data, big, small, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
frames = [pl.read_parquet(big), pl.read_parquet(small)]
print("ready", flush=True)
for k in range(rounds):
    write_tasks(data, frames[k % 2], "churn", prune=True)
print("done", flush=True)
"""

# Reads until the stop file appears; one line per read: "count distinct" or "error: ...".
READER = """
import sys, time
from pathlib import Path
from ecomrlve import store
data, stop = sys.argv[1], Path(sys.argv[2])
while not stop.exists():
    try:
        con = store.connect(data)
        try:
            n, distinct = con.execute(
                "SELECT count(*), count(DISTINCT task_id) FROM tasks"
            ).fetchall()[0]
        finally:
            con.close()
        print(n, distinct, flush=True)
    except Exception as err:
        print("error:", type(err).__name__, str(err).splitlines()[0], flush=True)
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, int]:
    """A store with a catalog and the tasks TASKS asks for (fewer where a cell gave up), plus
    two frames of another run to churn; the count of tasks written is the fourth item."""
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.generators import generate_tasks, write_tasks

    work = tmp_path_factory.mktemp("concurrency")
    data = work / "data"
    build_catalog(data, PRODUCTS, seed=0)
    tasks, _ = generate_tasks(data, TASKS, seed=0)  # a small catalog can leave a cell short
    write_tasks(data, tasks, "gen_s0")
    churn, _ = generate_tasks(data, TASKS, seed=7)
    big, small = work / "big.parquet", work / "small.parquet"
    churn.write_parquet(big)
    churn.filter(pl.col("scenario").is_in(["cart", "cancel", "policy"])).write_parquet(small)
    return data, big, small, tasks.height


def _copy(template: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(template, to)
    store.refresh_views(to)
    return to


def _files(data: Path) -> dict[str, int]:
    return {
        str(p.relative_to(data)): p.stat().st_mtime_ns
        for p in sorted((data / "tasks").rglob("*.parquet"))
    } | {
        str(p.relative_to(data)): p.stat().st_mtime_ns
        for p in sorted((data / "catalog").glob("*.parquet"))
    }


def _count(data: Path) -> tuple[int, int]:
    con = store.connect(data)
    try:
        return con.execute("SELECT count(*), count(DISTINCT task_id) FROM tasks").fetchall()[0]
    finally:
        con.close()


# ---- the lock ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["catalog", "--products", "500", "--seed", "5"],
        ["generate", "--tasks", "20", "--seed", "9", "--workers", "1"],
        ["curriculum", "build", "--name", "locked"],
    ],
    ids=["catalog", "generate", "curriculum"],
)
def test_a_second_writer_is_refused_with_one_clear_line(base, tmp_path, command) -> None:
    data = _copy(base[0], tmp_path / "data")
    before = _files(data)
    with store.exclusive_lock(data):  # another writer (this process) holds the lock
        done = subprocess.run(
            [*ECOMRLVE, *command, "--data", str(data)], capture_output=True, text=True
        )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and LOCK_MESSAGE in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert _files(data) == before, "a refused writer wrote something"
    assert _count(data) == (base[3], base[3])


def test_two_pipelines_at_once_one_is_refused_before_it_starts(tmp_path) -> None:
    """The pipeline holds the writer lock for its whole run (its stages re-enter it): a second
    pipeline on the same directory exits 2 with the lock message before Prefect starts, and
    the first one finishes into a consistent store."""
    data = tmp_path / "data"
    store.ensure_writable(data)
    env = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "120"
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    command = [*ECOMRLVE, "pipeline", "--data", str(data), "--products", "500", "--tasks", "40"]
    first = subprocess.Popen(
        [*command, "--skip-train"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lock = data / store.LOCK_NAME
        deadline = time.monotonic() + 120
        # wait until the first run holds the lock (it writes its pid into the lock file)
        while not lock.exists() or lock.read_text().strip() != f"pid {first.pid}":
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.02)
        second = subprocess.run(
            [*command, "--seed", "3", "--skip-train"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        _, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 2, second.stderr[-2000:]
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and LOCK_MESSAGE in lines[0], second.stderr
    assert first.returncode == 0, err[-3000:]
    con = store.connect(data)
    try:
        runs = dict(
            con.execute(
                "SELECT regexp_extract(filename, '([a-z_0-9]+)[.]parquet$', 1) AS run, count(*) "
                "FROM read_parquet(?, filename = true) GROUP BY run",
                [str(data / "tasks" / "scenario=*" / "difficulty=*" / "*.parquet")],
            ).fetchall()
        )
        n, distinct = con.execute("SELECT count(*), count(DISTINCT task_id) FROM tasks").fetchall()[
            0
        ]
    finally:
        con.close()
    assert set(runs) == {"pipeline"}
    assert n == distinct == runs["pipeline"] > 0
    assert sql_rows(data, "SELECT count(*) FROM products")[0][0] == 500


def test_two_generate_runs_at_once_leave_a_consistent_store(base, tmp_path) -> None:
    """Each run either publishes or is refused with the lock message; the tasks view then holds
    the old tasks plus exactly the runs that succeeded, no id twice."""
    from ecomrlve.generators import generate_tasks

    data = _copy(base[0], tmp_path / "data")
    generate = [*ECOMRLVE, "generate", "--tasks", "60", "--workers", "1"]
    runs = {
        seed: subprocess.Popen(
            [*generate, "--seed", str(seed), "--data", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (11, 12)
    }
    succeeded = []
    for seed, proc in runs.items():
        _, err = proc.communicate(timeout=180)
        if proc.returncode == 0:
            succeeded.append(seed)
        else:
            assert proc.returncode == 2 and LOCK_MESSAGE in err, err
    assert succeeded, "at least one of two runs publishes"
    con = store.connect(data)
    try:
        seeds = dict(con.execute("SELECT seed, count(*) FROM tasks GROUP BY seed").fetchall())
        n, distinct = con.execute("SELECT count(*), count(DISTINCT task_id) FROM tasks").fetchall()[
            0
        ]
    finally:
        con.close()
    assert n == distinct
    assert set(seeds) == {0, *succeeded}
    assert seeds[0] == base[3]
    for seed in succeeded:  # what that seed generates on this catalog, all of it
        assert seeds[seed] == generate_tasks(data, 60, seed=seed)[0].height
    assert not list(data.rglob(".*.tmp-*")) and not (data / store.JOURNAL_NAME).exists()


# ---- readers during publishes ------------------------------------------------------------------


def test_readers_see_all_of_a_publish_or_none_of_it(base, tmp_path) -> None:
    data_template, big, small, old = base
    data = _copy(data_template, tmp_path / "data")
    expected = {
        old,
        old + pl.read_parquet(big).height,
        old + pl.read_parquet(small).height,
    }
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", CHURN_WRITER, str(data), str(big), str(small), str(ROUNDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(data), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(READERS)
    ]
    cli_reads: list[subprocess.CompletedProcess] = []

    query = "SELECT count(*) AS n FROM tasks"

    def cli_reader() -> None:  # the real `ecomrlve sql`, as often as it starts
        while not stop.exists():
            cli_reads.append(
                subprocess.run(
                    [*ECOMRLVE, "sql", query, "--data", str(data), "--format", "csv"],
                    capture_output=True,
                    text=True,
                )
            )

    thread = threading.Thread(target=cli_reader)
    try:
        assert writer.stdout.readline().strip() == "ready"
        thread.start()
        _, werr = writer.communicate(timeout=240)
        assert writer.returncode == 0, werr[-2000:]
    finally:
        stop.touch()
        thread.join(timeout=60)
        outputs = [r.communicate(timeout=60) for r in readers]
    reads = [line for out, _ in outputs for line in out.splitlines()]
    errors = [line for line in reads if line.startswith("error")]
    assert not errors, errors[:5]
    counts = [tuple(map(int, line.split())) for line in reads]
    assert len(counts) >= 20, f"only {len(counts)} reads during the publishes"
    assert all(n == distinct for n, distinct in counts), "a duplicated task_id was visible"
    seen = {n for n, _ in counts}
    assert seen <= expected, f"reads saw a half-applied publish: {sorted(seen - expected)}"
    assert cli_reads, "the CLI reader never ran"
    for done in cli_reads:
        assert done.returncode == 0, done.stderr
        assert int(done.stdout.split()[1]) in expected
    last = small if ROUNDS % 2 == 0 else big
    assert _count(data)[0] == old + pl.read_parquet(last).height
    print(f"{len(counts)} reads, counts seen {sorted(seen)}, {len(cli_reads)} CLI reads")
