"""Confluence Cloud names groups by id (issue 13 §1): space permissions and page restrictions whose group
subjects carry ``id`` without ``name`` give the same ACL tokens as named groups (the client asks
``/rest/api/group/by-id``); an id nobody can name grants ``group:confluence:id:<id>`` only."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from connectors.confluence.mapping import group_subjects
from connectors.emulators.confluence import ConfluenceEmulator
from tests.sync.conftest import sync
from tests.sync.connectors_conftest import TOKEN, add_source, served


def _acls(probe: psycopg.Connection[Any], source_id: int) -> dict[str, list[str] | None]:
    rows = probe.execute(
        "select source_entity_id, acl_principals from live_entities where source_id = %s", (source_id,)
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def test_group_ids_without_names_give_the_same_acl_as_group_names(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    acls = []
    for ids_only in (False, True):
        app = ConfluenceEmulator(pages=40, seed=5, token=TOKEN)
        app.group_ids_only = ids_only
        with served(app) as confluence:
            source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")
            conn.execute("update sources set name = %s where id = %s", (f"confluence-{ids_only}", source_id))
            _, run = sync(conn, keyring, source_id, "full")
            assert run.state == "succeeded"
            acls.append(_acls(probe, source_id))
            asked = any("group/by-id" in route for route in confluence.stats()["by_route"])
            assert asked == ids_only  # names are looked up only when the payload lacks them

    named, by_id = acls
    assert named == by_id
    assert any("group:confluence:leadership" in (acl or []) for acl in by_id.values())  # restricted pages
    assert all(acl for acl in by_id.values())


def test_a_group_id_nobody_can_name_grants_that_id_only() -> None:
    subjects = [
        {"type": "group", "id": "g-1", "name": "engineering"},
        {"type": "group", "id": "g-2"},
        {"type": "group", "id": "g-3"},
        {"type": "group"},
    ]

    assert group_subjects(subjects, {"g-2": "hr"}) == ["engineering", "hr", "id:g-3"]
