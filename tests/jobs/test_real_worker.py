"""Periodic work in a REAL ``harvester worker`` process (issue 10 "Deliver" 1, seed 001 "Расписание").

No stand-in ``defer``: the tick runs inside the worker's event loop as Procrastinate schedules it,
defers ``run_sync`` on its own connection, and another job of the same worker runs the sync against
the Jira emulator. The numbers the issue asks to measure are printed (run with ``-s`` to see them).
"""

from __future__ import annotations

import signal
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from app.secrets import Keyring
from app.services.jobs import start_and_defer
from tests.jobs.conftest import Procs, committed, ended, queued, wait_for
from tests.sync.conftest import Jira, JiraFactory, add_source, scalar, sync
from tests.test_heap import STARTED_UP, frozen_objects


def _history(probe: psycopg.Connection[Any], source_id: int, *, mode: str, succeeded_ago: str) -> None:
    """A run of ``mode`` started and finished ``succeeded_ago`` (an interval), so the schedule sees it."""
    probe.execute(
        "insert into sync_runs (source_id, mode, trigger, state, started_at, finished_at, created_at) "
        "values (%s, %s, 'schedule', 'succeeded', now() - %s::interval, now() - %s::interval, now() - %s::interval)",
        (source_id, mode, succeeded_ago, succeeded_ago, succeeded_ago),
    )


def _runs(probe: psycopg.Connection[Any], source_id: int, **where: str) -> list[tuple[Any, ...]]:
    clauses = "".join(f" and {column} = %s" for column in where)
    return probe.execute(
        "select id, mode, trigger, state, entities_done, error_detail, deliveries from sync_runs "
        f"where source_id = %s{clauses} order by id",
        (source_id, *where.values()),
    ).fetchall()


