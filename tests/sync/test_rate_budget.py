"""One rate budget per credential in PostgreSQL (issue 12, item 7): a pause or an empty bucket seen by
one run holds every run of the same credential; garbage headers change nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.run import DEFAULT_PREFETCH, Progress, execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.rate_budget import UNMETERED_FOR, PgRateGate, credential_key
from app.services.sources import start_run
from tests.sync.conftest import Jira, JiraFactory, add_source, live_ids, scalar, sync

KEY = credential_key("jira", "http://jira.example", "bot@example.com:token")


def test_the_key_never_contains_the_credential() -> None:
    assert len(KEY) == 64 and "token" not in KEY
    assert credential_key("jira", "http://jira.example", "another-token") != KEY


def test_a_429_seen_by_one_run_pauses_another_run_of_the_same_credential(
    fresh_db_url: str, probe: psycopg.Connection[Any]
) -> None:
    with connect(fresh_db_url, autocommit=True) as a, connect(fresh_db_url, autocommit=True) as b:
        first, second = PgRateGate(a, KEY), PgRateGate(b, KEY)
        other = PgRateGate(b, credential_key("jira", "http://jira.example", "someone else"))
        first.observe(429, {"Retry-After": "1"})

        t0 = time.monotonic()
        other.wait(patience=30)
        unrelated = time.monotonic() - t0
        t0 = time.monotonic()
        second.wait(patience=30)
        paused = time.monotonic() - t0

    assert unrelated < 0.2
    assert 0.7 <= paused <= 2.5
    assert scalar(probe, "select count(*) from rate_budgets") == 1


def test_a_pause_another_run_sees_reaches_an_unlimited_run_within_the_trusted_window(fresh_db_url: str) -> None:
    with connect(fresh_db_url, autocommit=True) as a, connect(fresh_db_url, autocommit=True) as b:
        mine, theirs = PgRateGate(a, KEY), PgRateGate(b, KEY)
        mine.wait(patience=30)  # no limit known: trusted for UNMETERED_FOR seconds
        theirs.observe(429, {"Retry-After": "2"})
        t0 = time.monotonic()
        mine.wait(patience=30)
        trusted = time.monotonic() - t0
        time.sleep(UNMETERED_FOR)
        t0 = time.monotonic()
        mine.wait(patience=30)
        paused = time.monotonic() - t0

    assert trusted < 0.2
    assert 0.7 <= paused <= 2.5


def test_a_limit_a_run_sees_itself_holds_its_next_request_at_once(fresh_db_url: str) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        gate = PgRateGate(conn, KEY)
        gate.wait(patience=30)
        gate.observe(429, {"Retry-After": "1"})
        t0 = time.monotonic()
        gate.wait(patience=30)
        paused = time.monotonic() - t0

    assert 0.7 <= paused <= 2.5


def test_the_bucket_from_x_ratelimit_headers_spaces_requests(fresh_db_url: str) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        gate = PgRateGate(conn, KEY)
        gate.observe(200, {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4"})
        t0 = time.monotonic()
        for _ in range(10):
            gate.wait(patience=30)
        elapsed = time.monotonic() - t0

    # 5 tokens at once, then 5 more at 5 per second.
    assert 0.7 <= elapsed <= 2.5


def test_concurrent_gates_share_one_bucket(fresh_db_url: str) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        PgRateGate(conn, KEY).observe(200, {"X-RateLimit-Limit": "4"})
    done: list[float] = []

    def worker() -> None:
        with connect(fresh_db_url, autocommit=True) as conn:
            gate = PgRateGate(conn, KEY)
            for _ in range(4):
                gate.wait(patience=30)
            done.append(time.monotonic())

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # 12 requests through one bucket of 4 per second: about 2 s, not the 0 s three private buckets allow.
    assert max(done) - t0 >= 1.5


def test_garbage_rate_limit_headers_write_nothing_or_a_short_pause(
    fresh_db_url: str, probe: psycopg.Connection[Any]
) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        gate = PgRateGate(conn, KEY)
        gate.observe(200, {"X-RateLimit-Limit": "lots", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "never"})
        assert scalar(probe, "select count(*) from rate_budgets") == 0
        gate.observe(429, {"Retry-After": "soon", "X-RateLimit-Reset": "garbage"})

    pause = scalar(probe, "select extract(epoch from paused_until - now()) from rate_budgets")
    assert 0 < float(pause) <= 1.0


def test_a_source_sending_garbage_rate_limit_headers_syncs_with_nothing_lost(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    """End to end (issue 12, bad input): 429s whose Retry-After and X-RateLimit-* are garbage; the run
    retries with its own short backoff and loads every issue (200s with garbage headers: the unit test above)."""
    garbage = {"X-RateLimit-Limit": "lots", "X-RateLimit-Remaining": "-x", "X-RateLimit-Reset": "never"}
    jira.fault(status=429, count=4, headers={**garbage, "Retry-After": "soon"})
    source_id = add_source(conn, keyring, jira)

    outcome, run = sync(conn, keyring, source_id, "full")

    assert outcome.state == "succeeded" and run.error_count == 0
    assert run.rate_limited >= 4
    assert len(live_ids(probe, source_id)) == len(jira.keys())


@pytest.mark.parametrize("prefetch", [DEFAULT_PREFETCH, 0], ids=["read-ahead", "sequential"])
def test_a_run_cancelled_while_the_source_s_pause_holds_its_requests_ends_during_the_pause(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    prefetch: int,
) -> None:
    """Every request the listing makes after the first page is answered 429 with a 300 s Retry-After: the
    threads that list (the read-ahead and the fan-out, or the run's own thread with no read-ahead) sleep
    through the shared pause. A cancel must end the run while the pause still holds, not when it (or the
    rate-limit patience) is over (decision 158)."""
    jira = jira_factory(400)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '2' where key = 'stale_run_after'")  # a beat each 0.5 s
    cancels: list[threading.Thread] = []

    def cancel_once_paused(run_id: int) -> None:
        deadline = time.monotonic() + 30  # a guard against a hang, not an assertion on speed
        while not scalar(probe, "select count(*) from rate_budgets where paused_until > now()"):
            assert time.monotonic() < deadline, "the source's pause never reached the budget"
            time.sleep(0.05)
        time.sleep(0.5)  # the listing's threads are asleep in the gate by now
        rq.cancel_run(probe, id=run_id)

    def pause_and_cancel(progress: Progress) -> None:
        if not cancels:
            jira.fault(status=429, count=100_000, retry_after=300)
            cancels.append(threading.Thread(target=cancel_once_paused, args=(progress.run_id,)))
            cancels[0].start()

    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    outcome = execute_run(
        conn, run_id, worker_id="test-worker", keyring=keyring, on_progress=pause_and_cancel, prefetch=prefetch
    )
    run = rq.get_run(conn, id=run_id)
    assert run is not None
    still_paused = scalar(probe, "select paused_until > now() from rate_budgets")
    for thread in cancels:
        thread.join(30)
    assert outcome.state == "cancelled", outcome
    assert still_paused, "the run ended only once the source's pause was over"
    assert run.entities_done is not None and 0 < run.entities_done < 400
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == run.entities_done
    assert not [t.name for t in threading.enumerate() if t.name.startswith(f"run-{run.id}-")]
