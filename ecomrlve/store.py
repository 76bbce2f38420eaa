"""The store: Parquet files written atomically, and one DuckDB file with views over them.

Layout::

    DIR/catalog/products.parquet, DIR/catalog/policies.parquet
    DIR/tasks/scenario=S/difficulty=D/*.parquet
    DIR/ecomrlve.duckdb          views products, policies, tasks + tables of later stages
    DIR/curricula/NAME/shard-NNNNN.parquet + manifest.json

Every Parquet file is written to a hidden temp file in the same folder, fsynced and renamed over
the target, so a reader (or a killed writer) never sees a half-written file. Everything else in
the project opens DuckDB through `connect`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

log = logging.getLogger(__name__)

DB_NAME = "ecomrlve.duckdb"
INIT_SCRIPT_NAME = "ecomrlve.sql"  # any DuckDB client, any folder: `.read DIR/ecomrlve.sql`
LOCK_NAME = ".ecomrlve.lock"
GATE_NAME = ".ecomrlve.gate"
JOURNAL_NAME = ".publish-journal.json"
# Storage format of a new DuckDB file: DuckDB >= 1.2 clients open it (2.x's default does not).
STORAGE_VERSION = "v1.2.0"
# on every view: the release of the views' definitions (2: `tasks` has `core_steps`), so a store
# an older release wrote is brought up to date by the next process that may write it
VIEWS_MARK = "ecomrlve views 2"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class StoreError(ValueError):
    """A problem with the data directory, named in one line."""


@dataclass(frozen=True)
class DataPaths:
    root: Path

    @classmethod
    def of(cls, data: str | os.PathLike) -> DataPaths:
        return cls(Path(data).expanduser().resolve())

    @property
    def catalog(self) -> Path:
        return self.root / "catalog"

    @property
    def products(self) -> Path:
        return self.catalog / "products.parquet"

    @property
    def policies(self) -> Path:
        return self.catalog / "policies.parquet"

    @property
    def catalog_meta(self) -> Path:
        return self.catalog / "catalog.json"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def db(self) -> Path:
        return self.root / DB_NAME

    @property
    def init_script(self) -> Path:
        return self.root / INIT_SCRIPT_NAME

    @property
    def curricula(self) -> Path:
        return self.root / "curricula"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    def curriculum_build_command(self, name: str) -> str:
        """The command that writes DATA/curricula/NAME: what a missing curriculum advises."""
        return f"ecomrlve curriculum build --name {name} --data {shlex.quote(str(self.root))}"


def validate_identifier(name: str, what: str = "name") -> str:
    """Return `name` if it is safe as a SQL identifier / folder name, else raise StoreError."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise StoreError(
            f"invalid {what} {name!r}: use letters, digits and '_' (not starting with a digit)"
        )
    return name


def ensure_writable(directory: Path) -> None:
    """Create `directory` if needed and prove it is writable, or raise StoreError."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".write-probe-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise StoreError(f"data directory {directory} is not writable: {err.strerror}") from None


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (best effort: errors are ignored)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def temp_path_for(path: Path) -> Path:
    """A hidden sibling of `path` (same filesystem, so rename is atomic); ignored by globs."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def write_png(fig, path: Path) -> Path:
    """Save a matplotlib figure as PNG at `path` atomically (a temp sibling, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(path)
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_bytes(data: bytes, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def atomic_write_parquet(df: pl.DataFrame, path: Path, *, row_group_size: int = 128_000) -> None:
    """Write `df` to `path` so that readers see either the old file or the complete new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(path)
    try:
        df.write_parquet(tmp, compression="zstd", statistics=True, row_group_size=row_group_size)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def file_hash(path: Path, length: int = 16) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:length]


