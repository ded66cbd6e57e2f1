"""429 storm: retried with Retry-After, counted per run (seed 003 request counters)."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from tests.sync.conftest import JiraFactory, add_source, live_ids, sync


def test_run_through_a_429_storm_loads_every_issue_once_and_counts_the_calls(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    # Fault decisions come from the emulator's seeded RNG and the client is sequential, so the storm
    # is the same on every run; this seed never answers 429 five times in a row (the retry limit).
    jira = jira_factory(300, seed=0)
    source_id = add_source(conn, keyring, jira)
    jira.fault(status=429, ratio=0.5, retry_after=0)

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.entities_done, run.error_count) == ("succeeded", 300, 0)
    live = live_ids(probe, source_id)
    assert live == sorted(set(live), key=int) and len(live) == 300
    stats = jira.stats()
    pages = 3
    assert run.rate_limited > 0 and run.api_calls > pages + run.rate_limited
    assert (run.api_calls, run.rate_limited) == (stats["requests"], stats["by_status"]["429"])
