"""What a listing reads before its first search, asked at once where nothing orders it (issue 15 §1,
decision 139).

A Jira incremental listing needs the API version (``/serverInfo``) and the user's zone its JQL is written in
(``/myself``); neither needs the other, so both are asked at once. A scoped listing checks every project
its scope names (``/project/{key}``), a few at a time. Each listing below runs against the real emulator
over HTTP with only those requests answered late, once with the fan-out and once one by one (``fanout=1``,
the order every request had before): both must emit the same stream (previews left out: a page is announced
only when the listing was asked ahead, which a loaded host can bring about) and note the same hidden projects;
the emulator's ``max_in_latency`` (the most late requests it held at once) says whether they overlapped.
A connection test looks the scope's projects up the same way. A Confluence incremental listing needs the
space list (its CQL names the spaces) and the user's zone (``/user/current``): asked together too.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import pytest

from connectors.base import CallStats, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from connectors.jira.client import JiraConnector
from tests.connectors.test_fanout import shape
from tests.connectors.test_listing_ahead import committed, control

TOKEN = "preamble-token"
LATE_MS = 300  # long enough that requests sent together are certainly held together
# The emulator's route patterns, as its stats name them: the project read alone, not its sub-resources.
PROJECT_ROUTE = r"/project/\(\?P<key>\[\^/\]\+\)$"


@pytest.fixture(params=["server", "cloud"])
def jira(request: pytest.FixtureRequest) -> Iterator[RunningEmulator]:
    with serve(JiraEmulator(24, seed=5, token=TOKEN, deployment=request.param)) as running:
        yield running


def listed(
    emu: RunningEmulator, late: dict[str, int], *, fanout: int, scope: tuple[str, ...] = (), since: datetime | None
) -> tuple[list[Any], frozenset[str], int]:
    """One enumeration with the routes ``late`` names answered late: what it emitted, the scope units it
    noted unreadable, and the most late requests the emulator held at once."""
    control(emu, "DELETE", "faults")
    control(emu, "POST", "faults", {"route_latency_ms": late})
    control(emu, "DELETE", "stats")
    stats = CallStats()
    mode: Literal["all", "selected"] = "selected" if scope else "all"
    connector = JiraConnector(
        SourceConfig(1, emu.base_url, f"bot@example.com:{TOKEN}", mode, scope, {}, fanout=fanout), stats
    )
    try:
        shapes = committed([shape(e) for e in connector.enumerate(since, None)])
    finally:
        connector.close()
    control(emu, "DELETE", "faults")
    return shapes, frozenset(stats.unread), control(emu, "GET", "stats")["max_in_latency"]


def test_an_incremental_listing_asks_the_api_version_and_the_users_zone_at_once(jira: RunningEmulator) -> None:
    late = {"serverInfo$": LATE_MS, "myself$": LATE_MS}
    since = datetime(2020, 1, 1, tzinfo=UTC)
    in_turn, _, held_in_turn = listed(jira, late, fanout=1, since=since)
    together, _, held_together = listed(jira, late, fanout=4, since=since)
    assert together == in_turn
    assert sum(1 for s in together if s[0] == "item") == 24
    assert (held_in_turn, held_together) == (1, 2)


def test_a_full_listing_reads_no_zone_and_asks_the_api_version_alone(jira: RunningEmulator) -> None:
    # Without ``since`` the JQL names no time: /myself is not read at all (only the version is late here).
    shapes, _, held = listed(jira, {"serverInfo$|myself$": LATE_MS}, fanout=4, since=None)
    assert sum(1 for s in shapes if s[0] == "item") == 24
    assert held == 1
    assert control(jira, "GET", "stats")["by_route"].get("GET /rest/api/(?P<v>[23])/myself", 0) == 0


def test_the_projects_a_scope_names_are_checked_a_few_at_a_time(jira: RunningEmulator) -> None:
    scope = ("ALPHA", "BETA", "GHOST")  # GHOST does not exist: noted, and the rest of the scope is read
    in_turn, unread_in_turn, held_in_turn = listed(jira, {PROJECT_ROUTE: LATE_MS}, fanout=1, scope=scope, since=None)
    together, unread_together, held_together = listed(jira, {PROJECT_ROUTE: LATE_MS}, fanout=4, scope=scope, since=None)
    assert together == in_turn
    assert sum(1 for s in together if s[0] == "item") > 0
    assert unread_together == unread_in_turn == {"GHOST"}
    assert (held_in_turn, held_together) == (1, 3)


def test_a_connection_test_looks_the_scope_projects_up_a_few_at_a_time(jira: RunningEmulator) -> None:
    # What the Admin Panel's "test connection" waits for: the projects a selected scope names.
    scope: tuple[str, ...] = ("ALPHA", "GHOST", "BETA", "NOPE")
    got: dict[int, tuple[list[str], int]] = {}
    for fanout in (1, 4):
        control(jira, "DELETE", "faults")
        control(jira, "POST", "faults", {"route_latency_ms": {PROJECT_ROUTE: LATE_MS}})
        control(jira, "DELETE", "stats")
        config = SourceConfig(1, jira.base_url, f"bot@example.com:{TOKEN}", "selected", scope, {}, fanout=fanout)
        connector = JiraConnector(config, CallStats())
        try:
            unseen = connector.unseen_scope()
        finally:
            connector.close()
        control(jira, "DELETE", "faults")
        got[fanout] = (unseen, control(jira, "GET", "stats")["max_in_latency"])
    assert got[4][0] == got[1][0] == ["GHOST", "NOPE"]  # in the scope's order
    assert (got[1][1], got[4][1]) == (1, 4)


@pytest.mark.parametrize("flavour", ["cloud", "server"])
def test_a_confluence_incremental_listing_asks_the_spaces_and_the_users_zone_at_once(flavour: str) -> None:
    since = datetime(2020, 1, 1, tzinfo=UTC)
    with serve(ConfluenceEmulator(pages=24, seed=3, token=TOKEN)) as emu:
        base = emu.base_url + ("/wiki" if flavour == "cloud" else "")
        got: dict[int, tuple[list[Any], int]] = {}
        for fanout in (1, 4):
            control(emu, "DELETE", "faults")
            control(emu, "POST", "faults", {"route_latency_ms": {r"/rest/api/space$|user/current$": LATE_MS}})
            control(emu, "DELETE", "stats")
            config = SourceConfig(1, base, f"bot@demo.example:{TOKEN}", "all", (), {}, fanout=fanout)
            connector = ConfluenceConnector(config, CallStats())
            try:
                shapes = committed([shape(e) for e in connector.enumerate(since, None)])
            finally:
                connector.close()
            control(emu, "DELETE", "faults")
            got[fanout] = (shapes, control(emu, "GET", "stats")["max_in_latency"])
    assert got[4][0] == got[1][0]
    assert sum(1 for s in got[4][0] if s[0] == "item") > 0
    assert (got[1][1], got[4][1]) == (1, 2)
