"""Slack end to end: emulator -> SlackConnector -> execute_run -> PostgreSQL (issue 6).

Full sync, incremental runs from signed Events API deliveries, reconciliation deletes, channel ACLs,
429 storms, per-item and per-channel dead letters, and the ``<channel>:*`` pseudo-id, which names a
channel-wide fetch or failure and must never become an entity.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.slack import SlackEmulator
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

DM = "D0DM00001"  # direct messages are off by default (content filter direct_messages)


@pytest.fixture()
def slack() -> Iterator[Emulator]:
    with served(SlackEmulator(messages=60, seed=3, token=TOKEN)) as emulator:
        yield emulator


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def _expected(slack: Emulator, channel: str | None = None) -> set[str]:
    params = {"channel": channel} if channel else {}
    ids = slack.call("GET", "/_emulator/messages", params=params)["messages"]
    return {i for i in ids if not i.startswith(DM + ":")}


def _star_entities(probe: psycopg.Connection[Any], source_id: int) -> int:
    row = probe.execute(
        "select count(*) from entities where source_id = %s and source_entity_id like '%%:*'", (source_id,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def _send(slack: Emulator, receiver: Receiver, **event: Any) -> None:
    out = slack.call("POST", "/_emulator/webhooks/send", json={"url": receiver.url, "secret": WEBHOOK_SECRET, **event})
    assert out["status"] == 200


def test_full_sync_loads_every_message_once_with_threads_as_reply_to_edges(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)

    outcome, run = sync(conn, keyring, source_id, "full")

    expected = _expected(slack)
    assert (outcome.state, run.error_count, run.entities_done) == ("succeeded", 0, len(expected))
    assert live_ids(probe, source_id) == expected
    replies = edges(probe, source_id, "reply_to")
    assert replies, "the generated data has threads"
    assert all(reply in expected and parent in expected for reply, parent in replies)
    assert _star_entities(probe, source_id) == 0


def test_second_full_sync_writes_nothing_new(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    before = probe.execute(
        "select max(updated_at), count(*) from entities where source_id = %s", (source_id,)
    ).fetchone()

    outcome, _ = sync(conn, keyring, source_id, "full")

    after = probe.execute(
        "select max(updated_at), count(*) from entities where source_id = %s", (source_id,)
    ).fetchone()
    assert outcome.state == "succeeded"
    assert before == after


def test_events_drive_an_incremental_run_that_adds_edits_and_deletes(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    slack: Emulator,
    receiver: Receiver,
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    general = sorted(_expected(slack, "C0GENERAL"))
    edited_id, deleted_id = general[0], general[1]
    parent_ts = edited_id.split(":")[1]
    posted = slack.call("POST", "/_emulator/messages", json={"channel": "C0GENERAL", "text": "fresh news DEMO-7"})
    reply = slack.call(
        "POST", "/_emulator/messages", json={"channel": "C0GENERAL", "text": "a reply", "thread_ts": parent_ts}
    )
    slack.call("PATCH", f"/_emulator/messages/C0GENERAL/{parent_ts}", json={"text": "edited parent text"})
    slack.call("DELETE", f"/_emulator/messages/C0GENERAL/{deleted_id.split(':')[1]}")
    _send(slack, receiver, type="message", channel="C0GENERAL", ts=posted["ts"])
    _send(slack, receiver, type="message", channel="C0GENERAL", ts=reply["ts"])
    _send(slack, receiver, type="message_changed", channel="C0GENERAL", ts=parent_ts)
    _send(slack, receiver, type="message_deleted", channel="C0GENERAL", ts=deleted_id.split(":")[1])

    scope = events_to_scope("slack", receiver.take_all())
    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=scope)

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    assert live_ids(probe, source_id) == _expected(slack)
    assert (entity(probe, source_id, edited_id) or {})["body"].startswith("edited parent text")
    assert (entity(probe, source_id, deleted_id) or {})["deleted_at"] is not None
    assert (reply["id"], edited_id) in edges(probe, source_id, "reply_to")
    assert "DEMO-7" in (entity(probe, source_id, posted["id"]) or {})["body"]


def _directory_reads(slack: Emulator) -> dict[str, int]:
    """Workspace directory requests since the emulator's stats were reset (it counts by route pattern)."""
    routes = slack.call("GET", "/_emulator/stats")["by_route"]
    names = {route.split(" ", 1)[-1].replace("\\", ""): n for route, n in routes.items()}
    return {r: n for r, n in names.items() if r in ("/api/auth.test", "/api/users.list", "/api/conversations.list")}


def test_a_webhook_run_after_a_sync_reads_no_workspace_directory_unless_the_setting_is_zero(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    slack: Emulator,
    receiver: Receiver,
) -> None:
    """Decision 125: a delivery's run takes the users and channels the full sync read minutes before (the
    platform setting ``directory_ttl``, 300 s by default); at 0 every run reads its own."""
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    runs = []
    for ttl in ("300", "0"):
        probe.execute("update platform_settings set value = %s where key = 'directory_ttl'", (ttl,))
        posted = slack.call("POST", "/_emulator/messages", json={"channel": "C0GENERAL", "text": f"news at {ttl}"})
        _send(slack, receiver, type="message", channel="C0GENERAL", ts=posted["ts"])
        scope = events_to_scope("slack", receiver.take_all())
        slack.call("DELETE", "/_emulator/stats")
        outcome, _ = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=scope)
        assert outcome.state == "succeeded"
        assert (entity(probe, source_id, posted["id"]) or {})["body"].startswith(f"news at {ttl}")
        runs.append(_directory_reads(slack))
    assert runs[0] == {}
    assert runs[1] == {"/api/auth.test": 1, "/api/users.list": 1, "/api/conversations.list": 1}


