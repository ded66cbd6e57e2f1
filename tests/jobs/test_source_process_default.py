"""Which runs list their source in a process of their own when ``HARVESTER_SOURCE_PROCESS`` is unset, inside a
REAL ``harvester worker``: the full and reconciliation runs of connectors whose manifest says ``listing_apart``
(Confluence, whose listing parses storage format and PDF text), not the others (decision 153), and not an
incremental poll, which lists what changed since its cursor (decision 154). ``on`` and ``off`` still decide for
every run (tests/jobs/test_run_connections.py, tests/jobs/test_source_process_worker.py)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from tests.jobs.conftest import Proc, Procs, queued, wait_for
from tests.pg_activity import named
from tests.sync.conftest import scalar, source_children
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, served


def _listed_apart(
    procs: Procs,
    worker: Proc,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    source_id: int,
    emu: Emulator,
    mode: str = "full",
) -> bool:
    """Runs a sync of ``source_id`` on ``worker`` to success; whether its listing ran in a child process,
    looked at while the source takes its time."""
    emu.fault(latency_ms=300)  # the run lasts long enough to be looked at while it lists
    began = scalar(probe, "select clock_timestamp()")
    run_id = queued(conn, source_id, mode)
    # A listing apart takes its rate budget on the child's connection, one on the run's read-ahead thread on the
    # read-ahead's (decision 137); each is opened before the listing's first request and kept to its end, so
    # seeing one says the run is listing, however little it has to list.
    gates = ("harvester-source", "harvester-fetch")
    wait_for(lambda: any(g in named(probe, since=began) for g in gates), 90, "the run's listing", procs)
    apart = len(source_children(worker.pid)) == 1
    opened = named(probe, since=began)
    assert ("harvester-source" in opened, "harvester-fetch" in opened) == (apart, not apart), opened
    emu.clear_faults()
    state = "select state from sync_runs where id = %s"
    wait_for(lambda: scalar(probe, state, (run_id,)) != "running", 120, "the run to end", procs)
    assert scalar(probe, state, (run_id,)) == "succeeded"
    # Each run loads what it listed: every item of a full run, the three changed pages of the incremental one.
    assert (scalar(probe, "select entities_done from sync_runs where id = %s", (run_id,)) or 0) >= 3
    return apart


def test_with_the_setting_unset_a_worker_lists_confluence_apart_and_jira_in_its_own_process(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARVESTER_SOURCE_PROCESS", raising=False)
    assert "HARVESTER_SOURCE_PROCESS" not in procs.env()
    with (
        served(ConfluenceEmulator(pages=40, seed=5, token=TOKEN)) as wiki,
        served(JiraEmulator(230, seed=5, token=TOKEN)) as jira,
    ):
        worker = procs.worker("--no-periodic")
        sources = {
            kind: add_source(conn, keyring, kind, emu.base_url) for kind, emu in (("confluence", wiki), ("jira", jira))
        }
        apart = {
            kind: _listed_apart(procs, worker, conn, probe, sources[kind], emu)
            for kind, emu in (("confluence", wiki), ("jira", jira))
        }
        # Three pages change after the full run: the incremental poll has something to list and load.
        for page in wiki.call("GET", "/_emulator/pages")["pages"][:3]:
            wiki.call("PATCH", f"/_emulator/pages/{page}", json={"title": f"Changed {page}"})
        apart["confluence incremental"] = _listed_apart(
            procs, worker, conn, probe, sources["confluence"], wiki, "incremental"
        )
        assert apart == {"confluence": True, "jira": False, "confluence incremental": False}
        assert source_children(worker.pid) == [], "the Confluence run's source process ended with its run"