def files_hash(*paths: Path, length: int = 16) -> str:
    """sha256 prefix of the files' bytes, in order (each length-prefixed, so moving bytes
    from one file to the next changes the hash)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.path.getsize(path).to_bytes(8, "little"))
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:length]


def _sql_literal(text: str) -> str:
    """Quote a path as a SQL string literal (DDL such as CREATE VIEW takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _relative(paths: DataPaths, path: Path) -> str:
    """`path` relative to the data folder, in forward slashes (what the views store)."""
    return path.relative_to(paths.root).as_posix()


def _view_sources(paths: DataPaths) -> dict[str, str]:
    """The views' SELECTs, with paths relative to the data folder (see `connect`)."""
    views: dict[str, str] = {}
    if paths.products.exists():
        views["products"] = (
            f"SELECT * FROM read_parquet({_sql_literal(_relative(paths, paths.products))})"
        )
    if paths.policies.exists():
        views["policies"] = (
            f"SELECT * FROM read_parquet({_sql_literal(_relative(paths, paths.policies))})"
        )
    task_files = sorted(paths.tasks.glob("scenario=*/difficulty=*/*.parquet"))
    if task_files:
        pattern = _relative(paths, paths.tasks) + "/scenario=*/difficulty=*/*.parquet"
        # a store whose every file predates `core_steps` counts every call as core, so that a
        # step band's SQL (`coalesce(core_steps, min_steps)`) reads it (files without either
        # column, such as a bare frame of ids, stay as they are)
        older = not _any_has_column(task_files, "core_steps") and _any_has_column(
            task_files, "min_steps"
        )
        added = ", min_steps AS core_steps" if older else ""
        views["tasks"] = (
            f"SELECT *{added} FROM read_parquet({_sql_literal(pattern)}, hive_partitioning=true, "
            "union_by_name=true)"
        )
    return views


def _any_has_column(files: list[Path], column: str) -> bool:
    """Whether one of the Parquet `files` has `column` (footers only, newest first)."""
    for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            if column in pl.read_parquet_schema(path):
                return True
        except (OSError, pl.exceptions.PolarsError):
            continue  # a damaged file is quarantined elsewhere
    return False


PARQUET_MAGIC = b"PAR1"
QUARANTINE_DIR = "quarantine"


def parquet_damage(path: Path) -> str | None:
    """Why `path` is not a whole Parquet file (None when its frame is intact).

    Checks the frame only (magic bytes at both ends, a footer that fits in the file): a file cut
    short by a crash or a full disk fails this, and reading a few bytes is cheap enough for
    every writer to check every file.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
            if size < 12:
                return f"truncated ({size} bytes)"
            fh.seek(size - 8)
            tail = fh.read(8)
    except OSError as err:
        return f"unreadable ({err.strerror or type(err).__name__})"
    if head != PARQUET_MAGIC:
        return "not a Parquet file (no magic bytes at its start)"
    if tail[4:] != PARQUET_MAGIC:
        return "truncated (no footer at its end)"
    if int.from_bytes(tail[:4], "little") + 12 > size:
        return "truncated (footer longer than the file)"
    return None


def _store_parquet_files(paths: DataPaths) -> list[Path]:
    """The Parquet files the views read (hidden temp files are not theirs)."""
    files = [p for p in (paths.products, paths.policies) if p.exists()]
    if paths.tasks.exists():
        files += sorted(paths.tasks.glob("scenario=*/difficulty=*/*.parquet"))
    return [p for p in files if not p.name.startswith(".")]


def quarantine_damaged(data: str | os.PathLike) -> list[Path]:
    """Move each damaged Parquet file the views read to DATA/quarantine/ (same relative path,
    a timestamp appended), with one warning line each; return where they went.

    A damaged file used to make every view refresh, so every writer, fail with DuckDB's
    traceback. Called under the writer lock (`recover`).
    """
    paths = DataPaths.of(data)
    moved: list[Path] = []
    for path in _store_parquet_files(paths):
        why = parquet_damage(path)
        if why is None:
            continue
        rel = _relative(paths, path)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = paths.root / QUARANTINE_DIR / f"{rel}.{stamp}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        fsync_dir(path.parent)
        log.warning(
            "damaged Parquet file %s: %s; moved to %s (regenerate what it held)",
            rel,
            why,
            _relative(paths, target),
        )
        moved.append(target)
    return moved


def damaged_file_error(data: str | os.PathLike, err: Exception) -> StoreError:
    """One line for a read that failed: names a damaged Parquet file of the store when there is
    one (a reader cannot move it; the next writer quarantines it), else DuckDB's first line."""
    paths = DataPaths.of(data)
    for path in _store_parquet_files(paths):
        why = parquet_damage(path)
        if why is not None:
            return StoreError(
                f"damaged Parquet file {path}: {why}; the next writer (e.g. `ecomrlve catalog "
                f"--data {paths.root}`) moves it to {paths.root / QUARANTINE_DIR}"
            )
    return StoreError(f"SQL error: {str(err).splitlines()[0]}")


def _create_views(con: duckdb.DuckDBPyConnection, paths: DataPaths) -> list[str]:
    views = _view_sources(paths)
    for name, select in views.items():
        try:
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
            con.execute(f"COMMENT ON VIEW {name} IS {_sql_literal(VIEWS_MARK)}")
        except duckdb.Error as err:  # a file the frame check passes but DuckDB cannot read
            first = str(err).splitlines()[0]
            raise StoreError(f"cannot create the {name} view in {paths.root}: {first}") from None
    write_init_script(paths.root)
    return sorted(views)


def refresh_views(data: str | os.PathLike) -> list[str]:
    """(Re)create the views over whatever Parquet exists, and the init script that opens
    them from anywhere (`init_script`); return the view names."""
    paths = DataPaths.of(data)
    ensure_writable(paths.root)
    with writer(paths.root) as con:  # waits while a reader has the file open
        return _create_views(con, paths)


def update_views(data: str | os.PathLike) -> None:
    """Bring the views of a store an older release wrote up to this release's definitions
    (e.g. its `tasks` view without `core_steps`, which a step band's SQL reads), when this
    process may write there; a current store, or one it cannot write, is left as it is."""
    paths = DataPaths.of(data)
    if not paths.db.exists() or not os.access(paths.root, os.W_OK):
        return
    with contextlib.closing(connect(paths.root)) as con:
        views = "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal"
        marks = dict(con.execute(views).fetchall())
    if any(marks.get(name) != VIEWS_MARK for name in _view_sources(paths)):
        refresh_views(paths.root)


def init_script(data: str | os.PathLike) -> str:
    """The SQL that opens the store's views in any DuckDB client started in any folder.

    The views name their Parquet files relative to the data folder; a client started
    elsewhere resolves those against its own folder and fails. The script sets DuckDB's
    `file_search_path` to the data folder, attaches the store read-only and makes it the
    default catalog. Paths in it are absolute: ecomrlve rewrites it whenever it refreshes the
    views, so a moved folder gets its own on its next write or `ecomrlve sql`.
    """
    root = DataPaths.of(data).root
    db = root / DB_NAME
    return (
        f"-- ecomrlve store {root}: its views from any folder, in any DuckDB client\n"
        f"--   duckdb -init {root / INIT_SCRIPT_NAME}    (or .read it in a session)\n"
        f"--   Python: con = duckdb.connect(); con.execute(open(PATH).read())\n"
        f"SET file_search_path = {_sql_literal(str(root))};\n"
        f"ATTACH IF NOT EXISTS {_sql_literal(str(db))} AS ecomrlve (READ_ONLY);\n"
        "USE ecomrlve;\n"
    )


def write_init_script(data: str | os.PathLike) -> Path:
    """Write `DIR/ecomrlve.sql` (see `init_script`) unless it already says the same."""
    paths = DataPaths.of(data)
    text = init_script(paths.root).encode()
    with contextlib.suppress(OSError):
        if paths.init_script.read_bytes() == text:
            return paths.init_script
    atomic_write_bytes(text, paths.init_script)
    return paths.init_script


def freshen_init_script(data: str | os.PathLike) -> None:
    """`write_init_script` for readers: a folder that was moved gets a script naming its
    new place; a folder this process cannot write keeps its old one (nothing fails)."""
    with contextlib.suppress(OSError):
        write_init_script(data)


def data_relative(data: str | os.PathLike, path: str | os.PathLike) -> str:
    """`path` relative to the data folder (POSIX slashes, `..` when outside it), as tables
    store paths: a moved or copied folder, with its run folders beside it, still finds them.

    >>> data_relative("/srv/data", "/srv/data/runs/a"), data_relative("/srv/data", "/srv/runs/a")
    ('runs/a', '../runs/a')
    """
    root = DataPaths.of(data).root
    return Path(os.path.relpath(Path(path).expanduser().resolve(), root)).as_posix()


@contextlib.contextmanager
def _gate(paths: DataPaths, *, exclusive: bool, deadline: float) -> Iterator[None]:
    """Hold the data directory's connection gate (shared for readers, exclusive for writers).

    DuckDB has no queue: a writer polling for the file while readers keep opening it can wait
    for ever. A writer holds the gate exclusively from its first try until it has the file, so
    new readers wait behind it instead of overtaking it. Held only while opening, never while a
    connection is in use. A directory this process cannot write to has no gate (and no writer).
    """
    try:
        fh = open(paths.root / GATE_NAME, "a+")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    try:
        delay = 0.002
        while True:
            try:
                fcntl.flock(fh, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"timed out waiting for a writer to open {paths.db}; try again"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        fh.close()  # drops the flock


def connect(
    data: str | os.PathLike, *, read_only: bool = True, wait_s: float = 30.0
) -> duckdb.DuckDBPyConnection:
    """Open the store's DuckDB file. Read-only by default: `ecomrlve sql` cannot write.

    The views name their Parquet files relative to the data folder, and every connection sets
    DuckDB's `file_search_path` to that folder, so a moved or copied folder reads its own
    files. A new file is written in storage version `STORAGE_VERSION`, which DuckDB 1.2 and
    later open (a plain client opens it too: `cd DIR && duckdb ecomrlve.duckdb`).

    DuckDB lets one process write at a time; writers here hold the file for milliseconds
    (a publish's renames + view refresh, result tables), so a connection that finds it locked
    retries for `wait_s`. Writers go through the gate first (`_gate`), so readers cannot
    starve them.
    """
    paths = DataPaths.of(data)
    # the same config on every connection: DuckDB refuses a second one that differs
    config = {"file_search_path": str(paths.root), "storage_compatibility_version": STORAGE_VERSION}
    if not paths.db.exists():
        if read_only:
            raise StoreError(
                f"no store at {paths.root}: run `ecomrlve catalog --data {paths.root}` first"
            )
        ensure_writable(paths.root)
    deadline = time.monotonic() + wait_s
    delay = 0.01
    with _gate(paths, exclusive=not read_only, deadline=deadline):
        while True:
            try:
                return duckdb.connect(str(paths.db), read_only=read_only, config=config)
            except duckdb.Error as err:
                if "lock" not in str(err).lower() or time.monotonic() > deadline:
                    first = str(err).splitlines()[0]
                    raise StoreError(f"cannot open {paths.db}: {first}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1 if read_only else 0.02)


@contextlib.contextmanager
def writer(data: str | os.PathLike) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-write connection for stages that write tables."""
    con = connect(data, read_only=False)
    try:
        yield con
    finally:
        con.close()


def write_table(data: str | os.PathLike, name: str, df: pl.DataFrame, *, append: bool) -> None:
    """Create/replace (or append to) a DuckDB table from a polars frame."""
    table = validate_identifier(name, "table name")
    with writer(data) as con:
        con.register("_incoming", df.to_arrow())
        exists = bool(
            con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
            ).fetchall()[0][0]
        )
        if append and exists:
            have = {
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                    [table],
                ).fetchall()
            }
            missing = [c for c in df.columns if c not in have]
            if missing:
                raise StoreError(f"table {table} lacks column(s) {missing}: it has another schema")
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
        else:
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _incoming")
        con.unregister("_incoming")


def read_products(data: str | os.PathLike) -> pl.DataFrame:
    paths = DataPaths.of(data)
    if not paths.products.exists():
        raise StoreError(f"no catalog at {paths.catalog}: run `ecomrlve catalog` first")
    return pl.read_parquet(paths.products)


def read_policies(data: str | os.PathLike) -> pl.DataFrame:
    paths = DataPaths.of(data)
    if not paths.policies.exists():
        raise StoreError(f"no policies at {paths.catalog}: run `ecomrlve catalog` first")
    return pl.read_parquet(paths.policies)


# ---- exclusive writer lock and crash-safe multi-file publish -----------------------------------


@contextlib.contextmanager
def exclusive_lock(data: str | os.PathLike, *, wait: bool = False) -> Iterator[None]:
    """Hold the data directory's writer lock (one pipeline writes at a time).

    With `wait=False` a second writer fails at once with a message naming the holder. The lock
    is an `flock`, so it is released by the kernel when a holder is killed.
    """
    paths = DataPaths.of(data)
    if paths.root in _RUN_LOCKS:  # this process runs a whole flow under the lock (`run_lock`)
        yield
        return
    ensure_writable(paths.root)
    lock_path = paths.root / LOCK_NAME
    fh = open(lock_path, "a+")  # noqa: SIM115 - held for the duration of the context
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise StoreError(
                f"another ecomrlve writer holds the lock on {paths.root} ({holder}); "
                "wait for it to finish or use another --data directory"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        recover(paths.root)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


_RUN_LOCKS: set[Path] = set()


@contextlib.contextmanager
def run_lock(data: str | os.PathLike) -> Iterator[None]:
    """Hold the writer lock for a whole multi-stage run (the pipeline flow).

    Another process is refused at once, before any work starts, and cannot write between the
    run's stages; the run's own stages take `exclusive_lock` themselves and re-enter it.
    """
    paths = DataPaths.of(data)
    with exclusive_lock(paths.root):
        _RUN_LOCKS.add(paths.root)
        try:
            yield
        finally:
            _RUN_LOCKS.discard(paths.root)


class Publish:
    """Stage files, then make them visible together (see `publish`)."""

    def __init__(self, paths: DataPaths):
        self.paths = paths
        self.moves: list[tuple[Path, Path]] = []
        self.removals: list[Path] = []

    def write_parquet(self, df: pl.DataFrame, final: Path) -> None:
        final = Path(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        staged = temp_path_for(final)
        df.write_parquet(staged, compression="zstd", statistics=True, row_group_size=128_000)
        with open(staged, "rb+") as fh:
            os.fsync(fh.fileno())
        self.moves.append((staged, final))

    def write_bytes(self, data: bytes, final: Path) -> None:
        final = Path(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        staged = temp_path_for(final)
        with open(staged, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self.moves.append((staged, final))

    def remove(self, final: Path) -> None:
        """Delete `final` as part of the same publish (e.g. files a rerun supersedes)."""
        self.removals.append(Path(final))


def _apply_journal(journal: Path) -> None:
    """Run the journal's renames and removals (idempotent), refresh the views, drop the journal.

    All of it happens while this process holds the DuckDB file read-write, so no reader
    (`connect`) is between two renames: each sees the whole publish or none of it. The journal
    goes last: while it exists, `recover` redoes all of this, so a crash between the renames
    and the view refresh cannot leave new files without a view over them.
    """
    entries = json.loads(journal.read_text())
    paths = DataPaths.of(journal.parent)
    with writer(paths.root) as con:
        for staged, final in entries["moves"]:
            if Path(staged).exists():
                os.replace(staged, final)
                fsync_dir(Path(final).parent)
        for final in entries["removals"]:
            Path(final).unlink(missing_ok=True)
        _create_views(con, paths)
    journal.unlink()
    fsync_dir(journal.parent)


_TEMP_OWNER = re.compile(r"\.tmp-(\d+)-")


def _owner_alive(temp: Path) -> bool:
    """True when the process that named `temp` (see `temp_path_for`) is alive (this one too).

    Some temp files are written without the writer lock (a search index being built, the
    chunks `generate_to_store` spills before it publishes), so a writer's `recover` must not
    sweep one whose owner is still at work.
    """
    match = _TEMP_OWNER.search(temp.name)
    if match is None:
        return False
    pid = int(match.group(1))
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(data: str | os.PathLike) -> bool:
    """Finish a publish that was killed after its journal was written; drop stale temp files;
    move damaged Parquet files to DATA/quarantine/ (`quarantine_damaged`).

    Returns True when a journal was rolled forward. Called under the writer lock.
    """
    paths = DataPaths.of(data)
    journal = paths.root / JOURNAL_NAME
    rolled = False
    quarantine_damaged(paths.root)  # before the journal: its view refresh reads every file
    if journal.exists():
        try:
            _apply_journal(journal)
            rolled = True
            log.warning("finished an interrupted publish in %s", paths.root)
        except (json.JSONDecodeError, KeyError):  # journal itself half-written: nothing moved
            journal.unlink()
    for folder in (paths.catalog, paths.tasks, paths.curricula):
        if folder.exists():
            for stale in folder.rglob(".*.tmp-*"):
                if _owner_alive(stale):  # e.g. a search index another process is building
                    continue
                with contextlib.suppress(OSError):
                    if stale.is_dir():
                        shutil.rmtree(stale)
                    else:
                        stale.unlink()
    return rolled


@contextlib.contextmanager
def publish(data: str | os.PathLike) -> Iterator[Publish]:
    """Write many Parquet files so that the store shows either all of them or none.

    Files are staged under hidden temp names (invisible to the views' globs). On success a
    journal listing the renames is written atomically, the renames run, the journal is removed
    and the views are refreshed. A crash before the journal leaves the old dataset (staged
    files are swept by `recover`); a crash after it is rolled forward by `recover`.
    """
    paths = DataPaths.of(data)
    ensure_writable(paths.root)
    tx = Publish(paths)
    try:
        yield tx
    except BaseException:
        for staged, _ in tx.moves:
            staged.unlink(missing_ok=True)
        raise
    journal = paths.root / JOURNAL_NAME
    entries = {
        "moves": [[str(a), str(b)] for a, b in tx.moves],
        "removals": [str(p) for p in tx.removals if p not in {b for _, b in tx.moves}],
    }
    atomic_write_bytes(json.dumps(entries).encode(), journal)
    _apply_journal(journal)
