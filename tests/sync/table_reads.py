"""How many rows a transaction has read from a table so far: what the read-path tests bound (decisions 81, 86, 87)."""

from __future__ import annotations

from typing import Any

import psycopg


def rows_read(conn: psycopg.Connection[Any], table: str) -> int:
    """Rows of ``table`` read by sequential scans and fetched through indexes in the current transaction."""
    row = conn.execute(
        "select seq_tup_read + coalesce(idx_tup_fetch, 0) from pg_stat_xact_user_tables where relname = %s",
        (table,),
    ).fetchone()
    assert row is not None
    return int(row[0])
