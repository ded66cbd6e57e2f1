"""The worker's periodic tick against a real database and emulator (seed 001 "Расписание", watchdog,
stale-run takeover) and the lane lock Knowledge Store holds around destructive steps."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from app.jobs.periodic import tick_once
from app.jobs.webhooks import apply_webhook
from app.pipeline.run import LANE_LOCK_CLASS, LaneBusy, execute_run
from app.schedule import last_window
from app.secrets import Keyring
from app.services import webhooks as webhook_intake
from app.services.sources import start_run
from tests.conftest import as_worker
from tests.sync.conftest import Jira, add_source, scalar, sync


@pytest.fixture()
def worker_env(monkeypatch: pytest.MonkeyPatch, fresh_db_url: str, keyring: Keyring, tmp_path: Path) -> None:
    """The tick opens its own connection and keyring from the environment, as in a worker process."""
    as_worker(monkeypatch, fresh_db_url, keyring.current.hex(), tmp_path / "data")


def _runs(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[str, str]]:
    return [
        (r[0], r[1])
        for r in probe.execute("select mode, trigger from sync_runs where source_id = %s order by id", (source_id,))
    ]


def test_tick_starts_an_incremental_run_for_a_new_active_source_only(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    active = add_source(conn, keyring, jira, name="active")
    paused = add_source(conn, keyring, jira, name="paused")
    probe.execute("update sources set state = 'paused' where id = %s", (paused,))
    # Put the last reconciliation after the latest window so only the interval rule applies.
    probe.execute(
        "insert into sync_runs (source_id, mode, trigger, state, finished_at) "
        "values (%s, 'reconciliation', 'schedule', 'succeeded', now())",
        (active,),
    )
    deferred: list[int] = []

    counts = tick_once(datetime.now(UTC), defer=lambda conn, run_id: deferred.append(run_id))

    assert counts["incremental"] == 1
    assert _runs(probe, active)[-1] == ("incremental", "schedule")
    assert _runs(probe, paused) == []
    assert deferred == [scalar(probe, "select max(id) from sync_runs where source_id = %s", (active,))]
    # The run is still queued: a second tick neither starts another nor fails on the lock.
    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: deferred.append(run_id))["incremental"] == 0


def test_tick_starts_reconciliation_once_per_window_in_the_org_time_zone(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '\"America/New_York\"' where key = 'timezone'")
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    window = last_window(now, 8820, 604800, "America/New_York")
    probe.execute(
        "insert into sync_runs (source_id, mode, trigger, state, finished_at, created_at) "
        "values (%s, 'reconciliation', 'schedule', 'succeeded', %s, %s)",
        (source_id, window - timedelta(days=6), window - timedelta(days=7)),
    )

    counts = tick_once(now, defer=lambda conn, run_id: None)

    assert counts["reconciliation"] == 1
    assert _runs(probe, source_id)[-1] == ("reconciliation", "schedule")


def _silent_source(conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira) -> int:
    """A webhook source synced in full a day ago and silent since, so that only the watchdog rule may start a
    run: the last success is older than watchdog_silence (12 h), and runs of both scheduled modes were
    started just now (they failed), so neither schedule rule fires."""
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    probe.execute("update sources set webhook_enabled = true where id = %s", (source_id,))
    probe.execute("update sync_runs set finished_at = now() - interval '1 day' where source_id = %s", (source_id,))
    for mode in ("incremental", "reconciliation"):
        probe.execute(
            "insert into sync_runs (source_id, mode, trigger, state, finished_at) "
            "values (%s, %s, 'schedule', 'failed', now())",
            (source_id, mode),
        )
    return source_id


def test_watchdog_starts_a_run_only_when_the_silent_source_has_a_delta(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = _silent_source(conn, probe, keyring, jira)
    before = len(_runs(probe, source_id))

    quiet = tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)
    assert quiet["watchdog"] == 0
    assert len(_runs(probe, source_id)) == before

    jira.patch(jira.key(5), summary="changed while the webhook was down")
    loud = tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)

    assert loud["watchdog"] == 1
    assert _runs(probe, source_id)[-1] == ("incremental", "watchdog")


@pytest.mark.parametrize(
    "fault",
    [{"route": r"GET /rest/api/[23]/search", "body": {"message": "Please log in"}}, {"status": 403, "ratio": 1.0}],
    ids=["a login page's answer", "a 403"],
)
def test_a_delta_check_that_cannot_tell_starts_the_watchdog_s_run_once_and_says_why(
    worker_env: None,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira: Jira,
    fault: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Decision 164. Before, a login page's JSON in place of the search answer read as "nothing new", and a
    403 (a token that lost its rights) escaped the check into the tick's traceback: either way a silent
    source stayed silent and no run said why. Now the check counts as a delta: the silence episode's one
    watchdog run finds out."""
    source_id = _silent_source(conn, probe, keyring, jira)
    jira.fault(**fault)

    with caplog.at_level(logging.WARNING, logger="app.services.connectors"):
        first = tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)
        again = tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)

    assert first["watchdog"] == 1 and again["watchdog"] == 0  # one run a silence episode
    assert _runs(probe, source_id)[-1] == ("incremental", "watchdog")
    warned = [r.getMessage() for r in caplog.records if "delta check could not tell" in r.getMessage()]
    assert warned and f"source {source_id}:" in warned[0], caplog.text
    assert ("'issues' array" in warned[0]) == ("body" in fault), warned[0]


