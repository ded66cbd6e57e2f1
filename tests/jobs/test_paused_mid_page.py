"""A worker paused inside a page's transaction (decision 160), through real worker processes.

SIGSTOP lands while a page's statement runs: the server finishes the statement, and the session sits idle in
its transaction, holding the run's row, for as long as the process stays stopped (``docker pause``, a frozen VM
and a debugger do the same). Before, the worker that took the stale run over waited for that row in ``ClaimRun``
until the paused process was woken: the source made no progress at all. Now the server ends a run's transaction
left idle for ``stale_run_after + takeover_grace``, the takeover goes through, and the woken process finds its
connection gone and its lease taken, and lives on.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import psycopg

from app.secrets import Keyring
from tests.jobs.conftest import Procs, ended, queued, wait_for
from tests.sync.conftest import JiraFactory, add_source, scalar

ITEMS = 400  # four pages of 100


def test_a_worker_paused_inside_a_page_is_taken_over_and_the_run_loads_every_item_once(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    # Taken over 3 s after the last beat (2 s stale + 1 s grace): the idle transaction ends then too.
    probe.execute("update platform_settings set value = '2' where key = 'stale_run_after'")
    probe.execute("update platform_settings set value = '1' where key = 'takeover_grace'")
    # Each page's insert takes 1.5 s on the server, so the pause surely lands inside a page's transaction.
    probe.execute(
        "create function slow_page() returns trigger language plpgsql as $$ begin perform pg_sleep(1.5); "
        "return null; end $$"
    )
    probe.execute("create trigger slow_page after insert on entities for each statement execute function slow_page()")
    jira = jira_factory(ITEMS)
    source_id = add_source(conn, keyring, jira)
    first = procs.worker("--no-periodic")
    run_id = queued(conn, source_id)
    in_page = "select count(*) from pg_stat_activity where application_name = 'harvester' and wait_event = 'PgSleep'"
    wait_for(lambda: scalar(probe, in_page), 60, "a page's insert", procs)
    first.popen.send_signal(signal.SIGSTOP)
    paused = time.monotonic()
    try:
        procs.worker()  # with the tick, which hands the stale run to this worker
        deliveries = "select deliveries from sync_runs where id = %s"
        wait_for(lambda: scalar(probe, deliveries, (run_id,)) >= 2, 60, "another worker to take the run over", procs)
        print(f"\nMEASURE paused inside a page -> run taken over: {time.monotonic() - paused:.1f} s")
        idle = "select count(*) from pg_stat_activity where state = 'idle in transaction' and pid <> pg_backend_pid()"
        assert scalar(probe, idle) == 0  # the paused process's transaction is gone, not just outwaited
    finally:
        first.popen.send_signal(signal.SIGCONT)

    ended(probe, run_id, procs)
    row = probe.execute("select state, entities_done, deliveries from sync_runs where id = %s", (run_id,)).fetchone()
    assert row == ("succeeded", ITEMS, 2)
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == ITEMS
    time.sleep(3)  # the woken process meets its dead connection and its lost lease; it must live on
    assert first.popen.poll() is None, first.tail()
    assert f"run {run_id} ended skipped" in first.tail(), first.tail()
