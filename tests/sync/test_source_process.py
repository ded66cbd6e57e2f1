"""A run's listing in a process of its own (decision 135), through the real pipeline and real processes.

Each test runs ``execute_run`` with ``source_process=True``: the connector's ``enumerate`` runs in a child
forked by the forkserver, against an emulator on 127.0.0.1 over real HTTP. What it must keep: the rows and
counters of a run in one process, its failures with the same detail, the completeness audit (which needs the
listing's own state), and loud failure when the child dies; a killed child leaves nothing half-written that
the next run cannot finish.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from psycopg.types.json import Jsonb

from app.pipeline import source_process
from app.pipeline.checkpoint import RunCheckpoint
from app.pipeline.run import Progress, RunOutcome, execute_run
from app.pipeline.source_process import (
    SourceProcess,
    SourceProcessFailed,
    _context,
    _portable,
    _preload,
    _rebuilt,
)
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import start_run
from connectors.base import CallStats, SourceAuthFailed, SourceConfig
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import EmulatorApp
from connectors.emulators.slack import SlackEmulator
from connectors.http import HttpError
from tests.pg_activity import named
from tests.sync import forkserver_probe
from tests.sync.conftest import forkservers, scalar, source_children
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, served

EMULATORS: dict[str, Callable[[], EmulatorApp]] = {
    "jira": lambda: JiraEmulator(230, seed=5, token=TOKEN),
    "confluence": lambda: ConfluenceEmulator(pages=40, seed=5, token=TOKEN),
    "slack": lambda: SlackEmulator(messages=120, seed=5, token=TOKEN),
}


def run(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    source_id: int,
    mode: str,
    *,
    source_process: bool,
    on_progress: Any = None,
) -> tuple[RunOutcome, rq.GetRunRow]:
    run_id = start_run(conn, source_id, mode=mode, trigger="manual")
    outcome = execute_run(
        conn,
        run_id,
        worker_id=f"test-worker-{run_id}",
        keyring=keyring,
        on_progress=on_progress,
        source_process=source_process,
    )
    row = rq.get_run(conn, id=run_id)
    assert row is not None
    return outcome, row


def rows(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[Any, ...]]:
    """Every entity's identity, content hash and rights, and its edges and refs, in a stable order."""
    found = probe.execute(
        """select e.source_type, e.source_entity_id, e.content_hash, e.deleted_at is null,
                  (select count(*) from entity_edges g where g.from_entity_id = e.id),
                  (select count(*) from entity_refs r where r.entity_id = e.id)
             from entities e where e.source_id = %s order by e.source_type, e.source_entity_id""",
        (source_id,),
    ).fetchall()
    return [tuple(r) for r in found]


def assert_gone(children: list[psutil.Process]) -> None:
    psutil.wait_procs(children, timeout=10)
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children), children


@pytest.fixture(params=sorted(EMULATORS))
def emulator(request: pytest.FixtureRequest) -> Iterator[tuple[str, Emulator]]:
    with served(EMULATORS[request.param]()) as served_emulator:
        yield request.param, served_emulator


def test_a_listing_in_its_own_process_writes_the_rows_and_counters_of_one_in_the_run(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, emulator: tuple[str, Emulator]
) -> None:
    kind, source = emulator
    here = add_source(conn, keyring, kind, source.base_url)
    apart = add_source(conn, keyring, kind, source.base_url, name=f"{kind}-apart")

    children: set[int] = set()
    # The connections each run holds beside its own, seen at each committed page: those opened since the
    # run began (a backend outlives its client's close by a moment: the run before's may still be listed).
    siblings: dict[bool, set[str]] = {False: set(), True: set()}

    def note_siblings(apart: bool) -> Callable[[Progress], None]:
        began = scalar(probe, "select clock_timestamp()")

        def note(progress: Progress) -> None:
            siblings[apart].update(named(probe, since=began))
            if apart:
                children.update(c.pid for c in source_children())

        return note

    for mode in ("full", "reconciliation"):
        ours, ours_row = run(conn, keyring, here, mode, source_process=False, on_progress=note_siblings(False))
        theirs, their_row = run(conn, keyring, apart, mode, source_process=True, on_progress=note_siblings(True))
        assert (ours.state, theirs.state) == ("succeeded", "succeeded"), (ours.detail, theirs.detail)
        assert their_row.entities_done == ours_row.entities_done
        assert (ours_row.entities_done or 0) > 0
        assert their_row.api_calls == ours_row.api_calls
        assert (ours_row.api_calls or 0) > 0
        assert their_row.error_detail == ours_row.error_detail  # the connector's notes crossed the pipe

    assert len(children) == 2, "each run listed its source in a process of its own"
    # The read-ahead's rate gate has a connection of its own; a listing apart takes its budget on the child's,
    # and without an embedding stage to read for, the run opens no other (decision 137).
    assert "harvester-fetch" in siblings[False]
    assert "harvester-source" in siblings[True] and "harvester-fetch" not in siblings[True], siblings
    assert rows(probe, apart) == rows(probe, here)
    # The audit asked the child, after its listing, what the source counts per unit.
    audit = """select container, source_count, live_count from run_completeness
                where run_id = (select max(id) from sync_runs where source_id = %s) order by container"""
    counted = probe.execute(audit, (apart,)).fetchall()
    assert counted and counted == probe.execute(audit, (here,)).fetchall()
    assert not source_children(), "a finished run's source process is still alive"


