"""Derived run facts, computed whenever asked and never stored (seed 000, seed 003 "batch status").

- progress of one run: N of M, rate (items per second since it started) and ETA;
- status of a group of runs ("sync all"): queued while none has started, running while any is live,
  cancelled when every run was cancelled, otherwise done with the count per terminal state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

LIVE = ("queued", "running")
STATES = ("queued", "running", "succeeded", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class RunProgress:
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


def group_status(states: Iterable[str]) -> tuple[str, dict[str, int]]:
    """The status of a set of runs and the count per state."""
    counts = Counter(states)
    full = {s: counts.get(s, 0) for s in STATES}
    total = sum(full.values())
    if total == 0:
        return "empty", full
    if full["running"] or (full["queued"] and full["queued"] < total):
        return "running", full
    if full["queued"] == total:
        return "queued", full
    if full["cancelled"] == total:
        return "cancelled", full
    return "done", full
