"""A listing's next page asked for while the one before is handed out (issue 15 §1, decision 127).

Each listing runs twice against one emulator that answers every request late: with the next page asked
ahead (``SourceConfig.listing_ahead``, the default, while the listing's requests are timed slower than
``AHEAD_AFTER``) and without. What the two runs emit (items, errors,
checkpoints, in order) must be identical. The emulator's ``latency_depth`` — the longest chain of requests
each sent after the one before it was answered, i.e. the round trips the client waited for in turn — must
be shorter with the listing asked ahead: the next listing page no longer waits for the reads of the items
of the page before it. An error of the page asked ahead is raised at that page's turn, after everything
before it was handed out; a listing closed early leaves no request of its own running.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, Checkpoint, Connector, Preview, RawItem, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import Request, Response, RunningEmulator, error_response, serve
from connectors.emulators.slack import SlackEmulator
from connectors.fanout import AHEAD_AFTER, Ahead, FanOut
from connectors.http import HttpError
from connectors.jira.client import JiraConnector
from connectors.slack.client import SlackConnector
from tests.connectors.test_fanout import shape

TOKEN = "ahead-token"
LATENCY_MS = 60  # above AHEAD_AFTER: a source this slow is asked ahead once its first listing page was timed

Make = Callable[[bool], Connector]


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def committed(shapes: list[Any]) -> list[Any]:
    """What a run commits of a stream: its previews left out. With the listing asked ahead a Jira page may be
    announced while the page before is handed out (decision 138), which the sequential listing cannot do."""
    return [s for s in shapes if s[0] != "preview"]


def listed(emu: RunningEmulator, make: Make, ahead: bool, since: datetime | None = None) -> tuple[list[Any], int]:
    """The shapes one enumeration emitted, and the emulator's latency depth for it."""
    control(emu, "DELETE", "stats")
    connector = make(ahead)
    try:
        shapes = [shape(e) for e in connector.enumerate(since, None)]
    finally:
        connector.close()
    return shapes, control(emu, "GET", "stats")["latency_depth"]


def compare(
    emu: RunningEmulator, make: Make, since: datetime | None = None, *, pages: int = 3
) -> tuple[list[Any], int, int]:
    """(the stream, depth asked ahead, depth not), after checking that both runs emitted the same, in at
    least ``pages`` listing pages."""
    before, depth_off = listed(emu, make, False, since)
    after, depth_on = listed(emu, make, True, since)
    assert committed(after) == committed(before)
    assert sum(1 for s in before if s[0] == "checkpoint") >= pages, "listing pages"
    return before, depth_on, depth_off


@pytest.fixture
def jira() -> Iterator[RunningEmulator]:
    with serve(JiraEmulator(60, seed=5, token=TOKEN)) as running:
        control(running, "POST", "faults", {"latency_ms": LATENCY_MS})
        yield running


def jira_maker(emu: RunningEmulator, filters: dict[str, bool] | None = None) -> Make:
    def make(ahead: bool) -> Connector:
        cfg = SourceConfig(1, emu.base_url, f"bot@example.com:{TOKEN}", "all", (), filters or {}, listing_ahead=ahead)
        return JiraConnector(cfg, CallStats(), page_size=15)

    return make


@pytest.mark.parametrize("api", [3, 2])
def test_a_jira_search_page_is_asked_for_while_the_one_before_is_read(jira: RunningEmulator, api: int) -> None:
    stream, depth_on, depth_off = compare(jira, jira_maker(jira, {"force_api_v2": api == 2}))
    assert sum(1 for s in stream if s[0] == "item") == 60
    # Four search pages: the first is timed (slower than AHEAD_AFTER), and the three after it leave the
    # chain (each read while the page before it is worked on).
    assert depth_on <= depth_off - 3, (depth_on, depth_off)


