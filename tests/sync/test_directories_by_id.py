"""Runs that fetch by id take the directories the sync before them read (decision 125), end to end: emulator
-> connector -> execute_run -> PostgreSQL, the platform setting ``directory_ttl`` read from the database.
Slack's is in tests/sync/test_slack_sync.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.world import FIRST_ID
from tests.sync.conftest import JiraFactory, sync
from tests.sync.conftest import add_source as add_jira
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, entity, served


def _routes(stats: dict[str, Any]) -> set[str]:
    """The emulator's route patterns that answered, without their method."""
    return {route.split(" ", 1)[-1] for route in stats["by_route"]}


def _items(source_type: str, ids: list[str]) -> dict[str, Any]:
    return {"kind": "items", "items": [{"source_type": source_type, "source_entity_id": i} for i in ids]}


@pytest.fixture()
def confluence() -> Iterator[Emulator]:
    with served(ConfluenceEmulator(pages=30, seed=5, token=TOKEN)) as emulator:
        yield emulator


def test_a_jira_run_by_id_after_a_sync_reads_only_the_issue_unless_the_setting_is_zero(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(40)
    source_id = add_jira(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    seen = []
    for ttl in ("300", "0"):
        probe.execute("update platform_settings set value = %s where key = 'directory_ttl'", (ttl,))
        jira.patch(jira.key(7), summary=f"changed with the setting at {ttl}")
        jira.control.delete("/_emulator/stats").raise_for_status()
        outcome, _ = sync(
            conn, keyring, source_id, "incremental", trigger="webhook", scope=_items("ticket", [jira.id(7)])
        )
        assert outcome.state == "succeeded"
        row = probe.execute(
            "select title from entities where source_id = %s and source_entity_id = %s", (source_id, jira.id(7))
        ).fetchone()
        assert row is not None and row[0] == f"changed with the setting at {ttl}"
        seen.append(_routes(jira.stats()))
    assert seen[0] == {"/rest/api/(?P<v>[23])/issue/(?P<ref>[^/]+)"}, seen[0]
    assert {"/rest/api/2/serverInfo", "/rest/api/(?P<v>[23])/field"} <= seen[1], seen[1]


def test_a_confluence_run_by_id_after_a_sync_reads_no_space_unless_the_setting_is_zero(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")
    sync(conn, keyring, source_id, "full")
    page = str(FIRST_ID + 9)
    seen = []
    for ttl in ("300", "0"):
        probe.execute("update platform_settings set value = %s where key = 'directory_ttl'", (ttl,))
        confluence.call("PATCH", f"/_emulator/pages/{page}", json={"title": f"Renamed at {ttl}"})
        confluence.call("DELETE", "/_emulator/stats")
        outcome, _ = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=_items("page", [page]))
        assert outcome.state == "succeeded"
        assert (entity(probe, source_id, page) or {})["title"] == f"Renamed at {ttl}"
        seen.append({r for r in _routes(confluence.call("GET", "/_emulator/stats")) if "/space" in r})
    assert seen[0] == set()
    assert seen[1], "with the setting at 0 the run reads the space list and the space's permissions"
