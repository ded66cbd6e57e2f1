"""Completeness audit after a reconciliation (issue 12, item 6).

Per scope unit (Jira project, Confluence space, Slack channel) the count the source reports
(``Connector.count_by_container``) is stored next to the live entities held once the run resolved,
in ``run_completeness``; a unit whose counts differ by more than the ``completeness_tolerance``
share of the source's count is named in the run's ``error_detail``. The run still succeeds: a
mismatch is a finding to look at (a hidden item, a permission gap, a filter), not a failure.

Two steps, so no network call runs inside the resolving transaction: :func:`source_counts` asks the
source before it, :func:`record` writes and judges inside it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from app.queries import completeness as cq
from connectors.base import SourceError
from connectors.http import HttpError

log = logging.getLogger(__name__)
MAX_NAMED = 5  # units named in error_detail; the rest are counted


@dataclass(frozen=True, slots=True)
class UnitCount:
    container: str
    source_count: int | None
    live_count: int

    def off_by_more_than(self, tolerance: float) -> bool:
        if self.source_count is None:
            return False
        return abs(self.source_count - self.live_count) > tolerance * self.source_count


class Counting(Protocol):
    """What the audit asks of a connector (or of the process that lists its source, decision 135)."""

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]: ...


def source_counts(conn: psycopg.Connection[Any], connector: Counting, source_id: int) -> Mapping[str, int | None]:
    """What the source reports per unit, for every unit we hold live entities in and every unit the
    connector knows; empty when the source cannot be asked (the audit is then skipped, not failed)."""
    held = [r.container for r in cq.count_live_by_container(conn, source_id=source_id) if r.container]
    try:
        return dict(connector.count_by_container(held))
    except (HttpError, SourceError) as exc:
        log.warning("completeness audit of source %s skipped: %s", source_id, exc)
        return {}


def record(
    conn: psycopg.Connection[Any], *, run_id: int, source_id: int, counts: Mapping[str, int | None], tolerance: float
) -> str | None:
    """Store the audit rows of ``run_id`` (in the caller's transaction); a one-line finding or None."""
    if not counts:
        return None
    live = {r.container: int(r.live) for r in cq.count_live_by_container(conn, source_id=source_id)}
    units = [UnitCount(c, counts.get(c), live.get(c, 0)) for c in sorted({*counts, *(k for k in live if k)})]
    cq.insert_run_completeness(
        conn,
        run_id=run_id,
        rows=[{"container": u.container, "source_count": u.source_count, "live_count": u.live_count} for u in units],
    )
    off = [u for u in units if u.off_by_more_than(tolerance)]
    if not off:
        return None
    named = "; ".join(f"{u.container} source {u.source_count} / held {u.live_count}" for u in off[:MAX_NAMED])
    more = f" (+{len(off) - MAX_NAMED} more)" if len(off) > MAX_NAMED else ""
    return f"completeness: {len(off)} of {len(units)} units differ by more than {tolerance:.0%}: {named}{more}"
