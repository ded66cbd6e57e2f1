"""The platform's ``fetch_fanout`` reaches every run (issue 15 §1): at 1 a run sends one request at a time,
at 4 a listing page's attachment downloads overlap, and both runs load the same rows."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from app.services.settings import update_settings
from tests.sync.conftest import JiraFactory, add_source, sync

LATENCY_MS = 15


def _full_run(conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Any) -> Any:
    source_id = add_source(conn, keyring, jira, name=f"jira-{jira.base_url.rsplit(':', 1)[1]}")
    jira.fault(latency_ms=LATENCY_MS)
    _, run = sync(conn, keyring, source_id, "full")
    # Not content_hash: each emulator has its own port, so the items' URLs differ between the two runs.
    rows = probe.execute(
        "select source_entity_id, title, body, acl_principals from entities where source_id = %s order by id",
        (source_id,),
    ).fetchall()
    return run, rows, jira.stats()["max_in_latency"]


def test_fetch_fanout_1_reads_one_by_one_and_the_default_overlaps_with_the_same_rows(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    with conn.transaction():
        update_settings(conn, {"fetch_fanout": 1})
    one_run, one_rows, one_max = _full_run(conn, probe, keyring, jira_factory(40, seed=9))
    with conn.transaction():
        update_settings(conn, {"fetch_fanout": 4})
    four_run, four_rows, four_max = _full_run(conn, probe, keyring, jira_factory(40, seed=9))

    assert one_run.state == four_run.state == "succeeded"
    assert len(one_rows) == 40 and one_rows == four_rows
    assert one_max == 1
    assert four_max > 1
