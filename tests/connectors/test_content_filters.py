"""Every content filter of every manifest has an effect (issue 12, item 2): each filter is tested on
and off against its emulator over real HTTP, and the set of tested filters must equal the manifests'."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, RawItem, SourceConfig
from connectors.confluence import CONNECTOR as CONFLUENCE
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import Request, Response, RunningEmulator, serve
from connectors.emulators.slack import SlackEmulator
from connectors.jira import CONNECTOR as JIRA
from connectors.jira.client import JiraConnector
from connectors.jira.context import JiraItemContext
from connectors.slack import CONNECTOR as SLACK
from connectors.slack.client import SlackConnector

TOKEN = "filters-token"
# Filters whose effect is tested here; attachments_text is tested with text attachments (item 3).
TESTED: dict[str, set[str]] = {
    "jira": {"comments", "neighbours", "force_api_v2", "attachments_text"},
    "confluence": {"comments", "attachments", "archived", "personal_spaces"},
    "slack": {"private_channels", "direct_messages", "bot_messages", "archived_channels"},
}


def test_every_manifest_filter_is_covered_here() -> None:
    for spec in (JIRA, CONFLUENCE, SLACK):
        declared = {f.key for f in spec.manifest.content_filters}
        assert declared == TESTED[spec.manifest.connector_type], spec.manifest.connector_type


def _config(
    base: str, credential: str, filters: Mapping[str, bool], mode: str = "all", scope: tuple[Any, ...] = ()
) -> SourceConfig:
    return SourceConfig(1, base, credential, mode, scope, dict(filters))  # type: ignore[arg-type]


def _items(connector: Any) -> list[RawItem]:
    try:
        return [i for i in connector.enumerate(None, None) if isinstance(i, RawItem)]
    finally:
        connector.close()


# ---------------------------------------------------------------- Jira


@pytest.fixture
def jira() -> Iterator[RunningEmulator]:
    with serve(JiraEmulator(60, seed=2, token=TOKEN)) as running:
        yield running


def _jira(emu: RunningEmulator, filters: Mapping[str, bool], scope: tuple[Any, ...] = ()) -> list[RawItem]:
    mode = "selected" if scope else "all"
    config = _config(emu.base_url, f"bot@example.com:{TOKEN}", filters, mode, scope)
    return _items(JiraConnector(config, CallStats(), page_size=25))


def test_jira_comments_filter_drops_comments_from_the_payload(jira: RunningEmulator) -> None:
    with_comments = _jira(jira, {"comments": True})
    without = _jira(jira, {"comments": False})

    assert any((i.payload["fields"].get("comment") or {}).get("comments") for i in with_comments)
    assert all("comment" not in i.payload["fields"] for i in without)
    assert len(with_comments) == len(without)


def test_jira_neighbours_filter_fetches_linked_issues_outside_the_scope(jira: RunningEmulator) -> None:
    def neighbours(items: list[RawItem]) -> int:
        return sum(1 for i in items if isinstance(i.context, JiraItemContext) and i.context.neighbour)

    assert neighbours(_jira(jira, {"neighbours": True}, ("ALPHA",))) > 0
    assert neighbours(_jira(jira, {"neighbours": False}, ("ALPHA",))) == 0


def test_jira_force_api_v2_pins_rest_v2(jira: RunningEmulator) -> None:
    config = _config(jira.base_url, f"bot@example.com:{TOKEN}", {"force_api_v2": True})
    connector = JiraConnector(config, CallStats())
    try:
        assert connector.api() == 2
    finally:
        connector.close()


# ---------------------------------------------------------------- Confluence


class _WithPersonalSpace(ConfluenceEmulator):
    """The stock emulator plus one personal space (``~alice``) in the space list, with no pages."""

    def h_spaces(self, req: Request) -> Response:
        resp = super().h_spaces(req)
        body = dict(resp.body) if isinstance(resp.body, Mapping) else {}
        if int(req.arg("start") or 0) == 0:
            personal = {"id": 999, "key": "~alice", "name": "Alice", "type": "personal", "status": "current"}
            body["results"] = [*body.get("results", []), personal]
        return Response(resp.status, body)


@pytest.fixture
def confluence() -> Iterator[RunningEmulator]:
    running = serve(_WithPersonalSpace(pages=40, seed=6, token=TOKEN))
    yield running
    running.stop()


def _confluence(emu: RunningEmulator, filters: Mapping[str, bool]) -> ConfluenceConnector:
    config = _config(emu.base_url + "/wiki", f"bot@demo.example:{TOKEN}", filters)
    return ConfluenceConnector(config, CallStats(), page_size=10, max_wait=0.01)


def _children(items: list[RawItem], kind: str) -> int:
    return sum(1 for i in items if kind in (i.payload.get("children") or {}))


def test_confluence_comments_and_attachments_filters_control_the_expansions(confluence: RunningEmulator) -> None:
    on = _items(_confluence(confluence, {"comments": True, "attachments": True}))
    off = _items(_confluence(confluence, {"comments": False, "attachments": False}))

    assert _children(on, "comment") == len(on) and _children(on, "attachment") == len(on)
    assert _children(off, "comment") == 0 and _children(off, "attachment") == 0


def test_confluence_archived_filter_leaves_out_archived_pages(confluence: RunningEmulator) -> None:
    page_id = httpx.get(f"{confluence.base_url}/_emulator/pages").json()["pages"][5]
    httpx.patch(f"{confluence.base_url}/_emulator/pages/{page_id}", json={"status": "archived"}).raise_for_status()
    on = _items(_confluence(confluence, {"archived": True}))
    off = _items(_confluence(confluence, {"archived": False}))

    archived = {i.source_entity_id for i in on if i.payload.get("status") == "archived"}
    assert archived and not archived & {i.source_entity_id for i in off}
    assert len(off) == len(on) - len(archived)


def test_confluence_personal_spaces_filter_adds_personal_spaces_under_scope_all(confluence: RunningEmulator) -> None:
    def keys(filters: Mapping[str, bool]) -> set[str]:
        connector = _confluence(confluence, filters)
        try:
            return {s["key"] for s in connector._spaces()}
        finally:
            connector.close()

    assert "~alice" in keys({"personal_spaces": True})
    assert "~alice" not in keys({"personal_spaces": False})


# ---------------------------------------------------------------- Slack


@pytest.fixture
def slack() -> Iterator[RunningEmulator]:
    running = serve(SlackEmulator(messages=80, seed=5, token=TOKEN))
    yield running
    running.stop()


def _slack(emu: RunningEmulator, filters: Mapping[str, bool]) -> list[RawItem]:
    config = _config(emu.base_url, TOKEN, filters)
    return _items(SlackConnector(config, CallStats(), page_size=20, max_wait=0.01))


def _channel_facts(items: list[RawItem], test: Callable[[Mapping[str, Any]], bool]) -> int:
    return sum(1 for i in items if test(getattr(i.context, "channel", {}) or {}))


def test_slack_bot_messages_filter(slack: RunningEmulator) -> None:
    def bots(items: list[RawItem]) -> int:
        return sum(1 for i in items if i.payload.get("bot_id") or i.payload.get("subtype") == "bot_message")

    assert bots(_slack(slack, {"bot_messages": True})) > 0
    assert bots(_slack(slack, {"bot_messages": False})) == 0


def test_slack_private_channels_and_direct_messages_filters(slack: RunningEmulator) -> None:
    def private(c: Mapping[str, Any]) -> bool:
        return bool(c.get("is_private")) and not c.get("is_im")

    def direct(c: Mapping[str, Any]) -> bool:
        return bool(c.get("is_im") or c.get("is_mpim"))

    everything = _slack(slack, {"private_channels": True, "direct_messages": True})
    neither = _slack(slack, {"private_channels": False, "direct_messages": False})

    assert _channel_facts(everything, private) > 0 and _channel_facts(everything, direct) > 0
    assert _channel_facts(neither, private) == 0 and _channel_facts(neither, direct) == 0


def test_slack_archived_channels_filter(slack: RunningEmulator) -> None:
    channel = _slack(slack, {})[0].container
    httpx.patch(f"{slack.base_url}/_emulator/channels/{channel}", json={"is_archived": True}).raise_for_status()

    assert any(i.container == channel for i in _slack(slack, {"archived_channels": True}))
    assert not any(i.container == channel for i in _slack(slack, {"archived_channels": False}))


def test_jira_attachments_text_inlines_text_attachments_and_keeps_binaries_as_links(jira: RunningEmulator) -> None:
    from connectors.jira.mapping import map_item

    on = [map_item(i) for i in _jira(jira, {"attachments_text": True})]
    off = [map_item(i) for i in _jira(jira, {"attachments_text": False})]

    inlined = [e for e in on if "Attachment notes.txt:" in e.text]
    assert inlined and all("Repro notes for" in e.text for e in inlined)
    assert not any("Attachment notes.txt:" in e.text for e in off)
    pngs = [a for e in on for a in e.metadata["attachments"] if a["mime_type"] == "image/png"]
    assert pngs and not any(a["inline"] for a in pngs) and all(a["url"] for a in pngs)
    assert not any("PNG" in e.text for e in on)


def test_an_attachment_over_the_cap_is_not_read_past_it(jira: RunningEmulator) -> None:
    from connectors.atlassian import auth_headers
    from connectors.attachments import is_text
    from connectors.http import SourceHttp

    texts = [a for i in _jira(jira, {}) for a in i.payload["fields"]["attachment"] if a["mimeType"] == "text/plain"]
    url = texts[0]["content"]
    headers = auth_headers(f"bot@example.com:{TOKEN}")
    http = SourceHttp(jira.base_url, headers=headers, stats=CallStats(), errors=JIRA.manifest.errors)
    try:
        assert http.get_text_capped(url, 10) == (None, "over the size cap")
        text, why = http.get_text_capped(url, 10_000)
    finally:
        http.close()

    assert text is not None and text.startswith("Repro notes for") and why == ""
    assert is_text("text/markdown", "x.md") and is_text("application/octet-stream", "main.py")
    assert not is_text("image/png", "screen.png") and not is_text("application/pdf", "spec.pdf")
