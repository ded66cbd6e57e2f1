"""No orphaned runs (issue 10 "Deliver" 2): every way a run's job can end leaves the run terminal with a
reason, or leaves a job that will resume it. Each test breaks a real process at one of those points:
a worker whose embedder cannot load, a source without a connector, a credential no key decrypts, a job
cancelled or never queued, a lane held past ``lane_wait_max``, a run cancelled mid-way, and
``harvester sync`` on a busy lane or killed mid-run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
import pytest

from app.jobs.webhooks import apply_webhook
from app.pipeline.run import LANE_LOCK_CLASS
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import start_run
from tests.conftest import REPO, as_worker
from tests.jobs.conftest import Procs, committed, queued, wait_for
from tests.sync.conftest import Jira, JiraFactory, add_source, scalar


def _run(probe: psycopg.Connection[Any], run_id: int) -> tuple[str, str | None, Any]:
    row = probe.execute("select state, error_detail, finished_at from sync_runs where id = %s", (run_id,)).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def _ended(probe: psycopg.Connection[Any], run_id: int) -> bool:
    return _run(probe, run_id)[0] not in ("queued", "running")


def _jobs(probe: psycopg.Connection[Any], run_id: int) -> list[tuple[str, Any]]:
    return [
        (r[0], r[1])
        for r in probe.execute(
            "select status::text, scheduled_at from procrastinate_jobs "
            "where task_name = 'harvester:run_sync' and (args ->> 'run_id')::bigint = %s order by id",
            (run_id,),
        )
    ]


def test_a_job_that_raises_fails_its_run_naming_the_exception(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    run_id = queued(conn, source_id)
    # A real broken dependency the configuration cannot see: the embedder refuses, when the job builds it,
    # an API key that cannot be sent as an HTTP header.
    key = "embedder-key-€-canary"
    procs.worker(
        "--no-periodic",
        HARVESTER_EMBEDDER="openai",
        HARVESTER_EMBEDDER_URL="http://127.0.0.1:9/v1",
        HARVESTER_EMBEDDER_MODEL="any",
        HARVESTER_EMBEDDER_DIMENSION="384",
        HARVESTER_EMBEDDER_API_KEY=key,
    )

    wait_for(lambda: _ended(probe, run_id), 60, "the run to end", procs)

    state, detail, finished = _run(probe, run_id)
    assert state == "failed" and finished is not None
    assert detail is not None and detail.startswith("the job broke: ValueError") and "API key" in detail
    assert key not in detail
    wait_for(lambda: _jobs(probe, run_id)[0][0] == "failed", 10, "the job to be marked failed", procs)


def test_a_source_without_a_connector_fails_its_run_with_the_reason(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("update sources set connector_type = 'gitlab' where id = %s", (source_id,))
    run_id = queued(conn, source_id)
    procs.worker("--no-periodic")

    wait_for(lambda: _ended(probe, run_id), 60, "the run to end", procs)

    state, detail, _ = _run(probe, run_id)
    assert state == "failed" and "unknown connector type 'gitlab'" in str(detail)


def test_an_undecryptable_credential_fails_the_run_and_the_tick_goes_on(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    broken = add_source(conn, keyring, jira_factory(5), name="broken")
    run_id = queued(conn, broken)
    # A worker with another key: the broken source's credential cannot be read. The other source, created
    # with that worker's key, must still be scheduled by the same ticks.
    other_key = Keyring(os.urandom(32))
    healthy = add_source(conn, other_key, jira_factory(5), name="healthy")
    # Nobody connected it within a polling interval (seed 001): the tick starts its first full sync itself.
    probe.execute("update sources set created_at = now() - interval '1 hour' where id = %s", (healthy,))
    procs.worker(HARVESTER_SECRET_KEY=other_key.current.hex())

    wait_for(lambda: _ended(probe, run_id), 60, "the run to end", procs)
    state, detail, _ = _run(probe, run_id)
    assert state == "failed" and "not configured" in str(detail) and TOKEN_FRAGMENT not in str(detail)
    wait_for(
        lambda: scalar(
            probe, "select count(*) from sync_runs where source_id = %s and state = 'succeeded'", (healthy,)
        ),
        60,
        "the healthy source's scheduled run",
        procs,
    )


TOKEN_FRAGMENT = "emulator-token"


def test_the_tick_reaps_queued_runs_no_job_will_run_and_unblocks_the_source(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    jobless = add_source(conn, keyring, jira_factory(5), name="jobless")
    cancelled = add_source(conn, keyring, jira_factory(5), name="cancelled")
    never_queued = start_run(conn, jobless, mode="full", trigger="manual")  # a writer that forgot the job
    conn.commit()
    cancelled_run = queued(conn, cancelled)
    jobs = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=fresh_db_url))
    with jobs.open():
        job_id = probe.execute(
            "select id from procrastinate_jobs where (args ->> 'run_id')::bigint = %s", (cancelled_run,)
        ).fetchone()
        assert job_id is not None
        assert jobs.job_manager.cancel_job_by_id(job_id[0])
    probe.execute("update sync_runs set created_at = now() - interval '1 minute' where state = 'queued'")

    procs.worker()
    wait_for(lambda: _ended(probe, never_queued) and _ended(probe, cancelled_run), 30, "the reaper", procs)

    assert _run(probe, never_queued)[:2] == ("failed", "orphaned: no job was ever queued for it")
    assert _run(probe, cancelled_run)[:2] == ("failed", "orphaned: its job ended cancelled before the run started")
    # Not blocked: the schedule starts each source's next run, and it completes. Neither source ever had
    # a full sync, so that run is the first full one, due one polling interval (here 60 s) after the last.
    probe.execute(
        "update sources set sync_interval = 60, created_at = now() - interval '1 hour' where id in (%s, %s)",
        (jobless, cancelled),
    )
    wait_for(
        lambda: (
            scalar(
                probe,
                "select count(distinct source_id) from sync_runs where source_id in (%s, %s) "
                "and trigger = 'schedule' and state = 'succeeded'",
                (jobless, cancelled),
            )
            == 2
        ),
        60,
        "a new run of each source",
        procs,
    )


def test_the_lane_wait_is_bounded_by_lane_wait_max(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("select pg_advisory_lock(%s, %s)", (LANE_LOCK_CLASS, source_id))  # Knowledge Store's lock
    try:
        run_id = queued(conn, source_id)
        procs.worker("--no-periodic")
        # Within the bound (6 h by default) the run waits queued and its job is retried later.
        wait_for(
            lambda: scalar(probe, "select max(attempts) from procrastinate_jobs") >= 1, 30, "the first attempt", procs
        )
        assert _run(probe, run_id)[0] == "queued"
        assert _jobs(probe, run_id)[-1][0] == "todo"

        probe.execute("update platform_settings set value = '5' where key = 'lane_wait_max'")
        wait_for(lambda: _ended(probe, run_id), 40, "the retry to give up", procs)
    finally:
        probe.execute("select pg_advisory_unlock(%s, %s)", (LANE_LOCK_CLASS, source_id))

    state, detail, finished = _run(probe, run_id)
    assert state == "failed" and finished is not None
    assert "gave up waiting for the source's lane" in str(detail) and "lane_wait_max (5 s)" in str(detail)


@pytest.mark.parametrize("source", ["slow", "paused", "stalled"])
def test_a_run_cancelled_mid_way_ends_cancelled_and_frees_the_source(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    source: str,
) -> None:
    """Cancelled while the source answers slowly, while it has paused the credential (every request
    answered 429 with a 300 s Retry-After, the run's listing threads asleep in the rate gate, decision 158),
    or while it holds every answer for two minutes (the run's requests waiting on the wire, within the
    30 s read timeout, decision 166): each way the job ends within seconds, not when the source answers,
    the pause is over or a read times out."""
    jira = jira_factory(400)
    source_id = add_source(conn, keyring, jira)
    jira.fault(latency_ms=400)
    run_id = queued(conn, source_id)
    procs.worker("--no-periodic")
    committed(probe, run_id, procs)
    if source == "paused":
        jira.clear_faults()
        jira.fault(status=429, count=100_000, retry_after=300)
        paused = "select count(*) from rate_budgets where paused_until > now()"
        wait_for(lambda: scalar(probe, paused), 30, "the source's pause to reach the budget", procs)
    if source == "stalled":
        jira.clear_faults()
        jira.fault(latency_ms=120_000)
        time.sleep(1.0)  # the requests in flight now wait on the stalled source

    assert rq.cancel_run(conn, id=run_id) is not None  # what POST /runs/{id}/cancel runs
    conn.commit()
    # Before decision 166 a stalled request held the job for its read timeout (30 s) at least.
    bound = 20 if source == "stalled" else 30
    wait_for(lambda: _jobs(probe, run_id)[0][0] == "succeeded", bound, "the job to notice and stop", procs)

    state, _, finished = _run(probe, run_id)
    assert state == "cancelled" and finished is not None
    if source == "paused":
        assert scalar(probe, "select count(*) from rate_budgets where paused_until > now()") == 1
    assert queued(conn, source_id, "incremental") > run_id  # the one-active-run lock is free again


def _cli_sync(procs: Procs, source: str, *args: str) -> subprocess.Popen[bytes]:
    log = procs.tmp / "cli-sync.log"
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "sync", source, *args],
            cwd=REPO,
            env=procs.env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_harvester_sync_on_a_busy_lane_leaves_its_run_to_a_worker(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("select pg_advisory_lock(%s, %s)", (LANE_LOCK_CLASS, source_id))
    try:
        cli = _cli_sync(procs, "jira", "--mode", "full")
        assert cli.wait(timeout=60) == 2  # a HarvesterError: one line, exit 2
    finally:
        probe.execute("select pg_advisory_unlock(%s, %s)", (LANE_LOCK_CLASS, source_id))
    output = (procs.tmp / "cli-sync.log").read_text()
    assert "lane is held by another process" in output and "Traceback" not in output
    run_id = scalar(probe, "select max(id) from sync_runs where source_id = %s", (source_id,))
    assert _run(probe, run_id)[0] == "queued"
    [(status, scheduled_at)] = _jobs(probe, run_id)
    assert status == "todo" and scheduled_at is not None  # the hand-off job, a minute out

    probe.execute(
        "update procrastinate_jobs set scheduled_at = now() where (args ->> 'run_id')::bigint = %s", (run_id,)
    )
    procs.worker("--no-periodic")  # the hand-off time has come (moved above instead of waiting a minute)
    wait_for(lambda: _ended(probe, run_id), 60, "a worker to run it", procs)
    assert _run(probe, run_id)[0] == "succeeded"


def test_a_killed_harvester_sync_run_is_resumed_by_a_worker(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    items = 400
    jira = jira_factory(items)
    source_id = add_source(conn, keyring, jira)
    probe.execute(
        "insert into sync_runs (source_id, mode, trigger, state, started_at, finished_at) "
        "select %s, m, 'schedule', 'succeeded', now(), now() from unnest(array['incremental', 'reconciliation']) m",
        (source_id,),
    )
    probe.execute("update platform_settings set value = '5' where key = 'stale_run_after'")
    jira.fault(latency_ms=600)
    cli = _cli_sync(procs, "jira", "--mode", "full")
    try:
        wait_for(
            lambda: (
                scalar(
                    probe, "select coalesce(max(entities_done), 0) from sync_runs where source_id = %s", (source_id,)
                )
                >= 100
            ),
            60,
            "the CLI's first page",
            procs,
        )
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
    finally:
        if cli.poll() is None:
            cli.kill()
    run_id = scalar(probe, "select max(id) from sync_runs where source_id = %s", (source_id,))
    assert _run(probe, run_id)[0] == "running"
    jira.clear_faults()

    procs.worker()
    wait_for(lambda: _ended(probe, run_id), 60, "a worker to resume and finish the run", procs)

    state, done, deliveries, worker = probe.execute(
        "select state, entities_done, deliveries, worker_id from sync_runs where id = %s", (run_id,)
    ).fetchone() or (None, None, None, None)
    assert (state, done, deliveries) == ("succeeded", items, 2) and not str(worker).startswith("cli:")


def test_apply_webhook_commits_its_run_together_with_the_runs_job(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira: Jira,
    fresh_db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    as_worker(monkeypatch, fresh_db_url, keyring.current.hex(), tmp_path / "data")
    source_id = add_source(conn, keyring, jira)

    run_id = apply_webhook(source_id=source_id, upserts=[["ticket", "10004"]], deletes=[])

    assert run_id is not None and _run(probe, run_id)[0] == "queued"
    assert [status for status, _ in _jobs(probe, run_id)] == ["todo"]
