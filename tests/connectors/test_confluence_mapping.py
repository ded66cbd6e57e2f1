"""Confluence mapping on the real go-atlassian payloads, storage-format text, and inherited page ACLs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from connectors.base import Acl, Edge, MalformedPayload, RawItem, Ref
from connectors.confluence import CONNECTOR
from connectors.confluence.context import ConfluenceItemContext
from connectors.confluence.mapping import map_item, restriction_principals
from connectors.confluence.storage import storage_to_text
from tests.field_coverage import ENVELOPE_KEYS, SKIP_KEYS, field_coverage

MOCKS = Path(__file__).resolve().parents[1] / "fixtures" / "go-atlassian" / "confluence" / "mocks"
SPACE = {"users": ["owner@acme.example"], "groups": ["confluence-users"], "anonymous": False}


def mock(name: str) -> Any:
    path = MOCKS / name
    return json.loads(path.read_text(encoding="utf-8"))


def raw(payload: dict[str, Any], **context: Any) -> RawItem:
    return RawItem(
        "page",
        str(payload.get("id")),
        payload,
        datetime.now(UTC),
        container="DUMMY",
        context=ConfluenceItemContext(**context),
    )


def full_page() -> dict[str, Any]:
    """The real get-content capture plus the expansions the client asks for, from the other captures."""
    page: dict[str, Any] = dict(mock("get-content.json"))
    children = mock("get-content-children.json")
    page["children"] = {"attachment": children["attachment"], "comment": mock("get-content-comments.json")}
    for c in page["children"]["comment"]["results"]:
        c["body"] = {"storage": {"value": "<p>Agreed, see DEMO-7 and @bob.</p>", "representation": "storage"}}
    page["body"] = {"storage": {"representation": "storage", "value": STORAGE}}
    page["ancestors"] = [{"id": "196695", "title": "DUMMY"}, {"id": "64290817", "title": "TEST"}]
    page["space"] = {"id": 196613, "key": "DUMMY", "name": "DUMMY", "type": "global"}
    page["version"] = {"number": 3, "when": "2021-06-27T10:00:00.000Z", "by": {"email": "ed@acme.example"}}
    page["history"] = {"createdBy": {"accountId": "5b10", "email": "author@acme.example"},
                       "createdDate": "2021-06-20T09:00:00.000Z"}  # fmt: skip
    page["metadata"] = {"labels": {"results": [{"prefix": "global", "name": "runbook", "id": "1"}]}}
    page["restrictions"] = {"read": {"restrictions": {"user": {"results": []}, "group": {"results": []}}}}
    return page


STORAGE = (
    "<h1>Deploy</h1><p>Before <strong>release</strong> read "
    '<ac:link><ri:page ri:content-title="Runbook" ri:space-key="OPS"/></ac:link> and '
    '<a href="https://ctreminiom.atlassian.net/wiki/spaces/DUMMY/pages/78708746/child">the child</a>.</p>'
    "<ul><li>step one</li><li>step two<ol><li>nested</li></ol></li></ul>"
    "<table><tbody><tr><th>Env</th><th>Owner</th></tr><tr><td>prod</td><td>ops</td></tr></tbody></table>"
    '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
    "<ac:plain-text-body><![CDATA[make deploy\n  --env prod]]></ac:plain-text-body></ac:structured-macro>"
    '<p>Tracked in <ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">DEMO-12</ac:parameter>'
    "</ac:structured-macro>, chat https://acme.slack.com/archives/C0GENERAL/p1700000000000100, fix "
    "https://gitlab.acme.example/platform/api/-/merge_requests/7</p>"
)


def test_storage_format_keeps_headings_lists_tables_and_code_readable() -> None:
    out = storage_to_text(STORAGE)
    assert out.text.startswith("# Deploy\n\nBefore release read Runbook and the child (https://")
    assert "- step one\n- step two\n  1. nested" in out.text
    assert "Env | Owner\nprod | ops" in out.text
    assert "```\nmake deploy\n  --env prod\n```" in out.text
    assert "Tracked in DEMO-12, chat" in out.text
    assert out.page_links == [("OPS", "Runbook")]
    assert out.jira_keys == ["DEMO-12"]


def test_real_get_content_maps_and_fails_closed_without_restrictions() -> None:
    entity = map_item(raw(mock("get-content.json"), base_url="https://x/wiki", space_read=SPACE,
                          inherited_restrictions=[]))  # fmt: skip
    assert entity.source_entity_id == "64290828"
    assert entity.title == "Confluence Page Title"
    assert entity.status == "final"
    assert entity.url == "https://ctreminiom.atlassian.net/wiki/spaces/DUMMY/pages/64290828/Confluence+Page+Title"
    # the capture has no restrictions expansion: rights unknown -> visible to nobody
    assert entity.acl == Acl(None)


def test_every_captured_listing_item_maps() -> None:
    for name in ("get-contents.json", "search-content.json"):
        for item in mock(name)["results"]:
            payload = item.get("content", item)
            entity = map_item(raw(payload))
            assert entity.title == payload["title"]


def test_full_page_fields_edges_refs_comments_attachments() -> None:
    ctx = {"base_url": "https://ctreminiom.atlassian.net/wiki", "space_read": SPACE, "inherited_restrictions": [],
           "page_ids": {"OPS/Runbook": "555"}}  # fmt: skip
    e = map_item(raw(full_page(), **ctx))
    assert e.author == "author@acme.example"
    assert e.created_at == datetime(2021, 6, 20, 9, tzinfo=UTC)
    assert e.updated_at == datetime(2021, 6, 27, 10, tzinfo=UTC)
    assert e.metadata["version"] == 3 and e.metadata["labels"] == ["runbook"]
    assert e.metadata["space_key"] == "DUMMY" and e.container == "DUMMY"
    assert Edge("parent", "page", "64290817", "TEST") in e.edges
    assert Edge("links_to", "page", "555", "Runbook") in e.edges
    assert Edge("links_to", "page", "78708746") in e.edges  # same-site page URL -> edge, not ref
    assert Ref("mentions", "issue", "DEMO-12", "jira") in e.refs
    assert Ref("mentions", "issue", "DEMO-7", "jira") in e.refs  # from a comment
    assert Ref("mentions", "message", "C0GENERAL/1700000000.000100", "slack") in e.refs
    assert Ref("mentions", "mr", "platform/api!7", "gitlab") in e.refs
    assert len(e.sections) == 3 and e.sections[1].startswith("Comment by ")
    attachments = e.metadata["attachments"]
    assert len(attachments) == 5 and attachments[0]["media_type"] == "image/png"
    assert attachments[0]["url"].startswith("https://ctreminiom.atlassian.net/wiki/download/attachments/")
    assert e.acl == Acl(("user:owner@acme.example", "group:confluence:confluence-users"))


@pytest.mark.parametrize(("status", "expected"), [("current", "final"), ("draft", "draft"), ("archived", "archived")])
def test_page_status_maps_to_entity_status(status: str, expected: str) -> None:
    assert map_item(raw({**full_page(), "status": status})).status == expected


def test_real_restrictions_capture_yields_principals() -> None:
    data = mock("get-content-restrictions.json")["results"][0]["restrictions"]
    # the capture's user has no email/accountId: it cannot be named, the group can
    assert restriction_principals(data) == {"users": (), "groups": ("<string>",)}


# ---------------------------------------------------------------- inherited ACL


def restricted(users: list[str], groups: list[str]) -> dict[str, Any]:
    return {"read": {"restrictions": {"user": {"results": [{"email": u} for u in users]},
                                      "group": {"results": [{"name": g} for g in groups]}}}}  # fmt: skip


def test_restricted_parent_hides_child_from_space_members() -> None:
    child = {**full_page(), "restrictions": restricted([], [])}
    ctx = {"space_read": SPACE, "inherited_restrictions": [{"id": "64290817", "users": ["boss@acme.example"],
           "groups": ["leadership"]}], "group_members": {"leadership": ["cto@acme.example"]}}  # fmt: skip
    acl = map_item(raw(child, **ctx)).acl
    # boss is named by the parent but has no space access: out; cto via leadership (and space group? no)
    assert acl == Acl(())
    space = {"users": ["boss@acme.example"], "groups": ["confluence-users"], "anonymous": False}
    members = {"leadership": ["cto@acme.example"], "confluence-users": ["cto@acme.example", "dev@acme.example"]}
    acl = map_item(raw(child, **{**ctx, "space_read": space, "group_members": members})).acl
    assert acl.principals == ("user:boss@acme.example", "user:cto@acme.example")
    assert "group:confluence:confluence-users" not in acl.principals  # dev@ is a member but not allowed


def test_own_and_inherited_restrictions_intersect() -> None:
    page = {**full_page(), "restrictions": restricted(["a@x", "b@x"], [])}
    ctx = {"space_read": {"users": ["a@x", "b@x", "c@x"], "groups": []},
           "inherited_restrictions": [{"id": "1", "users": ["b@x", "c@x"], "groups": []}]}  # fmt: skip
    assert map_item(raw(page, **ctx)).acl == Acl(("user:b@x",))


def test_pages_sharing_a_space_s_tuples_each_get_their_own_path_s_acl() -> None:
    """The ACL is remembered per space, restrictions and members (decision 125): a page restricted on its
    own, a page under a restricted parent and an open page of the same space, mapped in turn and again,
    each keep the ACL of their own path, and a member list that changes is read anew."""
    space = {"users": ("a@x", "b@x"), "groups": ("staff",), "anonymous": False}
    staff = ("c@x", "d@x")
    parent = [{"id": "1", "users": (), "groups": ("staff",)}]
    pages = [
        ({"restrictions": restricted(["a@x"], [])}, [], {"staff": staff}, ("user:a@x",)),
        (
            {"restrictions": restricted([], [])},
            parent,
            {"staff": staff},
            ("user:c@x", "user:d@x", "group:confluence:staff"),
        ),
        (
            {"restrictions": restricted([], [])},
            [],
            {"staff": staff},
            ("user:a@x", "user:b@x", "group:confluence:staff"),
        ),
        ({"restrictions": restricted([], [])}, parent, {"staff": ("c@x",)}, ("user:c@x", "group:confluence:staff")),
    ]
    for _ in range(2):
        for extra, inherited, members, expected in pages:
            ctx = {"space_read": space, "inherited_restrictions": inherited, "group_members": members}
            assert map_item(raw({**full_page(), **extra}, **ctx)).acl == Acl(expected)


def test_a_space_list_holding_something_unhashable_still_maps() -> None:
    space = {"users": ["a@x", {"odd": "entry"}], "groups": [], "anonymous": False}
    ctx = {"space_read": space, "inherited_restrictions": []}
    assert map_item(raw(full_page(), **ctx)).acl == Acl(("user:a@x",))


@pytest.mark.parametrize(
    "ctx",
    [
        {"inherited_restrictions": []},  # space permissions unknown
        {"space_read": SPACE},  # ancestors' restrictions unknown
        {"space_read": SPACE, "inherited_restrictions": None},
    ],
)
def test_unknown_rights_fail_closed(ctx: dict[str, Any]) -> None:
    assert map_item(raw(full_page(), **ctx)).acl == Acl(None)


def test_malformed_payloads_raise() -> None:
    with pytest.raises(MalformedPayload):
        map_item(raw({"id": "1", "title": None}))
    with pytest.raises(MalformedPayload):
        map_item(raw({"id": "1", "title": "t", "body": "<not an object>", "ancestors": "x"}))


def test_field_coverage_of_real_payloads() -> None:
    ctx = {"base_url": "https://ctreminiom.atlassian.net/wiki", "space_read": SPACE, "inherited_restrictions": []}
    converted = frozenset({"body.storage.value", "children.comment.results[].body.storage.value"})
    data_only = SKIP_KEYS | ENVELOPE_KEYS
    shares = {}
    for name, payload in (("page (get-content + expansions)", full_page()), ("get-content", mock("get-content.json"))):
        entity = map_item(raw(payload, **ctx))
        shares[name] = field_coverage(payload, entity, converted=converted)
        shares[name + ", without paging envelope"] = field_coverage(
            payload, entity, converted=converted, skip=data_only
        )
    for name, cov in shares.items():
        print(f"confluence field coverage {name}: {cov.reached}/{cov.total} = {cov.share:.0%}; missed {cov.missed}")
    assert shares["page (get-content + expansions)"].share >= 0.75
    assert shares["page (get-content + expansions), without paging envelope"].share >= 0.9


def test_connector_spec_is_exported() -> None:
    assert CONNECTOR.manifest.connector_type == "confluence"
    assert CONNECTOR.manifest.scope_kinds == ("space",)
    assert CONNECTOR.map_item is map_item
