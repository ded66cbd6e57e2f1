"""The completeness audit's counts, one request a project or space, asked a few at a time (issue 15 §1,
decision 139).

``count_by_container`` asks the source how many items each unit holds (Jira: a ``maxResults=0`` search or
Cloud's approximate count per project; Confluence: a one-row CQL search per space). Each connector runs it
against the real emulator over HTTP with only the count requests answered late, once with the fan-out and
once one by one (``fanout=1``, as every audit did before): both must give the same counts, a unit held but
unknown to the source included; the emulator's ``max_in_latency`` says whether the requests overlapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest

from connectors.base import CallStats, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from connectors.jira.client import JiraConnector
from tests.connectors.test_listing_ahead import control

TOKEN = "counts-token"
LATE_MS = 300  # long enough that requests sent together are certainly held together

Counts = Callable[[int], Mapping[str, int | None]]


def audited(emu: RunningEmulator, late: str, counts: Counts, fanout: int) -> tuple[Mapping[str, int | None], int]:
    """The counts one audit gave with the routes ``late`` finds answered late, and the most late requests the
    emulator held at once."""
    control(emu, "DELETE", "faults")
    control(emu, "POST", "faults", {"route_latency_ms": {late: LATE_MS}})
    control(emu, "DELETE", "stats")
    try:
        got = counts(fanout)
    finally:
        control(emu, "DELETE", "faults")
    return got, control(emu, "GET", "stats")["max_in_latency"]


def jira_counts(emu: RunningEmulator, held: Sequence[str]) -> Counts:
    def counts(fanout: int) -> Mapping[str, int | None]:
        config = SourceConfig(1, emu.base_url, f"bot@example.com:{TOKEN}", "all", (), {}, fanout=fanout)
        connector = JiraConnector(config, CallStats())
        try:
            return connector.count_by_container(held)
        finally:
            connector.close()

    return counts


@pytest.fixture(params=["server", "cloud"])
def jira(request: pytest.FixtureRequest) -> Iterator[tuple[RunningEmulator, str]]:
    with serve(JiraEmulator(40, seed=5, token=TOKEN, deployment=request.param, projects=4)) as running:
        yield running, request.param


def test_a_jira_audit_counts_its_projects_a_few_at_a_time(jira: tuple[RunningEmulator, str]) -> None:
    emu, deployment = jira
    count_route = r"approximate-count$" if deployment == "cloud" else r"GET /rest/api/2/search$"
    # Four projects the emulator has, one it does not (GHOST), and a container that is no project key.
    counts = jira_counts(emu, ["ALPHA", "BETA", "CORE", "OPS", "GHOST", "not-a-key"])
    in_turn, held_in_turn = audited(emu, count_route, counts, 1)
    together, held_together = audited(emu, count_route, counts, 4)
    assert together == in_turn
    assert list(together) == sorted(together)
    assert sum(v for v in together.values() if v) == 40 and together["not-a-key"] is None
    assert (held_in_turn, held_together) == (1, 4)


def test_a_confluence_audit_counts_its_spaces_a_few_at_a_time() -> None:
    with serve(ConfluenceEmulator(pages=40, seed=3, token=TOKEN)) as emu:

        def counts(fanout: int) -> Mapping[str, int | None]:
            config = SourceConfig(1, emu.base_url, f"bot@demo.example:{TOKEN}", "all", (), {}, fanout=fanout)
            connector = ConfluenceConnector(config, CallStats())
            try:
                return connector.count_by_container(["ENG", "GONE"])  # GONE: held, not in the source's scope
            finally:
                connector.close()

        in_turn, held_in_turn = audited(emu, r"content/search$", counts, 1)
        together, held_together = audited(emu, r"content/search$", counts, 4)
    assert together == in_turn
    assert together["GONE"] == 0 and set(together) == {"ENG", "OPS", "HR", "PRD", "GONE"}
    assert sum(v for v in together.values() if v) > 0
    assert (held_in_turn, held_together) == (1, 4)
