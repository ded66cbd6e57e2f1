"""Derived run facts, computed whenever asked and never stored (seed 000, seed 003 "batch status").

- progress of one run: N of M, rate (items per second since it started) and ETA;
- status of a group of runs ("sync all"), chosen so that a failure is never hidden behind "done"
  (issue 14 item 3; docs/decisions.md "Group status"): see :func:`group_status`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

LIVE = ("queued", "running")
STATES = ("queued", "running", "succeeded", "failed", "cancelled")


class RunProgress(NamedTuple):
    """A NamedTuple, not a frozen dataclass: built once per run on every page of run history, where a frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` per field) was a third of ``progress()`` (issue 15
    §2). Immutable all the same."""

    done: int
    total: int | None
    percent: float | None
    elapsed_seconds: float | None
    rate_per_second: float | None
    eta_seconds: float | None


def progress(
    state: str,
    done: int | None,
    total: int | None,
    started_at: datetime | None,
    finished_at: datetime | None,
    now: datetime | None = None,
) -> RunProgress:
    n = done or 0
    percent = round(100.0 * n / total, 1) if total else None
    if started_at is None:
        return RunProgress(n, total, percent, None, None, None)
    end = finished_at or now or datetime.now(UTC)
    elapsed = max((end - started_at).total_seconds(), 0.0)
    rate = n / elapsed if elapsed > 0 else None
    eta: float | None = None
    if state in LIVE and rate and total is not None:
        eta = max(total - n, 0) / rate
    elif state not in LIVE:
        eta = 0.0
    return RunProgress(
        n,
        total,
        percent,
        round(elapsed, 3),
        round(rate, 3) if rate is not None else None,
        round(eta, 1) if eta is not None else None,
    )


GROUP_STATUSES = ("queued", "running", "succeeded", "partially_failed", "failed", "cancelled")


def group_status(states: Iterable[str]) -> tuple[str, dict[str, int]]:
    """The status of a non-empty set of runs and the count per state.

    - ``queued``: no run has started yet;
    - ``running``: some run is still queued or running (the counts already show finished failures);
    - ``succeeded``: every run succeeded;
    - ``partially_failed``: some succeeded, the others failed or were cancelled;
    - ``failed``: none succeeded and at least one failed;
    - ``cancelled``: every run was cancelled (an operator's choice, not a failure).

    There is no status for an empty set: the API answers 404 when none of the ids is a run.
    """
    counts = Counter(states)
    full = {s: counts.get(s, 0) for s in STATES}
    total = sum(full.values())
    if total == 0:
        raise ValueError("a group status needs at least one run")
    if full["queued"] == total:
        return "queued", full
    if full["running"] or full["queued"]:
        return "running", full
    if full["succeeded"] == total:
        return "succeeded", full
    if full["succeeded"]:
        return "partially_failed", full
    if full["failed"]:
        return "failed", full
    return "cancelled", full
