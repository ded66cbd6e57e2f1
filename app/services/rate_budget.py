"""One rate budget per credential, in PostgreSQL (issue 12, item 7).

:class:`PgRateGate` implements ``connectors.base.RateGate`` for one run: before each request it takes a
token (``harvester_take_rate_token``) and sleeps while the credential is paused or its bucket is empty;
after each response it feeds the budget what the source said. Every run and worker using the same
credential shares the row, so a 429 storm pauses all of them at once instead of each retrying alone.

Headers read (garbage is ignored, never fatal): ``Retry-After`` on 429/503 -> pause; ``X-RateLimit-
Remaining: 0`` with ``X-RateLimit-Reset`` (epoch seconds or an HTTP/ISO date) -> pause until the reset;
``X-RateLimit-Limit`` -> bucket capacity, refilled by ``X-RateLimit-FillRate`` per
``X-RateLimit-Interval-Seconds`` (Jira Cloud) or else the whole limit per second. A response saying
nothing about limits writes nothing.

The gate uses the run's own connection between page transactions (the pipeline fetches outside them),
one autocommit statement per request — except while the credential has no bucket to spend (no source
ever described a limit, and no pause is on): that answer is trusted for ``UNMETERED_FOR`` seconds, so an
unlimited source costs one statement per ``UNMETERED_FOR``, not one per request (docs/decisions.md
decision 62). A limit this gate observes itself ends the trust at once; one another run observes reaches
this run within ``UNMETERED_FOR``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg

from app.queries import rate_budgets as rb
from app.settings import PlatformSettings
from connectors.base import RunStopped, SourceConfig
from connectors.http import parse_retry_after

SAFETY = 0.9  # share of the advertised refill rate a bucket-shaped budget uses
WINDOW_SHARE = 0.98  # share of a fixed window's limit the evenly paced budget uses
MAX_SLEEP = 5.0  # ask again at least this often: another run may have refilled or a pause ended
# How long "this credential has nothing to spend" holds without asking again. The statement per request
# was a third of the fan-out threads' time against a source answering at once (docs/performance.md).
UNMETERED_FOR = 0.5


def credential_key(connector_type: str, base_url: str, credential: str | None) -> str:
    """SHA-256 hex of what identifies a credential at a source (the secret never leaves memory)."""
    raw = "\0".join((connector_type, base_url.rstrip("/"), credential or ""))
    return hashlib.sha256(raw.encode()).hexdigest()


def with_rate_budget(
    conn: psycopg.Connection[Any],
    config: SourceConfig,
    connector_type: str,
    settings: PlatformSettings,
    *,
    own_connection: bool,
) -> SourceConfig:
    """``config`` with the shared budget of its credential, the platform's rate-limit patience, the
    platform's fan-out width (the budget caps the rate whatever the width), how long a directory read
    whole by an earlier run may serve this one (connectors.directories; fewer requests to the budget) and
    what one answer may be (decision 162).

    ``own_connection``: ``conn`` serves the fetch alone, never a page transaction. Only then may a listing's
    next page be requested ahead of its turn (``SourceConfig.listing_ahead``): such a request can take its
    token while the run's thread writes a page."""
    gate = PgRateGate(conn, credential_key(connector_type, config.base_url, config.credential))
    return replace(
        config,
        rate_gate=gate,
        rate_limit_patience=float(settings.rate_limit_patience),
        fanout=settings.fetch_fanout,
        directory_ttl=float(settings.directory_ttl),
        response_max_bytes=settings.response_max_bytes,
        response_max_seconds=float(settings.response_max_seconds),
        listing_ahead=own_connection,
    )