@pytest.mark.parametrize("api", [3, 2])
def test_a_jira_search_page_asked_ahead_is_previewed_while_the_page_before_is_read(
    jira: RunningEmulator, api: int
) -> None:
    """Decision 138: once the search page asked ahead has come, its issues are announced by a Preview with
    ``ahead`` 1, before the page being handed out ends, so the embedding stage has their text while that
    page's items still wait on their rights and attachments. The announced page then emits no preview of its
    own, and the announcement holds the same issues, in order, with the same payloads. A consumer that takes
    no previews (``SourceConfig.previews`` off: a run without the embedding stage) is sent none, and what
    a run commits is the same either way."""
    filters = {"force_api_v2": api == 2}

    def stream(previews: bool) -> list[Any]:
        cfg = SourceConfig(1, jira.base_url, f"bot@example.com:{TOKEN}", "all", (), filters, previews=previews)
        connector = JiraConnector(cfg, CallStats(), page_size=15)
        try:
            return list(connector.enumerate(None, None))
        finally:
            connector.close()

    emitted = stream(True)
    pages: list[list[Any]] = [[]]
    for e in emitted:
        pages[-1].append(e)
        if isinstance(e, Checkpoint):
            pages.append([])
    announced = 0
    for n, page in enumerate(pages[:-1]):
        ahead = [e for e in page if isinstance(e, Preview) and e.ahead == 1]
        if not ahead:
            continue
        (preview,) = ahead
        announced += 1
        following = pages[n + 1]
        items = [e for e in following if isinstance(e, RawItem)]
        assert [i.source_entity_id for i in preview.items] == [i.source_entity_id for i in items]
        assert [i.payload for i in preview.items] == [i.payload for i in items]
        assert not [e for e in following if isinstance(e, Preview) and e.ahead == 0]
    # The first page's items wait for two rounds of rights look-ups, the second search page for one request.
    assert announced >= 1
    assert [e.ahead for e in pages[0] if isinstance(e, Preview)] == [0, 1]  # its own, then the next page's

    quiet = stream(False)
    assert not [e for e in quiet if isinstance(e, Preview)]
    assert committed([shape(e) for e in quiet]) == committed([shape(e) for e in emitted])


@pytest.mark.parametrize("page_size", [3, 50], ids=["pages-of-3", "one-page-a-listing"])
@pytest.mark.parametrize("flavour", ["cloud", "server"])
def test_a_confluence_listing_page_is_asked_for_while_the_one_before_is_read(flavour: str, page_size: int) -> None:
    """Pages of 3: each listing's next page is asked ahead. Pages of 50: every space's pages (and blog
    posts) are one listing page, and the next listing's first page is asked ahead instead."""
    with serve(ConfluenceEmulator(pages=24, seed=3, token=TOKEN)) as emu:
        control(emu, "POST", "faults", {"latency_ms": LATENCY_MS})
        base = emu.base_url + ("/wiki" if flavour == "cloud" else "")

        def make(ahead: bool) -> Connector:
            cfg = SourceConfig(1, base, f"bot@x.example:{TOKEN}", "all", (), {}, listing_ahead=ahead)
            return ConfluenceConnector(cfg, CallStats(), page_size=page_size, max_wait=0.01)

        stream, depth_on, depth_off = compare(emu, make)
        assert sum(1 for s in stream if s[0] == "item") == 24
        assert depth_on < depth_off, (depth_on, depth_off)

        # The incremental listing (CQL search), asked ahead the same way.
        since = datetime.now(UTC) - timedelta(minutes=1)
        for page_id in control(emu, "GET", "pages")["pages"][:12]:
            control(emu, "PATCH", f"pages/{page_id}", {"body": f"<p>edited {page_id}</p>"})
        stream, depth_on, depth_off = compare(emu, make, since, pages=1 if page_size > 12 else 3)
        assert sum(1 for s in stream if s[0] == "item") == 12
        if page_size < 12:  # one search page has no next page to ask for
            assert depth_on < depth_off, (depth_on, depth_off)


