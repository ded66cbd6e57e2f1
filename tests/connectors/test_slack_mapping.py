"""Slack mapping on real payloads (opsdroid captures, java-slack-sdk every-field samples)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from connectors.base import Acl, Edge, MalformedPayload, RawItem, Ref
from connectors.slack import CONNECTOR
from connectors.slack.context import SlackItemContext
from connectors.slack.mapping import map_item
from tests.field_coverage import ENVELOPE_KEYS, SKIP_KEYS, field_coverage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPSDROID = FIXTURES / "opsdroid" / "opsdroid" / "connector" / "slack" / "tests" / "responses"
SDK = FIXTURES / "java-slack-sdk" / "json-logs" / "samples"
PUBLIC = {"id": "C01N9PM1D53", "name": "general", "is_private": False, "is_im": False, "is_archived": False}
USERS = {"U01NK1K9L68": {"email": "jane@acme.example", "name": "jane"}, "U012AB3CDE": {"email": "x@acme.example"}}
CTX = {"channel": PUBLIC, "team_id": "T01ND2P8N91", "team_url": "https://acme.slack.com/", "users": USERS}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def raw(msg: dict[str, Any], cid: str = "C01N9PM1D53", **ctx: Any) -> RawItem:
    context = SlackItemContext(**{**CTX, **ctx})
    return RawItem("message", f"{cid}:{msg.get('ts')}", msg, datetime.now(UTC), container=cid, context=context)


def test_history_page_messages_map_one_entity_each() -> None:
    page = load(OPSDROID / "method_conversations.history_first_page.json")
    entities = [map_item(raw(m)) for m in page["messages"]]
    e = entities[0]
    assert e.source_type == "message"
    assert e.source_entity_id == "C01N9PM1D53:1512085950.000216"
    assert e.natural_key == "C01N9PM1D53/1512085950.000216"
    assert e.author == "x@acme.example"  # resolved through users.list by exact e-mail
    assert e.title == "#general: I find you punny and would like to …"
    assert e.created_at == datetime.fromtimestamp(1512085950.000216, tz=UTC)
    assert e.url == "https://acme.slack.com/archives/C01N9PM1D53/p1512085950000216"
    assert e.acl == Acl(("group:slack:T01ND2P8N91:members",))
    assert entities[1].author == "U061F7AUR"  # unknown user: the Slack id stays


def test_event_message_and_edit_and_bot_thread_reply() -> None:
    msg = load(OPSDROID / "payload_message.json")["event"]
    assert map_item(raw(msg)).text == "this is a test message"
    changed = load(OPSDROID / "payload_message_message_changed.json")["event"]["message"]
    e = map_item(raw(changed))
    assert e.text == "this is an edited message"
    assert e.updated_at == datetime.fromtimestamp(1613632704, tz=UTC)
    bot = load(OPSDROID / "payload_message_bot_message.json")["event"]
    e = map_item(raw(bot))
    assert e.author == "opsdroid"
    assert e.edges == (Edge("reply_to", "message", "C01N9PM1D53:1614540106.001400", "C01N9PM1D53/1614540106.001400"),)
    assert e.url is not None and e.url.endswith("?thread_ts=1614540106.001400&cid=C01N9PM1D53")


def test_links_mentions_and_files() -> None:
    msg = {
        "type": "message", "user": "U01NK1K9L68", "ts": "1700000000.000100",
        "text": "<@U01NK1K9L68> see <https://acme.atlassian.net/wiki/spaces/ENG/pages/100004|the page>, "
                "DEMO-12, <https://gitlab.acme.example/g/p/-/merge_requests/3> and "
                "<https://acme.slack.com/archives/C0OTHER/p1700000600000100> &amp; more",
        "files": [{"id": "F1", "name": "a.png", "mimetype": "image/png", "url_private": "https://files/a.png"}],
    }  # fmt: skip
    e = map_item(raw(msg))
    assert e.text.startswith("@jane see the page (https://acme.atlassian.net/wiki/spaces/ENG/pages/100004), DEMO-12")
    assert e.text.endswith("& more")
    assert Ref("mentions", "page", "100004", "confluence") in e.refs
    assert Ref("mentions", "issue", "DEMO-12", "jira") in e.refs
    assert Ref("mentions", "mr", "g/p!3", "gitlab") in e.refs
    assert Ref("mentions", "user", "jane@acme.example", "slack") in e.refs
    assert Edge("links_to", "message", "C0OTHER:1700000600.000100", "C0OTHER/1700000600.000100") in e.edges
    assert e.metadata["files"] == [{"id": "F1", "name": "a.png", "mimetype": "image/png", "url": "https://files/a.png"}]


def test_private_channel_and_dm_acl_is_their_members_and_unknown_fails_closed() -> None:
    msg = {"type": "message", "user": "U1", "text": "hi", "ts": "1700000000.000100"}
    private = {**PUBLIC, "is_private": True}
    assert map_item(raw(msg, channel=private, members=["b@x", "a@x"])).acl == Acl(("user:a@x", "user:b@x"))
    dm = {"id": "D1", "is_im": True}
    assert map_item(raw(msg, cid="D1", channel=dm, members=["a@x"])).acl == Acl(("user:a@x",))
    assert map_item(raw(msg, cid="D1", channel=dm, members=None)).acl == Acl(None)
    assert map_item(raw(msg, channel={"id": "C1", "name": "x"})).acl == Acl(None)  # privacy unknown
    assert map_item(raw(msg, team_id=None)).acl == Acl(None)


def test_archived_channel_gives_archived_status() -> None:
    msg = {"type": "message", "user": "U1", "text": "old", "ts": "1700000000.000100"}
    assert map_item(raw(msg, channel={**PUBLIC, "is_archived": True})).status == "archived"


@pytest.mark.parametrize("msg", [{"text": "no ts"}, {"ts": "yesterday"}, {"ts": "1700000000.000100", "text": 5}])
def test_malformed_messages_raise(msg: dict[str, Any]) -> None:
    with pytest.raises(MalformedPayload):
        map_item(raw(msg))


@pytest.mark.parametrize(
    ("name", "pick"),
    [
        ("api/conversations.history.json", lambda d: d["messages"]),
        ("api/conversations.replies.json", lambda d: d["messages"]),
        ("events/MessagePayload.json", lambda d: [d["event"]]),
        ("events/MessageFileSharePayload.json", lambda d: [d["event"]]),
        ("events/MessageBotPayload.json", lambda d: [d["event"]]),
        ("events/MessageThreadBroadcastPayload.json", lambda d: [d["event"]]),
        ("events/AppMentionPayload.json", lambda d: [d["event"]]),
        ("events/MessageChangedPayload.json", lambda d: [d["event"]["message"]]),
    ],
)
def test_every_field_samples_are_tolerated(name: str, pick: Any) -> None:
    for msg in pick(load(SDK / name)):
        msg = {**msg, "ts": "1700000000.000100"}  # the samples blank ts to zeros
        e = map_item(raw(msg))
        assert e.source_entity_id == "C01N9PM1D53:1700000000.000100"


def test_field_coverage_of_real_payloads() -> None:
    shares = {}
    history = load(OPSDROID / "method_conversations.history_first_page.json")["messages"][0]
    event = load(OPSDROID / "payload_message.json")["event"]
    changed = load(OPSDROID / "payload_message_message_changed.json")["event"]["message"]
    bot = load(OPSDROID / "payload_message_bot_message.json")["event"]
    converted = frozenset({"blocks[].elements[].elements[].text"})  # rich text duplicates ``text``
    for name, msg in (("history", history), ("event message", event), ("edited", changed), ("bot reply", bot)):
        shares[name] = field_coverage(msg, map_item(raw(msg)), converted=converted,
                                      skip=SKIP_KEYS | ENVELOPE_KEYS)  # fmt: skip
    for name, cov in shares.items():
        print(f"slack field coverage {name}: {cov.reached}/{cov.total} = {cov.share:.0%}; missed {cov.missed}")
    total = sum(c.total for c in shares.values())
    reached = sum(c.reached for c in shares.values())
    print(f"slack field coverage overall: {reached}/{total} = {reached / total:.0%}")
    assert reached / total >= 0.6


def test_connector_spec_is_exported() -> None:
    assert CONNECTOR.manifest.connector_type == "slack" and CONNECTOR.manifest.scope_kinds == ("channel",)
    assert CONNECTOR.map_item is map_item


def test_metadata_drops_absent_values_and_keeps_false_and_zero() -> None:
    # None, [] and "" are absent; 0 and False are values (decision 96 reads the truthy ones first).
    msg = {"type": "message", "ts": "1512085950.000216", "user": "U01NK1K9L68", "text": "hi", "subtype": "",
           "reactions": [], "reply_count": 0, "files": [], "pinned_to": []}  # fmt: skip
    meta = map_item(raw(msg, channel={**PUBLIC, "is_ext_shared": False})).metadata
    assert meta["reaction_count"] == 0
    assert meta["reply_count"] == 0
    assert meta["channel_type"] == "public_channel"
    for absent in ("subtype", "reactions", "files", "pinned_to", "thread_ts", "edited", "deleted", "channel_shared"):
        assert absent not in meta
    assert map_item(raw(msg)).updated_at == map_item(raw(msg)).created_at


def test_metadata_keeps_its_key_order_and_drops_lists_of_non_objects() -> None:
    # Each value is added only when kept (decision 118): the keys keep the order readers of the stored JSON
    # have always seen, and a list whose entries are all malformed is absent, as an empty one is.
    msg = {"type": "message", "ts": "1512085950.000216", "user": "U01NK1K9L68", "text": "hi <@U012AB3CDE> <#C9|ops>",
           "subtype": "thread_broadcast", "thread_ts": "1512085950.000100", "reply_count": 2, "reply_users": ["U1"],
           "latest_reply": "1512085950.000300", "bot_id": "B1", "team": "T01ND2P8N91", "client_msg_id": "c-1",
           "edited": {"user": "U01NK1K9L68", "ts": "1512085960.000000"}, "parent_user_id": "U012AB3CDE",
           "reactions": [{"name": "+1", "count": 2}, "junk"], "files": [{"id": "F1", "name": "a.txt"}, 7],
           "pinned_to": ["C01N9PM1D53"]}  # fmt: skip
    meta = map_item(raw(msg, channel={**PUBLIC, "is_ext_shared": True})).metadata
    assert list(meta) == [
        "channel_id", "channel_name", "channel_type", "channel_shared", "subtype", "thread_ts", "reply_count",
        "reply_users", "latest_reply", "user_id", "bot_id", "team", "client_msg_id", "edited_by", "edited_ts",
        "parent_user_id", "reactions", "reaction_count", "edited", "files", "pinned_to", "author_identities",
        "mentions", "channel_mentions",
    ]  # fmt: skip
    assert meta["reactions"] == [{"name": "+1", "count": 2}] and meta["reaction_count"] == 2
    assert meta["files"] == [{"id": "F1", "name": "a.txt"}]
    junk = {**msg, "reactions": ["junk"], "files": [7], "edited": "yes"}
    meta = map_item(raw(junk)).metadata
    for absent in ("reactions", "files", "edited", "edited_by", "edited_ts"):
        assert absent not in meta
    assert meta["reaction_count"] == 0
