"""The connections a database holds, by ``application_name``: for the tests that keep docs/operations.md's
connection counts true (decision 137)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from typing import Any

import psycopg

NAMED = """select application_name from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'"""
SETTLE = 10.0  # seconds the counts get to settle


def named(probe: psycopg.Connection[Any], *, since: datetime | None = None) -> Counter[str]:
    """The client connections to ``probe``'s database but ``probe``'s own, counted by name; with ``since``,
    only those opened since then (a backend outlives its client's close by a moment)."""
    if since is None:
        return Counter(r[0] for r in probe.execute(NAMED))
    return Counter(r[0] for r in probe.execute(NAMED + " and backend_start >= %s", (since,)))


def settled(probe: psycopg.Connection[Any], expected: Counter[str], beside: Counter[str] | None = None) -> Counter[str]:
    """The connections beyond ``beside`` once they equal ``expected``, or as they stand after ``SETTLE`` s. A
    backend outlives its client's close by a moment, and a thread may still be connecting: one snapshot could
    count a connection already gone or miss one on its way; one that stays (a pool left unnamed) is counted."""
    deadline = time.monotonic() + SETTLE
    while True:
        seen = named(probe) - (beside or Counter())
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)