def test_a_source_that_refuses_the_credential_fails_the_run_with_the_same_detail(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    with served(JiraEmulator(20, seed=5, token="another-token-000")) as jira:
        here = add_source(conn, keyring, "jira", jira.base_url)
        apart = add_source(conn, keyring, "jira", jira.base_url, name="jira-apart")
        ours, _ = run(conn, keyring, here, "full", source_process=False)
        theirs, _ = run(conn, keyring, apart, "full", source_process=True)
    assert (ours.state, theirs.state) == ("failed", "failed")
    assert theirs.detail == ours.detail
    assert "401" in (theirs.detail or "") or "credential" in (theirs.detail or "").lower(), theirs.detail


def test_a_killed_source_process_fails_the_run_loudly_and_the_next_run_loads_each_item_once(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    items = 400  # four search pages
    with served(JiraEmulator(items, seed=5, token=TOKEN)) as jira:
        source_id = add_source(conn, keyring, "jira", jira.base_url)
        jira.fault(latency_ms=300)  # the kill lands between pages
        killed: list[int] = []

        def kill_after_first_page(progress: Progress) -> None:
            if not killed:
                for child in source_children():
                    # The credential reached the child through the pipe alone.
                    assert TOKEN not in " ".join(child.cmdline())
                    assert not any(TOKEN in value for value in child.environ().values())
                    killed.append(child.pid)
                    os.kill(child.pid, signal.SIGKILL)

        outcome, row = run(conn, keyring, source_id, "full", source_process=True, on_progress=kill_after_first_page)
        assert killed, "no source process to kill"
        assert outcome.state == "failed"
        assert row.error_detail == "source process exited with code -9 (SIGKILL)"
        assert 0 < (row.entities_done or 0) < items

        jira.clear_faults()
        again, again_row = run(conn, keyring, source_id, "full", source_process=True)
    assert again.state == "succeeded", again.detail
    assert again_row.entities_done == items
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == items
    assert (
        scalar(probe, "select count(distinct source_entity_id) from entities where source_id = %s", (source_id,))
        == items
    )


class Unpicklable(Exception):
    """An exception whose arguments do not round-trip through pickle (its __init__ takes two)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


def test_a_failure_crosses_the_pipe_as_its_own_class_or_named_when_it_cannot() -> None:
    refused = HttpError(401, "permission", False, "401 from /rest/api/2/search")
    again = _rebuilt(_portable(refused, None))
    assert isinstance(again, HttpError)
    assert (again.status, again.reason, again.transient, again.detail) == (401, "permission", False, refused.detail)

    auth = _rebuilt(_portable(SourceAuthFailed("the credential was refused"), None))
    assert type(auth) is SourceAuthFailed and str(auth) == "the credential was refused"

    odd = _rebuilt(_portable(Unpicklable("parser", "bad byte"), None))
    assert type(odd) is SourceProcessFailed
    assert str(odd) == "source process failed: Unpicklable: parser: bad byte"


def test_a_source_process_that_cannot_start_fails_the_listing_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forkserver that cannot fork, or died before answering (decision 136): the run fails with that reason,
    not as an internal error. A stand-in for the start, in addition to the worker test of a forkserver whose
    preload could not build the TLS context (tests/jobs/test_source_process_worker.py)."""

    class Refused:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def start(self) -> None:
            raise EOFError("unexpected EOF")

    monkeypatch.setattr(source_process._context, "Process", Refused)
    config = SourceConfig(1, "http://127.0.0.1:9", TOKEN, "all", (), {})
    listing = SourceProcess("jira", config, CallStats(), conninfo=None, name="run-0-source").enumerate(None, None)
    with pytest.raises(SourceProcessFailed, match=r"^could not start a source process: EOFError: unexpected EOF$"):
        next(listing)


def test_a_run_goes_on_when_the_forkserver_dies_under_it_and_the_next_run_starts_another(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """The forkserver is only needed to start a child: killed mid-run, the run's child lists on, the run
    succeeds, its child ends, and the next run's child comes from a new forkserver."""
    items = 150  # two search pages
    with served(JiraEmulator(items, seed=5, token=TOKEN)) as jira:
        source_id = add_source(conn, keyring, "jira", jira.base_url)
        # A search page slower than the run's one-second polls of the pipe: the run sees the child silent while
        # multiprocessing already calls it gone (it learns of a child's end from the forkserver).
        jira.fault(route_latency_ms={"search": 1500})
        children: list[psutil.Process] = []

        def kill_the_forkserver(progress: Progress) -> None:
            if not children:
                servers = forkservers()
                children.extend(c for s in servers for c in s.children())
                for server in servers:
                    server.kill()  # not reaped here: multiprocessing reaps it when it starts the next one

        outcome, row = run(conn, keyring, source_id, "full", source_process=True, on_progress=kill_the_forkserver)
        assert children, "no source process under the forkserver"
        assert outcome.state == "succeeded", outcome.detail
        assert row.entities_done == items
        assert_gone(children)

        jira.clear_faults()
        again, _ = run(conn, keyring, source_id, "full", source_process=True)
    assert again.state == "succeeded", again.detail
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == items


def test_a_run_cancelled_while_its_source_takes_its_time_stops_before_the_answer(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """The run's thread looks at the lease while it waits for pages, and a run that stops ends its child at
    once: the cancel takes effect while the source still holds the child's request, not when it answers."""
    with served(JiraEmulator(400, seed=5, token=TOKEN)) as jira:
        source_id = add_source(conn, keyring, "jira", jira.base_url)
        probe.execute("update platform_settings set value = '2' where key = 'stale_run_after'")  # a beat each 0.5 s
        jira.fault(latency_ms=200)
        seen: list[psutil.Process] = []
        cancels: list[threading.Thread] = []

        def cancel_once_a_request_stalls(run_id: int) -> None:
            # The child may be held by the full queue when the source stalls (back-pressure): the cancel
            # waits until one of its requests is at the stalled source, which is the case under test.
            deadline = time.monotonic() + 10
            while jira.app.faults.in_flight < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            rq.cancel_run(probe, id=run_id)

        def stall_and_cancel(progress: Progress) -> None:
            if not seen:
                seen.extend(source_children())
                jira.fault(latency_ms=20_000)  # the source stops answering for longer than the run may wait
                cancels.append(threading.Thread(target=cancel_once_a_request_stalls, args=(progress.run_id,)))
                cancels[0].start()

        outcome, _ = run(conn, keyring, source_id, "full", source_process=True, on_progress=stall_and_cancel)
        waiting, answered = jira.app.faults.in_flight, jira.app.faults.answered_after(20_000)
        for thread in cancels:
            thread.join(15)
    assert seen, "the run had no source process"
    assert outcome.state == "cancelled", outcome
    assert waiting >= 1, "no request of the child's met the stalled source"
    assert answered == 0, "the run ended only after the source answered a request it stalled"
    assert_gone(seen)


def test_a_reconciliation_resumed_after_its_listing_asks_a_child_only_for_the_audit(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """A run resumed after its last page lists nothing, but its completeness audit still asks the source:
    a child is started only to answer that."""
    items = 120
    with served(JiraEmulator(items, seed=5, token=TOKEN)) as jira:
        source_id = add_source(conn, keyring, "jira", jira.base_url)
        first, _ = run(conn, keyring, source_id, "full", source_process=False)
        assert first.state == "succeeded", first.detail
        run_id = start_run(conn, source_id, mode="reconciliation", trigger="manual")
        # As a reconciliation whose worker died after its last page and before the resolution: every item
        # seen, the listing complete.
        probe.execute(
            "insert into run_seen_items (run_id, source_type, source_entity_id) "
            "select %s, source_type, source_entity_id from live_entities where source_id = %s",
            (run_id, source_id),
        )
        resumed = RunCheckpoint(complete=True, enumerated=items).to_json()
        probe.execute("update sync_runs set checkpoint = %s where id = %s", (Jsonb(resumed), run_id))
        outcome = execute_run(conn, run_id, worker_id="resumed-worker", keyring=keyring, source_process=True)
    assert outcome.state == "succeeded", outcome.detail
    counted = probe.execute(
        "select container, source_count, live_count from run_completeness where run_id = %s", (run_id,)
    ).fetchall()
    assert counted and all(source == live for _, source, live in counted), counted
    assert scalar(probe, "select count(*) from live_entities where source_id = %s", (source_id,)) == items


def test_a_source_process_starts_with_what_each_would_build_at_its_first_request() -> None:
    """The forkserver builds the TLS context and imports pypdf and the idna codec once (decision 136): a child
    that had to would spend 20-80 ms of CPU on it at the head of its run's listing, while the run waits."""
    _preload()
    ours, theirs = _context.Pipe(duplex=False)
    child = _context.Process(target=forkserver_probe.report, args=(theirs,), daemon=True)
    child.start()
    theirs.close()
    try:
        assert ours.poll(30), "the probe sent nothing"
        assert ours.recv() == {"tls_context": 1, "pypdf": True, "idna": True}
    finally:
        child.join(10)
        ours.close()


MAIN_SCRIPT = """
import os

with open({marker!r}, "a") as marks:  # every process that runs this script, as __main__ or __mp_main__
    marks.write(f"{{os.getpid()}}\\n")

if __name__ == "__main__":
    from app.pipeline.source_process import SourceProcess
    from connectors.base import CallStats, RawItem, SourceConfig

    config = SourceConfig(1, {url!r}, {token!r}, "all", (), {{}})
    listing = SourceProcess("jira", config, CallStats(), conninfo=None, name="run-0-source")
    print(os.getpid(), sum(1 for emitted in listing.enumerate(None, None) if isinstance(emitted, RawItem)))
    listing.close()
"""


def test_a_source_process_does_not_run_its_parent_s_main_script_again(tmp_path: Path) -> None:
    """A real process whose main script marks each process that runs it lists a source apart: the child lists
    every item, and only the parent ran the script (decision 154). multiprocessing prepares a forkserver's child
    by running the parent's main script again, which under a worker imports the CLI and all it imports (~55 ms
    of CPU a child), under a bench numpy and onnxruntime (~0.27 s)."""
    marker = tmp_path / "ran"
    script = tmp_path / "main_script.py"
    with served(JiraEmulator(60, seed=5, token=TOKEN)) as jira:
        script.write_text(MAIN_SCRIPT.format(marker=str(marker), url=jira.base_url, token=TOKEN))
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    pid, items = done.stdout.split()
    assert items == "60"
    assert marker.read_text().split() == [pid], "a process besides the parent ran its main script"


@pytest.mark.parametrize("source_process", [True, False], ids=["apart", "in-process"])
def test_a_listing_s_rate_gate_waits_at_most_lock_wait_max_for_another_session_s_lock(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    fresh_db_url: str,
    source_process: bool,
) -> None:
    """The rate gate's statements run on a connection of the listing's own (the child's ``harvester-source``,
    or ``harvester-fetch`` in the run's process): they too wait at most ``lock_wait_max`` for a lock another
    session holds, and the run ends ``failed`` naming it (decision 159), instead of the listing waiting as long
    as the lock is held."""
    probe.execute("update platform_settings set value = '2' where key = 'lock_wait_max'")
    with served(JiraEmulator(230, seed=5, token=TOKEN)) as jira:
        source_id = add_source(conn, keyring, "jira", jira.base_url)
        with psycopg.connect(fresh_db_url, application_name="dba-maintenance") as holder:
            holder.execute("lock table rate_budgets in access exclusive mode")  # blocks its reads too
            outcome, row = run(conn, keyring, source_id, "full", source_process=source_process)
    assert outcome.state == "failed", outcome
    detail = row.error_detail or ""
    assert "lock_wait_max (2 s)" in detail, detail
    assert "application dba-maintenance) holds AccessExclusiveLock on rate_budgets" in detail, detail
