"""A Jira run that fetches by id takes the instance's facts an earlier run of the source read: the API version,
the field list, the scope's visibility check and each project's and security level's rights
(connectors.directories, decision 125), against the Jira emulator over real HTTP.

Each test starts with no directories kept (tests/conftest.py clears them around every test)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, RawItem, SourceConfig
from connectors.directories import SHARED, directory_key
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from connectors.jira.client import JiraConnector

TOKEN = "jira-test-token"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with serve(JiraEmulator(60, seed=5, token=TOKEN)) as running:
        yield running


def connector(emu: RunningEmulator, scope: tuple[str, ...] = (), ttl: float = 300.0) -> tuple[JiraConnector, CallStats]:
    config = SourceConfig(
        3,
        emu.base_url,
        f"bot@example.com:{TOKEN}",
        "selected" if scope else "all",
        scope,
        {},
        directory_ttl=ttl,
    )
    stats = CallStats()
    return JiraConnector(config, stats, page_size=20), stats


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def routes(emu: RunningEmulator) -> dict[str, int]:
    """Requests by route since the stats were reset, the emulator's patterns shortened to their last part."""
    out: dict[str, int] = {}
    for route, n in control(emu, "GET", "stats")["by_route"].items():
        name = route.split(" ", 1)[-1].replace("(?P<v>[23])", "N").replace("\\", "")
        out[name] = out.get(name, 0) + n
    return out


def full_run(emu: RunningEmulator, scope: tuple[str, ...] = ()) -> dict[str, RawItem]:
    conn, _ = connector(emu, scope)
    try:
        return {i.source_entity_id: i for i in conn.enumerate(None, None) if isinstance(i, RawItem)}
    finally:
        conn.close()


def fetch(
    emu: RunningEmulator, ids: list[str], scope: tuple[str, ...] = (), ttl: float = 300.0
) -> tuple[list[Any], CallStats]:
    conn, stats = connector(emu, scope, ttl)
    try:
        return list(conn.fetch([("ticket", i) for i in ids])), stats
    finally:
        conn.close()


def _secured(items: dict[str, RawItem]) -> str:
    return next(i for i, item in items.items() if item.payload["fields"].get("security"))


def test_a_fetch_by_id_after_a_run_reads_only_the_issues_and_maps_the_same(emu: RunningEmulator) -> None:
    everything = full_run(emu)
    wanted = [next(iter(everything)), _secured(everything)]
    control(emu, "DELETE", "stats")

    taken, _ = fetch(emu, wanted)

    assert set(routes(emu)) == {"/rest/api/N/issue/(?P<ref>[^/]+)"}, routes(emu)
    fresh, _ = fetch(emu, wanted, ttl=0)  # the platform setting at 0: the run reads its own
    assert len(routes(emu)) > 1
    assert [(i.source_entity_id, i.payload, i.context) for i in taken] == [
        (i.source_entity_id, i.payload, i.context) for i in fresh
    ]
    assert [i.source_entity_id for i in taken] == wanted


def test_facts_older_than_the_setting_are_read_again(emu: RunningEmulator) -> None:
    wanted = [next(iter(full_run(emu)))]
    control(emu, "DELETE", "stats")

    time.sleep(0.3)
    fetch(emu, wanted, ttl=0.2)

    assert "/rest/api/N/field" in routes(emu) and "/rest/api/2/serverInfo" in routes(emu)


def test_a_project_no_earlier_run_read_is_read_and_one_that_was_is_taken(emu: RunningEmulator) -> None:
    """An ALPHA-scoped run reads the rights of ALPHA and of the projects its issues link to; a later by-id run
    of an ALPHA issue and of an issue of a project nobody read takes the first and reads the second."""
    everything = full_run(emu)
    SHARED.clear()
    alpha = full_run(emu, ("ALPHA",))
    conn, _ = connector(emu, ("ALPHA",))
    projects = directory_key("jira", conn.config, "project")
    kept = {p for p in ("ALPHA", "BETA", "CORE", "OPS") if SHARED.get_item(projects, p, 300)}
    conn.close()
    unread = next(p for p in ("BETA", "CORE", "OPS") if p not in kept)
    wanted = [next(iter(alpha)), next(i for i, item in everything.items() if item.container == unread)]
    control(emu, "DELETE", "stats")

    out, _ = fetch(emu, wanted, ("ALPHA",))

    assert "ALPHA" in kept and [i.source_entity_id for i in out if isinstance(i, RawItem)] == wanted
    schemes = routes(emu).get("/rest/api/N/project/(?P<key>[^/]+)/permissionscheme", 0)
    assert schemes == 1, routes(emu)  # the unread project's, read; ALPHA's, taken


def test_the_scope_s_visibility_check_is_taken_only_when_every_project_was_visible(emu: RunningEmulator) -> None:
    """A project hidden from the credential then may be visible now (a webhook for one of its issues says so):
    that check is made anew, and the run names the projects still hidden as a fresh run does."""
    visible = full_run(emu, ("ALPHA", "BETA"))
    partly = full_run(emu, ("ALPHA", "GHOST"))
    control(emu, "DELETE", "stats")

    fetch(emu, [next(iter(visible))], ("ALPHA", "BETA"))
    assert "/rest/api/N/project/(?P<key>[^/]+)" not in routes(emu)
    _, stats = fetch(emu, [next(iter(partly))], ("ALPHA", "GHOST"))

    assert routes(emu)["/rest/api/N/project/(?P<key>[^/]+)"] == 2 and stats.unread == {"GHOST"}