def test_tick_resumes_a_stale_run_and_gives_up_after_max_deliveries(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    conn.commit()
    probe.execute(
        "update sync_runs set state = 'running', started_at = now(), deliveries = 1, "
        "heartbeat_at = now() - interval '1 hour', worker_id = 'dead' where id = %s",
        (run_id,),
    )
    deferred: list[int] = []

    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: deferred.append(run_id))["resumed"] == 1
    assert deferred == [run_id]

    probe.execute("update sync_runs set deliveries = 3 where id = %s", (run_id,))
    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: deferred.append(run_id))["gave_up"] == 1
    state, finished, detail = probe.execute(
        "select state, finished_at, error_detail from sync_runs where id = %s", (run_id,)
    ).fetchone() or (None, None, None)
    assert state == "failed" and finished is not None and "gave up" in str(detail)


def test_a_run_waits_queued_while_knowledge_store_holds_the_lane(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    conn.commit()
    probe.execute("select pg_advisory_lock(%s, %s)", (LANE_LOCK_CLASS, source_id))
    try:
        with pytest.raises(LaneBusy):
            execute_run(conn, run_id, worker_id="w1", keyring=keyring)
        assert scalar(probe, "select state from sync_runs where id = %s", (run_id,)) == "queued"
    finally:
        probe.execute("select pg_advisory_unlock(%s, %s)", (LANE_LOCK_CLASS, source_id))

    outcome = execute_run(conn, run_id, worker_id="w1", keyring=keyring)
    assert outcome.state == "succeeded"
    # The run held the lane in shared mode while it ran and released it at the end.
    assert scalar(probe, "select pg_try_advisory_lock(%s, %s)", (LANE_LOCK_CLASS, source_id)) is True
    probe.execute("select pg_advisory_unlock(%s, %s)", (LANE_LOCK_CLASS, source_id))


def test_a_credential_no_configured_key_decrypts_fails_the_run_cleanly(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    conn.commit()

    outcome = execute_run(conn, run_id, worker_id="w1", keyring=Keyring(bytes(32)))

    assert outcome.state == "failed"
    state, finished, detail = probe.execute(
        "select state, finished_at, error_detail from sync_runs where id = %s", (run_id,)
    ).fetchone() or (None, None, None)
    assert state == "failed" and finished is not None
    assert "not configured" in str(detail) and jira.base_url not in str(detail)


def test_the_worker_job_runs_a_sync_under_the_worker_role_with_embeddings(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    from app.jobs.sync import run_sync

    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    conn.commit()

    assert run_sync(run_id=run_id) == "succeeded"

    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == 30
    assert scalar(probe, "select count(*) from entity_chunks where embedding is null") == 0
    assert scalar(probe, "select count(*) from entity_chunks") > 0


def test_the_worker_role_cannot_change_the_settings_or_tokens(fresh_db_url: str) -> None:
    from app.db.connect import WORKER_ROLE, assume_role

    with psycopg.connect(fresh_db_url) as c:
        assume_role(c, WORKER_ROLE)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("update platform_settings set value = '60' where key = 'sync_interval'")


def test_tick_reaps_a_queued_run_without_a_job_after_the_grace(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")  # committed without its job
    conn.commit()

    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)["reaped"] == 0  # still in the grace
    probe.execute("update sync_runs set created_at = now() - interval '1 minute' where id = %s", (run_id,))
    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)["reaped"] == 1

    state, detail = probe.execute("select state, error_detail from sync_runs where id = %s", (run_id,)).fetchone() or (
        None,
        None,
    )
    assert (state, detail) == ("failed", "orphaned: no job was ever queued for it")


def test_tick_gives_webhook_items_whose_job_broke_a_new_job_and_leaves_a_waiting_one_alone(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    # Decision 145: items wait in webhook_pending for the job that takes them. A job that broke (failed)
    # took nothing; once the items are past the grace and no todo job waits for the source, the tick defers
    # one. The real job then takes them into one run.
    source_id = add_source(conn, keyring, jira)
    probe.execute(
        "insert into webhook_pending (source_id, source_type, source_entity_id, received_at) "
        "values (%s, 'ticket', %s, now()), (%s, 'ticket', %s, now())",
        (source_id, jira.id(1), source_id, jira.id(2)),
    )
    probe.execute(
        "insert into procrastinate_jobs (queue_name, task_name, args, status) "
        "values ('sync', 'harvester:apply_webhook', %s, 'failed')",
        (Jsonb({"source_id": source_id}),),
    )

    def todo_jobs() -> int:
        return int(
            scalar(
                probe,
                "select count(*) from procrastinate_jobs where task_name = 'harvester:apply_webhook' "
                "and status = 'todo' and (args ->> 'source_id')::bigint = %s",
                (source_id,),
            )
        )

    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)["webhooks_rearmed"] == 0  # in the grace
    probe.execute(
        "update webhook_pending set received_at = now() - interval '1 minute' where source_id = %s", (source_id,)
    )
    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)["webhooks_rearmed"] == 1
    assert todo_jobs() == 1
    assert tick_once(datetime.now(UTC), defer=lambda conn, run_id: None)["webhooks_rearmed"] == 0  # one waits now
    assert todo_jobs() == 1

    run_id = apply_webhook(source_id=source_id)
    assert run_id is not None
    scope = scalar(probe, "select scope from sync_runs where id = %s", (run_id,))
    assert sorted(i["source_entity_id"] for i in scope["items"]) == sorted([jira.id(1), jira.id(2)])
    assert scalar(probe, "select count(*) from webhook_pending where source_id = %s", (source_id,)) == 0


def test_a_pending_set_larger_than_a_run_leaves_the_rest_to_a_job_of_its_own(
    worker_env: None,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira: Jira,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A run takes at most MAX_RUN_ITEMS, the oldest first; the job that started it defers one for the rest,
    # which waits for that run (decision 145).
    monkeypatch.setattr(webhook_intake, "MAX_RUN_ITEMS", 2)
    source_id = add_source(conn, keyring, jira)
    for age, i in ((3, 5), (2, 1), (1, 9)):
        probe.execute(
            "insert into webhook_pending (source_id, source_type, source_entity_id, received_at) "
            "values (%s, 'ticket', %s, now() - make_interval(secs => %s))",
            (source_id, jira.id(i), age),
        )
    run_id = apply_webhook(source_id=source_id)
    assert run_id is not None
    scope = scalar(probe, "select scope from sync_runs where id = %s", (run_id,))
    assert [i["source_entity_id"] for i in scope["items"]] == [jira.id(5), jira.id(1)]
    left = "select array_agg(source_entity_id) from webhook_pending where source_id = %s"
    assert scalar(probe, left, (source_id,)) == [jira.id(9)]
    jobs = probe.execute(
        "select status::text from procrastinate_jobs where task_name = 'harvester:apply_webhook' "
        "and (args ->> 'source_id')::bigint = %s",
        (source_id,),
    ).fetchall()
    assert jobs == [("todo",)]