@pytest.mark.parametrize("page_size", [5, 200], ids=["pages-of-5", "one-page-a-channel"])
def test_a_slack_history_page_is_asked_for_while_the_one_before_is_read(page_size: int) -> None:
    """Pages of 5: each channel's next history page is asked ahead. Pages of 200: every channel is one
    page, and the next channel's first page is asked ahead instead. A channel the credential cannot read
    keeps its dead letter where it was."""
    with serve(SlackEmulator(messages=60, seed=5, token=TOKEN)) as emu:
        control(emu, "POST", "faults", {"latency_ms": LATENCY_MS})
        # Files on messages: a download each, read on the fan-out while the next history page is asked for.
        for n in range(8):
            files = [{"name": f"note{n}.txt", "mimetype": "text/plain", "text": f"file {n}"}]
            control(emu, "POST", "messages", {"channel": "C0GENERAL", "text": f"files {n}", "files": files})

        def make(ahead: bool) -> Connector:
            cfg = SourceConfig(1, emu.base_url, TOKEN, "all", (), {}, listing_ahead=ahead)
            return SlackConnector(cfg, CallStats(), page_size=page_size)

        stream, depth_on, depth_off = compare(emu, make)
        assert any(s[0] == "item" and s[6].file_texts for s in stream)
        assert depth_on < depth_off, (depth_on, depth_off)

        channels = [s[5] for s in stream if s[0] == "item"]
        refused = list(dict.fromkeys(channels))[1]  # the second channel listed
        control(emu, "POST", "faults", {"status": 403, "keys": [refused]})
        stream, _, _ = compare(emu, make)
        errors = [s for s in stream if s[0] == "error"]
        assert [e[2] for e in errors] == [f"{refused}:*"], errors
        assert refused not in {s[5] for s in stream if s[0] == "item"}


class RefusingJira(JiraEmulator):
    """Answers a search page that starts past ``refuse_from`` with 400 (not retried: the run stops)."""

    refuse_from: int | None = None

    def _page(self, req: Request, version: int, token_mode: bool) -> Response:
        start = int(req.arg("startAt", "0") or 0)
        if self.refuse_from is not None and start >= self.refuse_from:
            return error_response(400, "search refused")
        return super()._page(req, version, token_mode)


def test_an_error_of_the_page_asked_ahead_is_raised_at_its_turn() -> None:
    """The third search page fails while the second is handed out: both streams stop at the same place,
    after the second page's items and checkpoint, with the same error."""
    emulator = RefusingJira(60, seed=5, token=TOKEN)
    emulator.refuse_from = 30
    with serve(emulator) as emu:
        control(emu, "POST", "faults", {"latency_ms": LATENCY_MS})
        make = jira_maker(emu, {"force_api_v2": True})
        got: dict[bool, tuple[list[Any], str]] = {}
        for ahead in (False, True):
            connector = make(ahead)
            shapes: list[Any] = []
            try:
                with pytest.raises(HttpError) as refused:
                    for emitted in connector.enumerate(None, None):
                        shapes.append(shape(emitted))
            finally:
                connector.close()
            got[ahead] = (committed(shapes), str(refused.value))
    assert got[True] == got[False]
    shapes, reason = got[True]
    assert "400" in reason
    # Pages of 15 from 0, 10 and 20 (each starts 5 back, over the page before): issues 0-34, every one
    # handed out with its page's checkpoint; the next page would start at 30 and is refused.
    assert sum(1 for s in shapes if s[0] == "item") == 35
    assert shapes[-1][0] == "checkpoint" and shapes[-1][1]["start_at"] == 35


def test_a_listing_closed_early_leaves_no_request_running() -> None:
    """Closed at the second page's checkpoint, while the third search page is on its way (asked ahead: the
    pages before it were timed slow): the close returns only once that request was answered, so no
    request of the listing outlives the run that stopped it."""
    with serve(JiraEmulator(60, seed=5, token=TOKEN)) as emu:
        control(emu, "POST", "faults", {"route_latency_ms": {"/search/jql$": 1000}})
        connector = jira_maker(emu)(True)
        try:
            stream = connector.enumerate(None, None)
            assert isinstance(stream, Generator)
            checkpoints = (e for e in stream if isinstance(e, Checkpoint))
            next(checkpoints), next(checkpoints)
            # Only the listing waits at the source, and only the page asked ahead can be waiting now.
            assert emu.app.faults.in_flight == 1
            stream.close()
            assert emu.app.faults.in_flight == 0
        finally:
            connector.close()


def test_a_listing_the_collector_closes_on_the_thread_reading_its_next_page_does_not_wait_for_itself() -> None:
    """A listing dropped without being closed is a cycle (its generator holds it); the collector closes it on
    whatever thread it runs on. Here that is the pool thread reading the page asked ahead, the one request
    its close would wait for: a cancelled run's worker hung forever so (decision 157). The close must return,
    and the pool must still end once that request has."""
    pool = FanOut(2)
    collect, collected = threading.Event(), threading.Event()

    def first() -> int:
        time.sleep(AHEAD_AFTER + 0.02)  # timed slow: the next page is asked ahead, on the pool
        return 1

    def read(n: int) -> int:
        assert collect.wait(10)
        gc.collect()  # the listing is garbage by now: closed here, on this pool thread
        collected.set()
        return n

    gc.disable()  # only the collect() above may close the listing
    try:
        listing = pool.listing(first, lambda page: partial(read, page + 1) if page < 2 else None)
        assert next(listing) == 1  # the second page is on its way
        del listing
        collect.set()
        assert collected.wait(10), "the listing's close waited for the request running it"
    finally:
        gc.enable()
        pool.close()


