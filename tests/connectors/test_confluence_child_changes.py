"""Confluence polling sees comment changes (issue 12, item 1/4): a comment does not change its page's
lastmodified, so CQL asks for comments too and the page they belong to is fetched again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, RawItem, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.kit import RunningEmulator, serve

TOKEN = "conf-child-token"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    running = serve(ConfluenceEmulator(pages=30, seed=4, token=TOKEN))
    yield running
    running.stop()


def _connector(base: str, filters: dict[str, bool] | None = None) -> ConfluenceConnector:
    config = SourceConfig(1, base, f"bot@demo.example:{TOKEN}", "all", (), filters or {})
    return ConfluenceConnector(config, CallStats(), page_size=7, max_wait=0.01)


def _control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


@pytest.mark.parametrize("flavour", ["cloud", "server"])
def test_a_new_comment_makes_its_page_fetched_again_by_an_incremental_poll(emu: RunningEmulator, flavour: str) -> None:
    base = emu.base_url + ("/wiki" if flavour == "cloud" else "")
    page_id = _control(emu, "GET", "pages")["pages"][3]
    since = datetime.now(UTC) - timedelta(minutes=1)
    _control(emu, "POST", f"pages/{page_id}/comments", {"text": "a late review remark"})

    connector = _connector(base)
    try:
        items = [i for i in connector.enumerate(since, None) if isinstance(i, RawItem)]
    finally:
        connector.close()

    assert [i.source_entity_id for i in items] == [page_id]
    comments = items[0].payload["children"]["comment"]["results"]
    assert any("a late review remark" in c["body"]["storage"]["value"] for c in comments)


def test_with_comments_off_a_comment_change_fetches_nothing(emu: RunningEmulator) -> None:
    page_id = _control(emu, "GET", "pages")["pages"][3]
    since = datetime.now(UTC) - timedelta(minutes=1)
    _control(emu, "POST", f"pages/{page_id}/comments", {"text": "ignored"})

    connector = _connector(emu.base_url + "/wiki", {"comments": False})
    try:
        items = [i for i in connector.enumerate(since, None) if isinstance(i, RawItem)]
    finally:
        connector.close()

    assert items == []