class PgRateGate:
    def __init__(self, conn: psycopg.Connection[Any], key: str) -> None:
        self.conn = conn
        self.key = key
        self.waited = 0.0  # seconds this gate slept (for measurements)
        self._unmetered_until = 0.0  # monotonic time until which requests go without asking
        # Set by stop(): the gate's waits end, and a request waiting for its answer is given up (decision 166).
        self.stopped = threading.Event()

    def stop(self) -> None:
        """The run stopped early: every wait, the one sleeping now included, raises :class:`RunStopped`
        (decision 158). Without it a listing thread sleeping through the source's pause (a 429's
        Retry-After, up to the rate-limit patience) held a cancelled run's worker until the pause ended."""
        self.stopped.set()

    def wait(self, patience: float) -> None:
        if self.stopped.is_set():
            raise RunStopped("the run stopped: no more requests")
        now = time.monotonic()
        if now < self._unmetered_until:
            return
        deadline = now + max(0.0, patience)
        while True:
            taken = rb.take_rate_token(self.conn, credential_key=self.key)
            wait = (taken.wait_seconds or 0.0) if taken is not None else 0.0
            now = time.monotonic()
            if wait <= 0 and taken is not None and not taken.metered:
                self._unmetered_until = now + UNMETERED_FOR
            left = deadline - now
            if wait <= 0 or left <= 0:
                return
            pause = min(wait, left, MAX_SLEEP)
            if self.stopped.wait(pause):
                raise RunStopped("the run stopped while the source's rate limit held its next request")
            self.waited += pause

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        pause = _pause(status, headers)
        capacity, refill = _bucket(headers)
        if pause is None and capacity is None:
            return
        # A fixed window that named its end (X-RateLimit-Reset) opens with its whole quota: the runs may
        # use it at once instead of creeping back at the refill rate (issue 12 §7 tuning).
        fresh = _window_limit(headers) if pause is not None and _reset_in(headers.get("X-RateLimit-Reset")) else None
        rb.observe_rate_limit(
            self.conn,
            credential_key=self.key,
            capacity=capacity,
            refill_per_second=refill,
            pause_seconds=pause,
            resume_tokens=fresh,
        )
        self._unmetered_until = 0.0  # a limit now applies: the next request asks first


def _pause(status: int, headers: Mapping[str, str]) -> float | None:
    # The window's end, when the source names it, is exact; Retry-After is rounded up to whole seconds
    # and, counted from each 429's arrival, would keep pushing the shared pause out.
    if status in (429, 503) or (headers.get("X-RateLimit-Remaining") or "").strip() == "0":
        reset = _reset_in(headers.get("X-RateLimit-Reset"))
        if reset is not None:
            return reset
    if status in (429, 503):
        after = parse_retry_after(headers.get("Retry-After"))
        if after is not None:
            return min(after, 3600.0)
    return 1.0 if status == 429 else None  # "slow down" without saying how long: a short shared pause


def _reset_in(value: str | None) -> float | None:
    """Seconds until X-RateLimit-Reset (epoch seconds, or a date); None when garbage or past."""
    if not value:
        return None
    text = value.strip()
    now = datetime.now(UTC)
    try:
        at = datetime.fromtimestamp(float(text), UTC)
    except (ValueError, OverflowError, OSError):
        try:
            at = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            after = parse_retry_after(text)
            return after if after is not None and after <= 3600 else None
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
    seconds = (at - now).total_seconds()
    return seconds if 0 < seconds <= 3600 else None


def _bucket(headers: Mapping[str, str]) -> tuple[float | None, float | None]:
    limit = _positive(headers.get("X-RateLimit-Limit"))
    if limit is None:
        return None, None
    fill = _positive(headers.get("X-RateLimit-FillRate"))
    interval = _positive(headers.get("X-RateLimit-Interval-Seconds"))
    if fill is not None and interval is not None:
        # The source is a token bucket itself (Atlassian Cloud): the same shape, run a little under it.
        return limit, fill / interval * SAFETY
    # A fixed window of `limit` per second. The bucket may burst a window's quota; when that crosses the
    # window's edge the 429 names the window's end, every run pauses until then, and the window that opens
    # admits the quota again (resume_tokens): no window is left half used (issue 12 §7 tuning).
    return limit, limit * WINDOW_SHARE


def _window_limit(headers: Mapping[str, str]) -> float | None:
    """The quota of a fixed-window source (X-RateLimit-Limit without a fill rate), else None."""
    if headers.get("X-RateLimit-FillRate") or headers.get("X-RateLimit-Interval-Seconds"):
        return None
    return _positive(headers.get("X-RateLimit-Limit"))


def _positive(value: str | None) -> float | None:
    try:
        number = float((value or "").strip())
    except ValueError:
        return None
    return number if 0 < number < 1e9 else None
