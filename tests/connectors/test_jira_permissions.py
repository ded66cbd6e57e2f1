"""Jira permissions as Jira evaluates them (issue 13, item 1), on real captured schemes and roles.

The scheme, role and application role payloads are go-atlassian's captures of a real Jira Cloud site
(tests/fixtures/README.md): Browse Projects granted to ``projectRole`` and ``applicationRole`` holders,
which the old client answered with "visible to nobody".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from connectors.base import Acl, RawItem
from connectors.jira.context import JiraItemContext
from connectors.jira.mapping import map_item
from connectors.jira.permissions import (
    LICENSED,
    PUBLIC,
    Lookups,
    browse_holders,
    level_holders,
    mention_token,
    narrow,
    resolve,
    user_tokens,
)
from tests.connectors.conftest import load_fixture

ROLE = load_fixture("go-atlassian", "jira", "mocks", "get-project-role.json")
APP_ROLE = load_fixture("go-atlassian", "jira", "mocks", "get_application_role_by_key.json")
_CAPTURED = load_fixture("go-atlassian", "jira", "mocks", "get-permission-schemes.json")
SCHEMES = {s["name"]: s for s in _CAPTURED["permissionSchemes"]}


def lookups(
    roles: Mapping[str, Any] | None = None,
    apps: Sequence[Any] | None = (APP_ROLE,),
    lead: Mapping[str, Any] | None = None,
) -> Lookups:
    known = {"10003": ROLE} if roles is None else roles
    return Lookups(role=known.get, application_roles=lambda: apps, project_lead=lambda: lead)


def test_real_default_scheme_grants_the_role_actors_and_every_licensed_user() -> None:
    holders = browse_holders(SCHEMES["Default Permission Scheme"])
    assert [h["type"] for h in holders] == ["projectRole", "applicationRole"]

    grants = resolve(holders, lookups())

    assert grants.unresolved == ()
    assert "group:jira:jira-developers" in grants.principals
    assert "user:accountid:5b10a2844c20165700ede21g" in grants.principals  # an accountId-only actor
    assert LICENSED in grants.principals  # applicationRole without a key: any user with application access
    assert "group:jira:jira-servicemanagement-users" in grants.principals  # that application's groups


def test_service_desk_holder_grants_nobody_and_is_named_while_the_roles_still_grant() -> None:
    grants = resolve(browse_holders(SCHEMES["Jira Service Management Permission Scheme for Project DESK"]), lookups())

    assert "group:jira:jira-developers" in grants.principals
    assert any("sd.customer.portal.only" in r for r in grants.unresolved)
    # Roles 10002 and 10005 could not be read (the lookup knows only 10003): each is named, none grants.
    assert any("projectRole 10002" in r for r in grants.unresolved)


def test_every_holder_type_resolves_and_issue_holders_read_the_issue() -> None:
    holders = [
        {"type": "group", "parameter": "devs", "value": "6e1b-uuid"},
        {"type": "user", "parameter": "5b10ac8d82e05b22cc7d4ef5"},
        {"type": "anyone"},
        {"type": "applicationRole", "parameter": "jira-servicedesk"},
        {"type": "reporter"},
        {"type": "assignee"},
        {"type": "projectLead"},
        {"type": "userCustomField", "parameter": "customfield_10050"},
        {"type": "groupCustomField", "parameter": "customfield_10051"},
    ]
    lead = {"accountId": "lead-1", "emailAddress": "Lead@Example.com"}
    grants = resolve(holders, lookups(lead=lead))
    assert grants.unresolved == ()
    assert set(grants.principals) >= {
        "group:jira:devs",
        "group:jira:id:6e1b-uuid",
        "user:accountid:5b10ac8d82e05b22cc7d4ef5",
        PUBLIC,
        "group:jira:application:jira-servicedesk",
        "group:jira:jira-servicemanagement-users",
        "user:lead@example.com",  # e-mails are compared case-insensitively: tokens are lower-case
        "user:accountid:lead-1",
    }
    assert grants.issue_fields == ("reporter", "assignee", "customfield_10050", "customfield_10051")


def test_garbage_holders_never_raise_and_fail_closed_with_a_reason() -> None:
    martian = {"permission": "BROWSE_PROJECTS", "holder": {"type": "martian", "parameter": "x"}}
    scheme = {"permissions": [None, 3, {"permission": "BROWSE_PROJECTS"}, martian]}
    grants = resolve(browse_holders(scheme), lookups())
    assert grants.principals == ()
    assert any("martian" in r for r in grants.unresolved) and any("(none)" in r for r in grants.unresolved)
    assert resolve(level_holders({"values": "truncated"}), lookups()).principals == ()


def test_security_level_narrows_and_everyone_leaves_the_other_side_whole() -> None:
    assert narrow(["group:jira:a", "user:x@e.com"], ["user:x@e.com", "group:jira:b"]) == ["user:x@e.com"]
    assert narrow([LICENSED, "group:jira:a"], ["group:jira:leads"]) == ["group:jira:leads"]
    assert narrow(["group:jira:a"], [PUBLIC]) == ["group:jira:a"]
    # a set is taken as it is (the mapping passes a project's grant as one frozenset): the same answers
    assert narrow(frozenset({"group:jira:a", "user:x@e.com"}), ["user:x@e.com"]) == ["user:x@e.com"]
    assert narrow(frozenset({LICENSED, "group:jira:a"}), {"group:jira:leads"}) == ["group:jira:leads"]
    assert narrow(frozenset({"group:jira:a", "user:x@e.com"}), [PUBLIC]) == ["group:jira:a", "user:x@e.com"]


def test_identities_keep_email_account_id_and_server_name() -> None:
    assert user_tokens({"emailAddress": "Jane.Doe@Acme.COM", "accountId": "5b10", "displayName": "Jane"}) == [
        "user:jane.doe@acme.com",
        "user:accountid:5b10",
    ]
    assert user_tokens({"name": "JDoe", "key": "JIRAUSER10100"}) == ["user:jira:name:jdoe"]
    assert mention_token("accountid:5b10a2844c20165700ede21g") == "user:accountid:5b10a2844c20165700ede21g"
    assert mention_token("5b10a2844c20165700ede21g") == "user:accountid:5b10a2844c20165700ede21g"
    assert mention_token("JDoe") == "user:jira:name:jdoe"


# ---------------------------------------------------------------- mapping


def _issue(**fields: Any) -> dict[str, Any]:
    base = {"summary": "s", "project": {"key": "P"}, "reporter": {"accountId": "rep-1"}, "assignee": None}
    return {"id": "1", "key": "P-1", "fields": {**base, **fields}}


def _raw(payload: Mapping[str, Any], **ctx: Any) -> RawItem:
    return RawItem("ticket", "1", payload, datetime.now(UTC), context=JiraItemContext(**ctx))


def test_reporter_holder_lets_the_reporter_see_their_issue() -> None:
    acl = map_item(_raw(_issue(), project_principals=["group:jira:devs"], project_fields=["reporter", "assignee"])).acl
    assert acl == Acl(("group:jira:devs", "user:accountid:rep-1"))


def test_security_value_that_is_not_an_object_fails_closed() -> None:
    ctx = {"project_principals": ["group:jira:devs"], "security_principals": ["group:jira:devs"]}
    assert map_item(_raw(_issue(security="10000"), **ctx)).acl == Acl(None)
    assert map_item(_raw(_issue(security={"name": "no id"}), **ctx)).acl == Acl(None)
    assert map_item(_raw(_issue(security={"id": "10000"}), **ctx)).acl == Acl(("group:jira:devs",))
    assert map_item(_raw(_issue(security=None), **ctx)).acl == Acl(("group:jira:devs",))
