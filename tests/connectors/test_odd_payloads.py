"""Truncated or partial payloads (issue 13, "Bad input"): every top-level field of a real captured
payload replaced by an odd value maps to an Entity or a MalformedPayload, never another exception."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from connectors.base import MalformedPayload, RawItem
from connectors.confluence.context import ConfluenceItemContext
from connectors.confluence.mapping import map_item as confluence_map
from connectors.jira.context import JiraItemContext
from connectors.jira.mapping import map_item as jira_map
from connectors.slack.context import SlackItemContext
from connectors.slack.mapping import map_item as slack_map
from tests.connectors.conftest import load_fixture

ODD: list[Any] = [None, "x", 3, [], {}, ["x"], [{"x": 1}], {"content": "truncated"}, True]
OPS = ("opsdroid", "opsdroid", "connector", "slack", "tests", "responses")


def _jira(payload: Mapping[str, Any]) -> Any:
    ctx = JiraItemContext(project_principals=("group:jira:dev",))
    return jira_map(RawItem("ticket", "1", payload, datetime.now(UTC), context=ctx))


def _slack(payload: Mapping[str, Any]) -> Any:
    ctx = SlackItemContext(channel={"id": "C1", "is_private": False}, team_id="T1")
    return slack_map(RawItem("message", "C1:1", payload, datetime.now(UTC), container="C1", context=ctx))


def _confluence(payload: Mapping[str, Any]) -> Any:
    space = {"users": [], "groups": ["confluence-users"]}
    ctx = ConfluenceItemContext(base_url="https://x.example/wiki", space_read=space, inherited_restrictions=[])
    return confluence_map(RawItem("page", "1", payload, datetime.now(UTC), context=ctx))


def _cases() -> list[tuple[str, dict[str, Any], Callable[[Mapping[str, Any]], Any], str]]:
    cases: list[tuple[str, dict[str, Any], Callable[[Mapping[str, Any]], Any], str]] = []
    for issue in load_fixture("go-atlassian", "jira", "v3", "mocks", "search-issues.json")["issues"][:2]:
        cases += [(f"jira fields.{k}", issue, _jira, k) for k in issue["fields"]]
    for msg in load_fixture(*OPS, "method_conversations.history_first_page.json")["messages"][:2]:
        cases += [(f"slack {k}", msg, _slack, k) for k in msg]
    page = load_fixture("go-atlassian", "confluence", "mocks", "get-content.json")
    cases += [(f"confluence {k}", page, _confluence, k) for k in page]
    return cases


@pytest.mark.parametrize(("name", "payload", "mapper", "key"), _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_odd_value_in_any_field_never_raises_anything_but_malformed(
    name: str, payload: dict[str, Any], mapper: Callable[[Mapping[str, Any]], Any], key: str
) -> None:
    for value in ODD:
        broken = copy.deepcopy(payload)
        target = broken["fields"] if name.startswith("jira") else broken
        target[key] = value
        with contextlib.suppress(MalformedPayload):  # a DLQ line is fine; any other exception is the bug
            mapper(broken)
