"""Confluence end to end: emulator (Cloud v2/v1) -> ConfluenceConnector -> execute_run -> PostgreSQL.

Full sync with the page tree as ``parent`` edges, incremental runs from signed webhooks, reconciliation
deletes, ACL inherited from restricted ancestors (a restricted parent hides its children), 429 storms
counted in ``sync_runs``, and per-item dead letters (issue 6).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.world import FIRST_ID
from tests.sync.conftest import sync
from tests.sync.connectors_conftest import (
    TOKEN,
    WEBHOOK_SECRET,
    Emulator,
    Receiver,
    add_source,
    dead_letters,
    edges,
    entity,
    events_to_scope,
    live_ids,
    served,
)

# Seed 5, 40 pages: page index 8 (ENG) is read-restricted to "leadership" and its author; its children
# are 28, 32, 36. Page 4 (ENG, unrestricted) has children 16, 20, 24; page 12 is their sibling.
PAGES, SEED = 40, 5
EVERYONE = ["group:confluence:confluence-users"]


def pid(i: int) -> str:
    return str(FIRST_ID + i)


@pytest.fixture()
def confluence() -> Iterator[Emulator]:
    with served(ConfluenceEmulator(pages=PAGES, seed=SEED, token=TOKEN)) as emulator:
        yield emulator


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def _cloud(confluence: Emulator) -> str:
    return confluence.base_url + "/wiki"


def _expected(confluence: Emulator) -> set[str]:
    return set(confluence.call("GET", "/_emulator/pages")["pages"])


def _acl(probe: psycopg.Connection[Any], source_id: int, i: int) -> list[str] | None:
    row = entity(probe, source_id, pid(i))
    assert row is not None
    acl: list[str] | None = row["acl_principals"]
    return acl


def _send(confluence: Emulator, receiver: Receiver, event: str, page_id: str) -> None:
    body = {"url": receiver.url, "secret": WEBHOOK_SECRET, "event": event, "page_id": page_id}
    assert confluence.call("POST", "/_emulator/webhooks/send", json=body)["status"] == 200


def test_full_sync_loads_every_page_with_the_tree_as_parent_edges(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count, run.entities_done) == ("succeeded", 0, PAGES)
    assert live_ids(probe, source_id) == _expected(confluence)
    parents = edges(probe, source_id, "parent")
    assert {(pid(16), pid(4)), (pid(28), pid(8)), (pid(4), pid(0))} <= parents
    assert len(parents) == PAGES - 4  # every page but the four space homes has a parent
    assert (entity(probe, source_id, pid(16)) or {})["status"] == "draft"
    assert (entity(probe, source_id, pid(10)) or {})["status"] == "archived"


def test_webhooks_drive_an_incremental_run_that_creates_updates_and_removes(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    confluence: Emulator,
    receiver: Receiver,
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    sync(conn, keyring, source_id, "full")
    created = confluence.call(
        "POST",
        "/_emulator/pages",
        json={"space": "OPS", "title": "Pager rota", "body": "<p>See DEMO-3 for the rota.</p>", "parent_id": pid(5)},
    )["id"]
    confluence.call("PATCH", f"/_emulator/pages/{pid(9)}", json={"title": "Runbook renamed"})
    confluence.call("DELETE", f"/_emulator/pages/{pid(13)}")
    _send(confluence, receiver, "page_created", created)
    _send(confluence, receiver, "page_updated", pid(9))
    _send(confluence, receiver, "page_removed", pid(13))

    scope = events_to_scope("confluence", receiver.take_all())
    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=scope)

    assert (outcome.state, run.error_count, run.entities_done) == ("succeeded", 0, 3)
    assert live_ids(probe, source_id) == _expected(confluence)
    assert (entity(probe, source_id, pid(9)) or {})["title"] == "Runbook renamed"
    assert (entity(probe, source_id, pid(13)) or {})["deleted_at"] is not None
    assert (created, pid(5)) in edges(probe, source_id, "parent")
    refs = probe.execute(
        "select target_ref from entity_refs r join entities e on e.id = r.entity_id "
        "where e.source_id = %s and e.source_entity_id = %s",
        (source_id, created),
    ).fetchall()
    assert ("DEMO-3",) in refs


def test_reconciliation_soft_deletes_removed_pages_and_restores_returned_ones(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    sync(conn, keyring, source_id, "full")
    for i in (21, 33):
        confluence.call("DELETE", f"/_emulator/pages/{pid(i)}")

    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, outcome.deleted) == ("succeeded", 2)
    assert live_ids(probe, source_id) == _expected(confluence)
    assert all((entity(probe, source_id, pid(i)) or {})["deleted_at"] is not None for i in (21, 33))


def test_restricted_parent_hides_its_children(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    sync(conn, keyring, source_id, "full")

    # Generated restriction on page 8: its children carry it although they have none of their own.
    app: ConfluenceEmulator = confluence.app
    allowed = {*app.groups["leadership"], app.user(app.generated(8)["author"])["email"]}
    restricted = _acl(probe, source_id, 8)
    assert restricted == sorted(f"user:{u}" for u in allowed)  # every one of them is a space member
    assert all(_acl(probe, source_id, child) == restricted for child in (28, 32, 36))
    assert all(_acl(probe, source_id, child) == EVERYONE for child in (4, 16, 20, 24, 12))

    # Restrict page 4 to one person: after the next reconciliation its subtree is visible to her only.
    only = confluence.app.user(3)["email"]
    confluence.call("PATCH", f"/_emulator/pages/{pid(4)}", json={"restrictions": {"users": [only], "groups": []}})
    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert outcome.state == "succeeded"
    assert all(_acl(probe, source_id, i) == [f"user:{only}"] for i in (4, 16, 20, 24))
    assert _acl(probe, source_id, 12) == EVERYONE  # a sibling is untouched
    chunks = probe.execute(
        "select count(*) from entity_chunks c join entities e on e.id = c.entity_id "
        "where e.source_id = %s and c.acl_principals is distinct from e.acl_principals",
        (source_id,),
    ).fetchone()
    assert chunks == (0,)


def test_a_permissions_webhook_narrows_the_whole_subtree_without_waiting_for_reconciliation(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    confluence: Emulator,
    receiver: Receiver,
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    sync(conn, keyring, source_id, "full")
    only = confluence.app.user(3)["email"]
    confluence.call("PATCH", f"/_emulator/pages/{pid(4)}", json={"restrictions": {"users": [only], "groups": []}})

    _send(confluence, receiver, "content_permissions_updated", pid(4))
    scope = events_to_scope("confluence", receiver.take_all())
    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=scope)

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    assert all(_acl(probe, source_id, i) == [f"user:{only}"] for i in (4, 16, 20, 24))
    assert _acl(probe, source_id, 12) == EVERYONE
    assert probe.execute(
        "select count(*) from entities where source_id = %s and source_entity_id like '%%*'", (source_id,)
    ).fetchone() == (0,)


def test_unknown_group_members_fail_closed(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    # The restricting group does not exist (its member list cannot be read): the restricted subtree is
    # visible to nobody, never to the whole space.
    confluence.call("PATCH", f"/_emulator/pages/{pid(4)}", json={"restrictions": {"users": [], "groups": ["ghosts"]}})

    outcome, _ = sync(conn, keyring, source_id, "full")

    assert outcome.state == "succeeded"
    assert all(_acl(probe, source_id, i) == [] for i in (4, 16, 20, 24))


def test_malformed_and_forbidden_pages_go_to_the_queue_with_their_reasons(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    confluence.fault(malformed=True, keys=[pid(6), pid(7)])

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count) == ("succeeded", 2)
    assert dead_letters(probe, source_id) == {pid(6): ("malformed", 1), pid(7): ("malformed", 1)}
    assert live_ids(probe, source_id) == _expected(confluence) - {pid(6), pid(7)}

    # DLQ retry: one page now loads, one is forbidden, one was deleted at the source.
    confluence.clear_faults()
    confluence.fault(status=403, keys=[pid(7)])
    confluence.call("DELETE", f"/_emulator/pages/{pid(11)}")
    items = [{"source_type": "page", "source_entity_id": pid(i)} for i in (6, 7, 11)]
    outcome, run = sync(conn, keyring, source_id, "full", scope={"kind": "items", "items": items})

    assert (outcome.state, run.error_count) == ("succeeded", 1)
    assert dead_letters(probe, source_id) == {pid(7): ("permission", 2)}
    assert pid(6) in live_ids(probe, source_id)
    assert (entity(probe, source_id, pid(11)) or {})["deleted_at"] is not None


def test_429_storm_is_retried_and_counted_in_the_run(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", _cloud(confluence))
    confluence.fault(status=429, ratio=0.3, retry_after=0)
    confluence.reset_stats()

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count, run.entities_done) == ("succeeded", 0, PAGES)
    assert live_ids(probe, source_id) == _expected(confluence)
    stats = confluence.stats()
    assert run.rate_limited > 0
    assert (run.api_calls, run.rate_limited) == (stats["requests"], stats["by_status"]["429"])
