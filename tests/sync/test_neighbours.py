"""Out-of-scope neighbours (seed 003 "Соседняя задача", "Пустой полный прогон")."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from app.secrets import Keyring
from tests.sync.conftest import Jira, add_source, sync


def _flags(probe: psycopg.Connection[Any], source_id: int) -> dict[str, tuple[str, bool]]:
    rows = probe.execute(
        "select source_entity_id, container, out_of_scope from live_entities where source_id = %s", (source_id,)
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def test_linked_issues_outside_the_scope_are_stored_as_neighbours(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira, scope=["ALPHA"])

    outcome, _ = sync(conn, keyring, source_id, "full")

    assert outcome.state == "succeeded"
    flags = _flags(probe, source_id)
    inside = {sid: f for sid, f in flags.items() if f[0] == "ALPHA"}
    outside = {sid: f for sid, f in flags.items() if f[0] != "ALPHA"}
    assert len(inside) == 8 and not any(f[1] for f in inside.values())
    assert outside and all(f[1] for f in outside.values())


def test_full_run_after_widening_the_scope_clears_the_neighbour_flags(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira, scope=["ALPHA"])
    sync(conn, keyring, source_id, "full")
    neighbours = {sid for sid, f in _flags(probe, source_id).items() if f[1]}
    probe.execute(
        "update sources set scope_list = %s where id = %s", (Jsonb(["ALPHA", "BETA", "CORE", "OPS"]), source_id)
    )

    outcome, _ = sync(conn, keyring, source_id, "full")

    assert outcome.state == "succeeded"
    flags = _flags(probe, source_id)
    assert neighbours <= set(flags) and len(flags) == 30
    assert not any(f[1] for f in flags.values())


def test_full_run_that_loads_nothing_changes_no_flags(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira, scope=["ALPHA"])
    sync(conn, keyring, source_id, "full")
    before = _flags(probe, source_id)
    assert any(f[1] for f in before.values()) and not all(f[1] for f in before.values())
    jira.fault(status=403, keys=jira.keys())

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.entities_done) == ("succeeded", 0)
    assert run.error_detail is not None and "no items" in run.error_detail
    assert _flags(probe, source_id) == before
