"""Read-only SQL: the one check every user-supplied query or `--where` passes before DuckDB.

`ecomrlve sql QUERY` and the `--where` predicates of `solve` and `curriculum build` are trusted
SQL (the user's own store), but they must not write. A read-only DuckDB connection refuses
DDL/DML on the store file, yet still runs `COPY … TO`, `EXPORT DATABASE`, `EXPLAIN ANALYZE
COPY …` and `SET` — and a `--where` such as `1=1); COPY … TO 'x'; --` turns one query into
several statements, all of which `con.sql` runs. So a query is accepted only if DuckDB's own
parser splits it into exactly one statement of type SELECT (which covers WITH, FROM-first,
DESCRIBE, SHOW and SUMMARIZE; PIVOT, which DuckDB plans as several statements, is refused).

    check_read_query("SELECT count(*) FROM tasks")        # returns the query
    check_read_query("COPY tasks TO 'x.csv'")               # raises ReadOnlySQLError
"""

from __future__ import annotations

import duckdb

from ecomrlve.store import StoreError


class ReadOnlySQLError(StoreError):
    """A query that is not one read-only SELECT statement."""


def check_read_query(query: str) -> str:
    """Return `query` if it is exactly one SELECT statement; raise `ReadOnlySQLError` if not."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as err:
        raise ReadOnlySQLError(f"SQL error: {str(err).splitlines()[0]}") from None
    if len(statements) != 1:
        raise ReadOnlySQLError(
            f"SQL error: only one read-only SELECT statement is allowed (got {len(statements)} "
            "statements)"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise ReadOnlySQLError(
            f"SQL error: only one read-only SELECT statement is allowed (got {kind.name})"
        )
    return query