def test_a_listing_shows_its_page_asked_ahead_once_it_came_never_waiting_and_never_raising() -> None:
    """``Listing.upcoming`` (decision 138): None while the page asked ahead is still at the source, that page
    once it came (and the same page again at its turn), None for one that failed, whose error is raised at
    its turn."""
    pool = FanOut(2)
    held = threading.Event()

    def first() -> int:
        time.sleep(AHEAD_AFTER + 0.02)  # timed slow: the next page is asked ahead, on the pool
        return 1

    def read(n: int) -> int:
        if n == 2:
            assert held.wait(10)
            time.sleep(AHEAD_AFTER + 0.02)
        if n == 3:
            raise ValueError("third page refused")
        return n

    listing = pool.listing(first, lambda page: partial(read, page + 1) if page < 3 else None)
    try:
        assert next(listing) == 1
        assert listing.upcoming() is None  # still at the source
        held.set()
        deadline = time.monotonic() + 10
        while listing.upcoming() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert listing.upcoming() == 2
        assert next(listing) == 2
        time.sleep(0.1)  # the third page's request has failed by now
        assert listing.upcoming() is None
        with pytest.raises(ValueError, match="third page refused"):
            next(listing)
    finally:
        listing.close()
        pool.close()


def test_ahead_runs_on_the_pool_once_the_source_was_timed_slow_and_else_at_its_turn() -> None:
    caller = threading.get_ident()
    ran: list[tuple[str, int]] = []

    def read(name: str, seconds: float = 0.0) -> str:
        ran.append((name, threading.get_ident()))
        time.sleep(seconds)
        return name

    def sent_now(got: Ahead[str]) -> bool:
        """Whether ``got`` was sent before its result was asked for (and on the pool)."""
        time.sleep(0.05)
        before = len(ran)
        got.result()
        return before == len(ran) and ran[-1][1] != caller

    pool = FanOut(2)
    try:
        # Nothing timed yet: at its turn, on the caller's thread, and timed.
        assert not sent_now(pool.ahead(lambda: read("first", AHEAD_AFTER + 0.02)))
        assert ran[-1] == ("first", caller)
        # The last one was slow: sent now, on the pool. A quick one then turns it off again.
        assert sent_now(pool.ahead(lambda: read("slow")))
        assert not sent_now(pool.ahead(lambda: read("quick")))
        assert not sent_now(pool.ahead(lambda: read("slow again", AHEAD_AFTER + 0.02)))
        assert sent_now(pool.ahead(lambda: read("ahead again")))

        # Off (the rate gate shares the run's connection), or one worker: never before its turn.
        for off in (FanOut(2, listing_ahead=False), FanOut(1)):
            for _ in range(2):
                assert not sent_now(off.ahead(lambda: read("later", AHEAD_AFTER + 0.02)))
            off.close()

        # An error is raised at the result, not at the send.
        def fail() -> str:
            raise ValueError("page refused")

        pool.ahead(lambda: read("slow", AHEAD_AFTER + 0.02)).result()
        failing = pool.ahead(fail)
        time.sleep(0.05)
        with pytest.raises(ValueError, match="page refused"):
            failing.result()

        # Dropped: a started read is waited for; one still queued never starts.
        done = threading.Event()

        def slow() -> str:
            time.sleep(0.2)
            done.set()
            return "slow"

        one = FanOut(2)
        one.ahead(lambda: read("timed", AHEAD_AFTER + 0.02)).result()
        started = [one.ahead(slow), one.ahead(slow)]
        queued = one.ahead(lambda: read("queued"))
        time.sleep(0.05)
        ran.clear()
        queued.drop()
        started[0].drop()
        assert done.is_set()
        started[1].drop()
        one.close()
        assert ran == []
    finally:
        pool.close()