def test_a_due_source_gets_an_incremental_run_that_succeeds(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _history(probe, source_id, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    _history(probe, source_id, mode="reconciliation", succeeded_ago="1 minute")
    # The last incremental was 14 min 48 s ago: with the 15-minute default it falls due in 12 seconds,
    # after the worker below is up.
    _history(probe, source_id, mode="incremental", succeeded_ago="888 seconds")
    due = scalar(
        probe,
        "select created_at + interval '900 seconds' from sync_runs where source_id = %s and mode = 'incremental'",
        (source_id,),
    )
    worker = procs.worker()
    assert scalar(probe, "select now() < %s", (due,)), "the worker took too long to start"

    wait_for(
        lambda: _runs(probe, source_id, trigger="schedule", mode="incremental", state="succeeded")[1:],
        60,
        "a scheduled incremental run to succeed",
        procs,
    )

    started = scalar(
        probe,
        "select started_at from sync_runs where source_id = %s and mode = 'incremental' "
        "and trigger = 'schedule' and started_at > %s order by id limit 1",
        (source_id, due),
    )
    lag = (started - due).total_seconds()
    print(f"\nMEASURE due -> run started in a real worker (tick every 2 s): {lag:.2f} s")
    assert 0 <= lag < 10
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == 30
    # Its start-up objects left the collector's walks once it was up (decision 92).
    assert frozen_objects(worker.log.read_text()) >= STARTED_UP, worker.tail()


def test_a_reconciliation_starts_once_in_its_window_in_the_org_time_zone(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _history(probe, source_id, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    tz = "America/New_York"
    probe.execute("update platform_settings set value = %s::jsonb where key = 'timezone'", (f'"{tz}"',))
    local = datetime.now(ZoneInfo(tz))
    minute_of_week = local.weekday() * 1440 + local.hour * 60 + local.minute  # the current minute, in New York
    probe.execute("update sources set reconcile_window = %s where id = %s", (minute_of_week, source_id))
    _history(probe, source_id, mode="reconciliation", succeeded_ago="7 days")  # the previous window, a week ago
    _history(probe, source_id, mode="incremental", succeeded_ago="1 minute")

    procs.worker()
    wait_for(
        lambda: _runs(probe, source_id, mode="reconciliation", trigger="schedule", state="succeeded")[1:],
        60,
        "the window's reconciliation to succeed",
        procs,
    )
    time.sleep(8)  # four more ticks inside the same window

    scheduled = _runs(probe, source_id, mode="reconciliation", trigger="schedule")
    assert len(scheduled) == 2, scheduled  # the seeded one of two days ago and exactly one new
    assert scheduled[-1][3] == "succeeded" and scheduled[-1][4] == 30


def test_a_run_whose_worker_is_killed_is_resumed_by_another_worker_with_exact_counters(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    items = 400  # four pages of 100
    jira = jira_factory(items)
    source_id = add_source(conn, keyring, jira)
    _history(probe, source_id, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    _history(probe, source_id, mode="reconciliation", succeeded_ago="1 minute")
    _history(probe, source_id, mode="incremental", succeeded_ago="1 minute")
    probe.execute("update platform_settings set value = '5' where key = 'stale_run_after'")
    jira.fault(latency_ms=600)  # every request waits: the kill lands between pages

    first = procs.worker("--no-periodic")
    run_id = queued(conn, source_id)
    committed(probe, run_id, procs)
    assert str(first.pid) in scalar(probe, "select worker_id from sync_runs where id = %s", (run_id,))
    procs.worker()  # the survivor, with the tick
    first.popen.send_signal(signal.SIGKILL)
    first.popen.wait(timeout=10)
    killed_at = scalar(probe, "select clock_timestamp()")
    done_at_kill = scalar(probe, "select entities_done from sync_runs where id = %s", (run_id,))
    assert done_at_kill < items, "the run finished before the kill: make the emulator slower"

    wait_for(
        lambda: scalar(probe, "select deliveries from sync_runs where id = %s", (run_id,)) >= 2,
        60,
        "another worker to take the run over",
        procs,
    )
    resumed_at = scalar(probe, "select claimed_at from sync_runs where id = %s", (run_id,))
    print(
        f"\nMEASURE SIGKILL -> run resumed by another worker (stale_run_after 5 s, tick 2 s): "
        f"{(resumed_at - killed_at).total_seconds():.2f} s"
    )
    jira.clear_faults()
    ended(probe, run_id, procs)

    state, done, total, deliveries = probe.execute(
        "select state, entities_done, entities_total, deliveries from sync_runs where id = %s", (run_id,)
    ).fetchone() or (None, None, None, None)
    assert (state, done, total, deliveries) == ("succeeded", items, items, 2)
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == items


def test_the_daily_probe_records_its_result(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _history(probe, source_id, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    _history(probe, source_id, mode="reconciliation", succeeded_ago="1 minute")
    _history(probe, source_id, mode="incremental", succeeded_ago="1 minute")
    assert scalar(probe, "select last_probe_at from sources where id = %s", (source_id,)) is None

    procs.worker()
    wait_for(
        lambda: scalar(probe, "select last_probe_at is not null from sources where id = %s", (source_id,)),
        30,
        "the probe",
        procs,
    )

    probed_at, status = probe.execute(
        "select last_probe_at, last_probe_status from sources where id = %s", (source_id,)
    ).fetchone() or (None, None)
    assert status == "ok"
    time.sleep(4)  # probed daily: the next ticks leave it alone
    assert scalar(probe, "select last_probe_at from sources where id = %s", (source_id,)) == probed_at


def test_the_watchdog_starts_a_run_only_when_the_silent_source_has_a_delta(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _history(probe, source_id, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    sync(conn, keyring, source_id, "full")
    probe.execute("update sources set webhook_enabled = true where id = %s", (source_id,))
    # Silent for a day (older than watchdog_silence, 12 h); both scheduled modes ran just now, so only the
    # watchdog rule may start anything.
    probe.execute("update sync_runs set finished_at = now() - interval '1 day' where source_id = %s", (source_id,))
    for mode in ("incremental", "reconciliation"):
        probe.execute(
            "insert into sync_runs (source_id, mode, trigger, state, finished_at) "
            "values (%s, %s, 'schedule', 'failed', now())",
            (source_id, mode),
        )
    procs.worker()
    wait_for(
        lambda: scalar(probe, "select last_probe_at is not null from sources where id = %s", (source_id,)),
        30,
        "the first tick",
        procs,
    )
    time.sleep(4)  # two more ticks without a delta
    assert _runs(probe, source_id, trigger="watchdog") == []

    jira.patch(jira.key(5), summary="changed while the webhook was down")
    wait_for(
        lambda: _runs(probe, source_id, trigger="watchdog", state="succeeded"),
        60,
        "the watchdog's run",
        procs,
    )
    time.sleep(4)
    watchdog = _runs(probe, source_id, trigger="watchdog")
    assert len(watchdog) == 1 and watchdog[0][1] == "incremental" and watchdog[0][4] >= 1


def test_a_per_source_sync_interval_wins_over_the_platform_default(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    fast = add_source(conn, keyring, jira, name="fast")
    _history(probe, fast, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    inherits = add_source(conn, keyring, jira, name="inherits")
    _history(probe, inherits, mode="full", succeeded_ago="8 days")  # connected: the first full sync is done
    probe.execute("update platform_settings set value = '3600' where key = 'sync_interval'")
    probe.execute("update sources set sync_interval = 5 where id = %s", (fast,))
    for source_id in (fast, inherits):
        _history(probe, source_id, mode="reconciliation", succeeded_ago="1 minute")
        _history(probe, source_id, mode="incremental", succeeded_ago="1 minute")

    procs.worker()
    wait_for(
        lambda: len(_runs(probe, fast, trigger="schedule", mode="incremental", state="succeeded")) >= 3,
        60,
        "two scheduled incremental runs of the overriding source",
        procs,
    )

    assert len(_runs(probe, inherits, mode="incremental")) == 1  # only the seeded one: 3600 s not elapsed


def test_a_webhook_run_in_the_worker_takes_what_its_full_sync_read(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    """Decision 125 in a real ``harvester worker``: the directories a run leaves are kept per process, and the
    worker runs its jobs in one, so a webhook's run after the full sync asks the source for the issue alone."""
    source_id = add_source(conn, keyring, jira)
    procs.worker("--no-periodic")

    def ended(run_id: int) -> str:
        wait_for(
            lambda: scalar(probe, "select state from sync_runs where id = %s", (run_id,)) in ("succeeded", "failed"),
            60,
            f"run {run_id} to end",
            procs,
        )
        return str(scalar(probe, "select state from sync_runs where id = %s", (run_id,)))

    full = queued(conn, source_id)
    assert ended(full) == "succeeded"
    jira.patch(jira.key(7), summary="changed for the webhook")
    jira.control.delete("/_emulator/stats").raise_for_status()
    item = {"source_type": "ticket", "source_entity_id": jira.id(7)}
    hook = start_and_defer(
        conn, source_id, mode="incremental", trigger="webhook", scope={"kind": "items", "items": [item]}
    )
    conn.commit()

    assert ended(hook) == "succeeded"
    routes = {route.split(" ", 1)[-1] for route in jira.stats()["by_route"]}
    assert routes == {"/rest/api/(?P<v>[23])/issue/(?P<ref>[^/]+)"}, routes
    title = "select title from entities where source_id = %s and source_entity_id = %s"
    assert scalar(probe, title, (source_id, jira.id(7))) == "changed for the webhook"


def test_sigusr1_writes_a_busy_worker_s_stacks_and_the_run_goes_on(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    items = 300
    jira = jira_factory(items)
    source_id = add_source(conn, keyring, jira)
    jira.fault(latency_ms=300)  # the run is still fetching when the signal comes
    worker = procs.worker("--no-periodic")
    run_id = queued(conn, source_id)
    committed(probe, run_id, procs)

    worker.popen.send_signal(signal.SIGUSR1)
    dump = wait_for(lambda: _stacks(worker.log.read_text()), 10, "the worker to write its stacks", procs)
    assert "app/pipeline/prefetch.py" in dump  # the run's fetch thread, waiting on the source
    assert "procrastinate" in dump  # the worker's own loop
    jira.clear_faults()
    ended(probe, run_id, procs, 60)
    assert worker.popen.poll() is None  # the signal did not stop the worker
    assert probe.execute("select state, entities_done from sync_runs where id = %s", (run_id,)).fetchone() == (
        "succeeded",
        items,
    )


def _stacks(log: str) -> str:
    """The whole thread dump in ``log`` ("" until it is written): faulthandler lists the threads newest first,
    so the dump is whole once the main thread's bottom frame (the worker started with ``-m``) is in."""
    start = log.find("Thread 0x")
    return log[start:] if start >= 0 and "in _run_module_as_main" in log[start:] else ""
