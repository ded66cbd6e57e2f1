"""Confluence client against the Confluence emulator over real HTTP (Cloud /wiki and Server flavours)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from connectors.base import (
    Acl,
    CallStats,
    Checkpoint,
    Emitted,
    ItemError,
    ItemGone,
    MalformedPayload,
    RawItem,
    SourceAuthFailed,
    SourceConfig,
    SourceError,
)
from connectors.confluence import CONNECTOR
from connectors.confluence.client import ConfluenceConnector
from connectors.confluence.context import ConfluenceItemContext
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.kit import RunningEmulator, serve

TOKEN = "conf-token"
ALICE = "alice.ng@demo.example"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    running = serve(ConfluenceEmulator(pages=60, seed=3, token=TOKEN))
    yield running
    running.stop()


def connector(base: str, stats: CallStats | None = None, **kw: Any) -> ConfluenceConnector:
    config = SourceConfig(1, base, f"bot@demo.example:{TOKEN}", kw.pop("scope_mode", "all"),
                          tuple(kw.pop("scope_list", ())), {})  # fmt: skip
    return ConfluenceConnector(config, stats or CallStats(), page_size=kw.pop("page_size", 7), max_wait=0.01)


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def raws(items: list[Emitted]) -> dict[str, RawItem]:
    return {i.source_entity_id: i for i in items if isinstance(i, RawItem)}


@pytest.mark.parametrize("flavour", ["cloud", "server"])
def test_full_run_enumerates_every_live_page_with_checkpoints(emu: RunningEmulator, flavour: str) -> None:
    base = emu.base_url + ("/wiki" if flavour == "cloud" else "")
    stats = CallStats()
    conn = connector(base, stats)
    try:
        items = list(conn.enumerate(None, None))
    finally:
        conn.close()
    found = raws(items)
    assert sorted(found) == sorted(control(emu, "GET", "pages")["pages"])
    assert sum(isinstance(i, Checkpoint) for i in items) >= 8  # 4 spaces x >= 2 pages of 7
    assert stats.api_calls > 0 and stats.rate_limited == 0
    entities = [CONNECTOR.map_item(r) for r in found.values()]
    assert all(e.acl.principals is not None for e in entities)
    assert any(e.edges for e in entities) and any(e.refs for e in entities)


def test_scope_allow_and_deny_lists(emu: RunningEmulator) -> None:
    conn = connector(emu.base_url + "/wiki", scope_mode="selected", scope_list=["HR"])
    only_hr = raws(list(conn.enumerate(None, None)))
    conn.close()
    assert only_hr and {r.container for r in only_hr.values()} == {"HR"}
    conn = connector(emu.base_url + "/wiki", scope_mode="all", scope_list=["HR"])
    no_hr = raws(list(conn.enumerate(None, None)))
    conn.close()
    assert "HR" not in {r.container for r in no_hr.values()} and len(no_hr) == 60 - len(only_hr)


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "America/Los_Angeles"])
def test_incremental_since_finds_edits_whatever_the_user_time_zone(zone: str) -> None:
    with serve(ConfluenceEmulator(pages=40, seed=1, token=TOKEN, time_zone=zone)) as running:
        before = datetime.now(UTC) - timedelta(seconds=1)
        httpx.patch(running.base_url + "/_emulator/pages/100009", json={"title": "Edited"}).raise_for_status()
        conn = connector(running.base_url + "/wiki")
        try:
            items = list(conn.enumerate(before, None))
            assert conn.has_delta(before)
        finally:
            conn.close()
    found = raws(items)
    assert set(found) == {"100009"}  # the generated pages are months older than the window
    assert CONNECTOR.map_item(found["100009"]).title == "Edited"


def test_a_delta_check_answered_without_results_is_an_error_not_nothing_new(emu: RunningEmulator) -> None:
    # A login page's JSON in place of the CQL search read as "nothing new" before decision 164.
    control(emu, "POST", "faults", {"route": r"/content/search", "body": {"message": "Please log in"}})
    conn = connector(emu.base_url + "/wiki")
    try:
        with pytest.raises(SourceError, match=r"confluence delta check failed: .*the answer has no 'results' array"):
            conn.has_delta(datetime(2000, 1, 1, tzinfo=UTC))
    finally:
        conn.close()


def test_rate_limits_are_retried_honouring_retry_after(emu: RunningEmulator) -> None:
    control(emu, "POST", "faults", {"status": 429, "count": 4, "retry_after": 0})
    stats = CallStats()
    conn = connector(emu.base_url + "/wiki", stats)
    items = list(conn.enumerate(None, None))
    conn.close()
    assert len(raws(items)) == 60 and not [i for i in items if isinstance(i, ItemError)]
    assert stats.rate_limited == 4


def test_per_item_403_404_and_malformed(emu: RunningEmulator) -> None:
    control(emu, "POST", "faults", {"status": 403, "keys": ["100005"]})
    control(emu, "POST", "faults", {"malformed": True, "keys": ["100006"]})
    control(emu, "DELETE", "pages/100007")
    conn = connector(emu.base_url + "/wiki")
    out = list(conn.fetch([("page", "100005"), ("page", "100006"), ("page", "100007"), ("page", "100008")]))
    items = list(conn.enumerate(None, None))
    conn.close()
    assert out[0] == ItemError("page", "100005", "permission", out[0].detail)  # type: ignore[union-attr]
    assert isinstance(out[1], RawItem)
    with pytest.raises(MalformedPayload):
        CONNECTOR.map_item(out[1])
    assert out[2] == ItemGone("page", "100007")
    assert isinstance(out[3], RawItem) and out[3].source_entity_id == "100008"
    assert {"100005", "100007"}.isdisjoint(raws(items))


def test_checkpoint_resume_covers_the_rest(emu: RunningEmulator) -> None:
    conn = connector(emu.base_url + "/wiki")
    first: list[Emitted] = []
    checkpoint = None
    for item in conn.enumerate(None, None):
        first.append(item)
        if isinstance(item, Checkpoint) and len(raws(first)) > 20:
            checkpoint = item.position
            break
    assert checkpoint is not None
    rest = list(conn.enumerate(None, checkpoint))
    conn.close()
    seen_first, seen_rest = raws(first), raws(rest)
    assert not set(seen_first) & set(seen_rest)
    assert len(seen_first) + len(seen_rest) == 60


def test_restricting_a_parent_hides_its_subtree(emu: RunningEmulator) -> None:
    # ENG page j=1 (index 4) is the parent of ENG pages j=4..6 (indices 16, 20, 24).
    control(emu, "PATCH", "pages/100004", {"restrictions": {"users": [ALICE], "groups": []}})
    conn = connector(emu.base_url + "/wiki")
    got = {r.source_entity_id: CONNECTOR.map_item(r) for r in conn.fetch([("page", "100016"), ("page", "100008")])
           if isinstance(r, RawItem)}  # fmt: skip
    conn.close()
    child = got["100016"].acl.principals
    assert child is not None and set(child) <= {f"user:{ALICE}"}
    assert got["100008"].acl == Acl(("group:confluence:confluence-users",))


def test_probe_and_bad_credentials(emu: RunningEmulator) -> None:
    conn = connector(emu.base_url + "/wiki")
    assert conn.probe() == "ok"
    conn.close()
    bad = ConfluenceConnector(SourceConfig(1, emu.base_url + "/wiki", "x:wrong", "all", (), {}), CallStats())
    assert bad.probe() == "auth_failed"
    with pytest.raises(SourceAuthFailed):
        list(bad.enumerate(None, None))
    bad.close()
    gone = ConfluenceConnector(SourceConfig(1, "http://127.0.0.1:9/wiki", None, "all", (), {}), CallStats())
    gone.http.max_attempts = 1
    assert gone.probe() == "unreachable"
    gone.close()


def test_cli_prints_base_url_first() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "connectors.emulators.confluence", "--port", "0", "--pages", "5", "--seed", "2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        pages = httpx.get(base + "/_emulator/pages").json()["pages"]
        assert len(pages) == 5
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("flavour", ["cloud", "server"])
def test_full_run_also_lists_blog_posts_and_resumes_between_pages_and_posts(flavour: str) -> None:
    with serve(ConfluenceEmulator(pages=12, seed=3, token=TOKEN, blog_posts=2)) as emu:
        base = emu.base_url + ("/wiki" if flavour == "cloud" else "")
        conn = connector(base)
        try:
            items = list(conn.enumerate(None, None))
            posts = {sid: r for sid, r in raws(items).items() if sid.startswith("900")}
            assert len(posts) == 8  # two per space
            blog = CONNECTOR.map_item(next(iter(posts.values())))
            assert blog.metadata["content_type"] == "blogpost" and "weekly notes" in blog.title
            assert "Add a summary" not in blog.text and blog.acl.principals  # placeholder dropped, space ACL
            # A checkpoint taken between a space's pages and its posts resumes with the posts.
            between = next(
                i.position for i in items if isinstance(i, Checkpoint) and i.position.get("kind") == "blogpost"
            )
            rest = raws(list(conn.enumerate(None, between)))
            assert {sid for sid in rest if sid.startswith("900")} >= {
                sid for sid in posts if int(sid) % 4 >= int(between["space"])
            }
        finally:
            conn.close()


def test_links_by_title_to_pages_the_run_has_read_or_to_ancestors_ask_the_source_nothing(
    emu: RunningEmulator,
) -> None:
    """Decision 129: a body's ``<ri:page ri:content-title>`` link to a page this run already read, or to
    the page's own ancestor, resolves from what the run has; only the others are looked up by title, each
    once, and every link resolves to what the source's look-up answers."""
    base = emu.base_url + "/wiki"
    control(emu, "DELETE", "stats")
    conn = connector(base)
    try:
        emitted = [i for i in conn.enumerate(None, None) if isinstance(i, RawItem)]
    finally:
        conn.close()
    # Cloud lists through v2 and reads each page at /rest/api/content/{id}: this route is the look-ups alone.
    looked_up = control(emu, "GET", "stats")["by_route"].get("GET (?:/wiki)?/rest/api/content", 0)

    known: set[str] = set()
    unknown: set[str] = set()  # what the source alone can answer, in the order the links come
    linked: set[str] = set()
    for raw in emitted:
        payload = raw.payload
        space = payload["space"]["key"]
        pages = ([payload] if payload["type"] == "page" else []) + payload.get("ancestors", [])
        known |= {f"{space}/{p['title']}" for p in pages if p.get("status") == "current"}
        for key, _, _ in ConfluenceConnector._titled_links(payload, space):  # the links the client resolves
            linked.add(key)
            if key not in known:
                unknown.add(key)
        assert isinstance(raw.context, ConfluenceItemContext)
        for key, target in (raw.context.page_ids or {}).items():
            key_space, title = key.split("/", 1)
            answer = httpx.get(
                base + "/rest/api/content", params={"spaceKey": key_space, "title": title},
                headers={"Authorization": f"Bearer {TOKEN}"},
            ).json()["results"]  # fmt: skip
            assert [target] == [a["id"] for a in answer], key
    assert len(linked) > 10 and len(unknown) < len(linked) / 2  # the data links mostly to parents
    assert looked_up == len(unknown), (looked_up, len(unknown), len(linked))
