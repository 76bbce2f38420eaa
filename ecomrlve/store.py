"""The store: Parquet files written atomically, and one DuckDB file with views over them.

Layout (see CONTRACT.md)::

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
import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

DB_NAME = "ecomrlve.duckdb"
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
    def curricula(self) -> Path:
        return self.root / "curricula"

    @property
    def plots(self) -> Path:
        return self.root / "plots"


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


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def temp_path_for(path: Path) -> Path:
    """A hidden sibling of `path` (same filesystem, so rename is atomic); ignored by globs."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


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
    _fsync_dir(path.parent)


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
    _fsync_dir(path.parent)


def file_hash(path: Path, length: int = 16) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:length]


def _sql_literal(text: str) -> str:
    """Quote a path as a SQL string literal (DDL such as CREATE VIEW takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _view_sources(paths: DataPaths) -> dict[str, str]:
    views: dict[str, str] = {}
    if paths.products.exists():
        views["products"] = f"SELECT * FROM read_parquet({_sql_literal(str(paths.products))})"
    if paths.policies.exists():
        views["policies"] = f"SELECT * FROM read_parquet({_sql_literal(str(paths.policies))})"
    if paths.tasks.exists() and any(paths.tasks.glob("scenario=*/difficulty=*/*.parquet")):
        pattern = str(paths.tasks / "scenario=*" / "difficulty=*" / "*.parquet")
        views["tasks"] = (
            f"SELECT * FROM read_parquet({_sql_literal(pattern)}, hive_partitioning=true, "
            "union_by_name=true)"
        )
    return views


def refresh_views(data: str | os.PathLike) -> list[str]:
    """(Re)create the views over whatever Parquet exists; return the view names."""
    paths = DataPaths.of(data)
    ensure_writable(paths.root)
    views = _view_sources(paths)
    with duckdb.connect(str(paths.db)) as con:
        for name, select in views.items():
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
    return sorted(views)


def connect(data: str | os.PathLike, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open the store's DuckDB file. Read-only by default: `ecomrlve sql` cannot write."""
    paths = DataPaths.of(data)
    if not paths.db.exists():
        if read_only:
            raise StoreError(
                f"no store at {paths.root}: run `ecomrlve catalog --data {paths.root}` first"
            )
        ensure_writable(paths.root)
    try:
        return duckdb.connect(str(paths.db), read_only=read_only)
    except duckdb.Error as err:
        raise StoreError(f"cannot open {paths.db}: {err}") from None


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