def test_reconciliation_soft_deletes_what_the_workspace_lost(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    gone = sorted(_expected(slack, "C0RANDOM"))[:2]
    for sid in gone:
        channel, ts = sid.split(":")
        slack.call("DELETE", f"/_emulator/messages/{channel}/{ts}")

    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert outcome.state == "succeeded" and outcome.deleted >= len(gone)
    assert live_ids(probe, source_id) == _expected(slack)
    assert all((entity(probe, source_id, sid) or {})["deleted_at"] is not None for sid in gone)


def test_reconciliation_keeps_the_messages_of_a_channel_it_could_not_read(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    engineering = _expected(slack, "C0ENGINEER")
    slack.fault(status=403, keys=["C0ENGINEER"])

    outcome, run = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, run.error_count, outcome.deleted) == ("succeeded", 1, 0)
    assert engineering <= set(live_ids(probe, source_id))
    assert dead_letters(probe, source_id) == {"C0ENGINEER:*": ("permission", 1)}


def test_channel_acl_public_workspace_private_members_and_membership_events(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    slack: Emulator,
    receiver: Receiver,
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    sync(conn, keyring, source_id, "full")
    team = slack.app.team_id
    public = sorted(_expected(slack, "C0GENERAL"))[0]
    private = sorted(_expected(slack, "G0LEADERS"))
    leaders = [slack.app.user_json(k)["profile"]["email"] for k in (0, 10, 13)]

    assert (entity(probe, source_id, public) or {})["acl_principals"] == [f"group:slack:{team}:members"]
    for sid in private:
        assert sorted((entity(probe, source_id, sid) or {})["acl_principals"]) == sorted(f"user:{e}" for e in leaders)

    # Someone leaves #leadership: a channel-wide event re-reads the channel ("<channel>:*").
    slack.call("PUT", "/_emulator/channels/G0LEADERS/members", json={"members": ["U00000000", "U00000010"]})
    _send(
        slack,
        receiver,
        body={
            "type": "event_callback",
            "event_id": "EvLEFT0001",
            "event": {"type": "member_left_channel", "user": "U00000013", "channel": "G0LEADERS"},
        },
    )
    scope = events_to_scope("slack", receiver.take_all())
    assert scope["items"] == [{"source_type": "message", "source_entity_id": "G0LEADERS:*"}]
    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=scope)

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    for sid in private:
        assert sorted((entity(probe, source_id, sid) or {})["acl_principals"]) == sorted(
            f"user:{e}" for e in leaders[:2]
        )
    assert _star_entities(probe, source_id) == 0


def test_unreadable_channel_is_one_dead_letter_that_a_retry_resolves_without_a_star_entity(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    slack.fault(status=403, keys=["C0ENGINEER"])

    outcome, run = sync(conn, keyring, source_id, "full")

    engineering = _expected(slack, "C0ENGINEER")
    assert (outcome.state, run.error_count) == ("succeeded", 1)
    assert dead_letters(probe, source_id) == {"C0ENGINEER:*": ("permission", 1)}
    assert live_ids(probe, source_id) == _expected(slack) - engineering
    assert _star_entities(probe, source_id) == 0

    slack.clear_faults()
    retry = {"kind": "items", "items": [{"source_type": "message", "source_entity_id": "C0ENGINEER:*"}]}
    outcome, run = sync(conn, keyring, source_id, "full", trigger="manual", scope=retry)

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    assert dead_letters(probe, source_id) == {}
    assert live_ids(probe, source_id) == _expected(slack)
    assert _star_entities(probe, source_id) == 0


def test_malformed_messages_go_to_the_queue_and_the_rest_loads(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    broken = sorted(_expected(slack, "C0INCIDENT"))[:2]
    slack.fault(malformed=True, keys=broken)

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count) == ("succeeded", 2)
    assert dead_letters(probe, source_id) == {sid: ("malformed", 1) for sid in broken}
    assert live_ids(probe, source_id) == _expected(slack) - set(broken)

    slack.clear_faults()
    retry = {"kind": "items", "items": [{"source_type": "message", "source_entity_id": sid} for sid in broken]}
    outcome, run = sync(conn, keyring, source_id, "full", scope=retry)

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    assert dead_letters(probe, source_id) == {}
    assert live_ids(probe, source_id) == _expected(slack)


def test_429_storm_is_retried_and_counted_in_the_run(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    # Seeded fault RNG + a sequential client: the same storm every time, never 5 refusals in a row.
    slack.fault(status=429, ratio=0.4, retry_after=0)
    slack.reset_stats()

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count) == ("succeeded", 0)
    assert live_ids(probe, source_id) == _expected(slack)
    stats = slack.stats()
    assert run.rate_limited > 0
    assert (run.api_calls, run.rate_limited) == (stats["requests"], stats["by_status"]["429"])
