"""The database connections a REAL ``harvester worker`` holds, idle and per running sync, named as
docs/operations.md counts them for sizing ``max_connections`` (decision 137).

Each is named in ``pg_stat_activity``: ``harvester-worker`` (Procrastinate's pool and its LISTEN
connection), and per running sync ``harvester`` (the run's page transactions), ``harvester-lease`` (its
heartbeat, from its first beat), ``harvester-fetch`` (the read-ahead's rate gate and the embedding stage's
look-ups) and, with ``HARVESTER_SOURCE_PROCESS=on``, ``harvester-source`` (the source process's rate gate).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
import pytest

from app.jobs import WORKER_CONNECTIONS
from app.secrets import Keyring
from tests.jobs.conftest import Procs, ended, queued, wait_for
from tests.pg_activity import named, settled
from tests.sync.conftest import JiraFactory, add_source, scalar


@pytest.mark.parametrize(
    ("source_process", "per_run"),
    [
        ("off", {"harvester": 1, "harvester-lease": 1, "harvester-fetch": 1}),
        # The child takes the rate budget on its own connection; without an embedding stage (the tests'
        # workers run with HARVESTER_EMBEDDER=none) the run opens no harvester-fetch beside it.
        ("on", {"harvester": 1, "harvester-lease": 1, "harvester-source": 1}),
    ],
)
def test_a_worker_holds_the_connections_the_operations_guide_counts(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    source_process: str,
    per_run: dict[str, int],
) -> None:
    jira = jira_factory(500)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '5' where key = 'stale_run_after'")  # beats every ~1 s
    before = named(probe)
    procs.worker("--no-periodic", HARVESTER_SOURCE_PROCESS=source_process)
    idle = settled(probe, Counter({WORKER_CONNECTIONS: 5}), beside=before)
    assert idle == Counter({WORKER_CONNECTIONS: 5}), "Procrastinate's pool of four and its LISTEN connection"

    jira.fault(latency_ms=600)  # the run lasts long enough to beat, and to be looked at
    run_id = queued(conn, source_id)
    wait_for(
        lambda: (
            named(probe)["harvester-lease"] == 1
            and (scalar(probe, "select coalesce(entities_done, 0) from sync_runs where id = %s", (run_id,)) or 0) >= 100
        ),
        60,
        "the run's first page and its first beat",
        procs,
    )
    running = settled(probe, Counter(per_run), beside=before + idle)
    assert scalar(probe, "select state from sync_runs where id = %s", (run_id,)) == "running"
    assert running == Counter(per_run), running

    jira.clear_faults()
    ended(probe, run_id, procs)
    assert scalar(probe, "select state from sync_runs where id = %s", (run_id,)) == "succeeded"
    assert settled(probe, idle, beside=before) == idle, "the run's connections closed with it"
