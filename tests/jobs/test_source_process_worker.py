"""A run's listing in a process of its own (decision 135) inside REAL ``harvester worker`` processes.

The worker's source process is a grandchild (worker -> forkserver -> source process). When the worker is
killed with SIGKILL nobody closes the child: it must notice on its own and go, and the run must be resumed
by another worker, also listing in a process of its own, with exact counters and each item loaded once.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from typing import Any

import psutil
import psycopg

from app.secrets import Keyring
from tests.conftest import REPO
from tests.jobs.conftest import Procs, committed, ended, queued, wait_for
from tests.sync.conftest import TOKEN, Jira, JiraFactory, add_source, forkservers, scalar, source_children


def test_a_killed_workers_source_process_ends_and_another_worker_finishes_the_run_exactly(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    items = 400  # four pages of 100
    jira = jira_factory(items)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '5' where key = 'stale_run_after'")
    jira.fault(latency_ms=600)  # every request waits: the kill lands between pages

    first = procs.worker("--no-periodic", HARVESTER_SOURCE_PROCESS="on")
    run_id = queued(conn, source_id)
    committed(probe, run_id, procs)
    children = source_children(first.pid)
    assert len(children) == 1, "the run lists its source in a process of its own"
    child = children[0]
    assert "harvester-source" in {
        r[0] for r in probe.execute("select application_name from pg_stat_activity where application_name <> ''")
    }, "the source process takes its rate budget on a connection of its own"

    survivor = procs.worker(HARVESTER_SOURCE_PROCESS="on")  # with the tick
    # The source stops answering: the child now waits inside a request, where only its own watch on the
    # worker can end it (a write to the closed pipe would come after the answer, 30 s on).
    jira.fault(latency_ms=30_000)
    time.sleep(1.5)
    first.popen.send_signal(signal.SIGKILL)
    first.popen.wait(timeout=10)
    killed = time.monotonic()
    wait_for(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, 5, "the child to go", procs)
    print(f"\nMEASURE worker SIGKILL -> its source process gone: {time.monotonic() - killed:.2f} s")
    jira.clear_faults()

    wait_for(
        lambda: scalar(probe, "select deliveries from sync_runs where id = %s", (run_id,)) >= 2,
        60,
        "another worker to take the run over",
        procs,
    )
    ended(probe, run_id, procs)
    state, done, total, deliveries, calls = probe.execute(
        "select state, entities_done, entities_total, deliveries, api_calls from sync_runs where id = %s", (run_id,)
    ).fetchone() or (None, None, None, None, None)
    assert (state, done, total, deliveries) == ("succeeded", items, items, 2)
    assert source_children(survivor.pid) == [], "the survivor's source process ended with its run"
    # The child logs through the worker's handler (its stderr): which run, what it listed; never the credential.
    logged = survivor.log.read_text(errors="replace")
    assert re.search(rf"run-{run_id}-source: listed \d+ items in [\d.]+ s", logged), survivor.tail()
    assert TOKEN not in procs.logs() and TOKEN not in logged
    assert calls and calls > 0, "the counters of the child's requests reached the journal"
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == items


def test_a_tls_setting_that_cannot_load_fails_each_run_as_it_does_in_one_process(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    """The forkserver builds the TLS context ahead (decision 136); one that cannot be built (a ``SSL_CERT_FILE``
    naming a missing file) must not take the forkserver down with it, which would fail every run with
    "unexpected EOF": each run fails with the reason, naming the setting, as a run listing in one process does,
    at its first request and without retrying it."""
    source_id = add_source(conn, keyring, jira)
    details: dict[str, str] = {}
    for listing, extra in (("thread", {}), ("process", {"HARVESTER_SOURCE_PROCESS": "on"})):
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "sync", str(source_id), "--mode", "full"],
            cwd=REPO,
            env=procs.env(SSL_CERT_FILE=str(procs.tmp / "missing.pem"), SSL_CERT_DIR=str(procs.tmp), **extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stdout + done.stderr[-2000:]
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        state, detail = probe.execute(
            "select state, error_detail from sync_runs where source_id = %s order by id desc limit 1", (source_id,)
        ).fetchone() or (None, None)
        assert state == "failed", (listing, state, detail)
        details[listing] = str(detail)
    assert details["process"] == details["thread"]
    assert details["thread"] == (
        "the TLS settings could not be loaded (SSL_CERT_FILE or SSL_CERT_DIR where set, else certifi's CA bundle): "
        "FileNotFoundError: [Errno 2] No such file or directory"
    )


def test_sigusr1_writes_a_source_process_s_stacks_and_its_run_goes_on(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    """`kill -USR1` (docs/operations.md) on a source process and on its forkserver, neither of which runs the
    `harvester` command's main: each writes its stacks and goes on, and the run succeeds with every item."""
    items = 300
    jira = jira_factory(items)
    source_id = add_source(conn, keyring, jira)
    jira.fault(latency_ms=300)  # the child is still listing when the signals come
    worker = procs.worker("--no-periodic", HARVESTER_SOURCE_PROCESS="on")
    run_id = queued(conn, source_id)
    committed(probe, run_id, procs)
    [forkserver] = forkservers(worker.pid)
    [child] = forkserver.children()
    logged = len(worker.log.read_text())
    child.send_signal(signal.SIGUSR1)
    forkserver.send_signal(signal.SIGUSR1)

    def dumped(frame: str) -> bool:
        return frame in worker.log.read_text()[logged:]

    # Both write to the worker's stderr: the child's dump has its listing's frames, the forkserver's its loop.
    wait_for(lambda: dumped("in _child"), 10, "the child to write its stacks", procs)
    wait_for(lambda: dumped("multiprocessing/forkserver.py"), 10, "the forkserver to write its stacks", procs)
    jira.clear_faults()
    ended(probe, run_id, procs, 60)
    assert child.is_running() is False or child.status() == psutil.STATUS_ZOMBIE  # it ended with its listing
    assert forkserver.is_running() and forkserver.status() != psutil.STATUS_ZOMBIE
    assert probe.execute("select state, entities_done from sync_runs where id = %s", (run_id,)).fetchone() == (
        "succeeded",
        items,
    )
