"""A Confluence run that fetches pages by id takes the directories an earlier run of the source read (the
space list, spaces' read permissions, groups' members, Cloud group names; connectors.directories, decision
125), against the Confluence emulator over real HTTP.

Each test starts with no directories kept (tests/conftest.py clears them around every test)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, ItemGone, RawItem, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.confluence.context import ConfluenceItemContext
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.kit import RunningEmulator, serve

TOKEN = "conf-token"
# Routes as the emulator counts them (its patterns, backslashes dropped).
SPACE_LIST = "/rest/api/space"
SPACE = "/rest/api/space/(?P<key>[^/]+)"
MEMBERS = "/rest/api/group/(?P<name>[^/]+)/member"
GROUP_BY_ID = "/rest/api/group/by-id"
PAGE = "/rest/api/content/(?P<id>d+)"
DIRECTORIES = (SPACE_LIST, SPACE, MEMBERS, GROUP_BY_ID)


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    running = serve(ConfluenceEmulator(pages=60, seed=3, token=TOKEN))
    yield running
    running.stop()


def connector(emu: RunningEmulator, ttl: float, stats: CallStats | None = None, **kw: Any) -> ConfluenceConnector:
    config = SourceConfig(
        1,
        emu.base_url + "/wiki",
        f"bot@demo.example:{TOKEN}",
        kw.pop("scope_mode", "all"),
        tuple(kw.pop("scope_list", ())),
        {},
        max_attempts=1,
        directory_ttl=ttl,
    )
    return ConfluenceConnector(config, stats or CallStats(), page_size=7, max_wait=0.01)


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def reads(emu: RunningEmulator) -> dict[str, int]:
    """Requests per route since the stats were reset (the emulator counts by route pattern)."""
    by_route = control(emu, "GET", "stats")["by_route"]
    return {route.split(" ", 1)[-1].replace("\\", "").replace("(?:/wiki)?", ""): n for route, n in by_route.items()}


def directory_reads(emu: RunningEmulator) -> dict[str, int]:
    return {route: n for route, n in reads(emu).items() if route in DIRECTORIES}


def full_run(emu: RunningEmulator, ttl: float = 300.0, **kw: Any) -> dict[str, RawItem]:
    conn = connector(emu, ttl, **kw)
    try:
        return {i.source_entity_id: i for i in conn.enumerate(None, None) if isinstance(i, RawItem)}
    finally:
        conn.close()


def fetch(
    emu: RunningEmulator, ids: list[str], ttl: float = 300.0, stats: CallStats | None = None, **kw: Any
) -> list[Any]:
    conn = connector(emu, ttl, stats, **kw)
    try:
        return list(conn.fetch([("page", i) for i in ids]))
    finally:
        conn.close()


def context(item: Any) -> ConfluenceItemContext:
    assert isinstance(item, RawItem) and isinstance(item.context, ConfluenceItemContext)
    return item.context


def restricted(items: dict[str, RawItem]) -> str:
    """A page whose rights need group members (a read restriction, so the space's groups' members too)."""
    return next(pid for pid, i in sorted(items.items()) if context(i).group_members)


def test_a_fetch_by_id_after_a_run_reads_only_the_page_and_maps_the_same(emu: RunningEmulator) -> None:
    everything = full_run(emu)
    wanted = sorted(everything)[:2]  # two space home pages (ENG, OPS)
    control(emu, "DELETE", "stats")

    taken = fetch(emu, wanted)

    assert directory_reads(emu) == {}
    assert reads(emu)[PAGE] == 2
    fresh = fetch(emu, wanted, ttl=0)  # the platform setting at 0: every run reads its own
    assert directory_reads(emu) == {SPACE_LIST: 1, SPACE: 2}
    assert [(i.source_entity_id, i.payload, i.context) for i in taken] == [
        (i.source_entity_id, i.payload, i.context) for i in fresh
    ]
    assert [i.source_entity_id for i in taken if isinstance(i, RawItem)] == wanted


def test_directories_older_than_the_setting_are_read_again(emu: RunningEmulator) -> None:
    items = full_run(emu, ttl=0.2)
    wanted = [restricted(items)]
    control(emu, "DELETE", "stats")

    time.sleep(0.3)  # older than the 0.2 s asked for
    fetch(emu, wanted, ttl=0.2)

    assert set(directory_reads(emu)) == {SPACE_LIST, SPACE, MEMBERS}


def test_each_kept_item_ages_on_its_own(emu: RunningEmulator) -> None:
    """A space's permission read later refreshes the store's entry, not the age of the spaces read before."""
    pages = sorted(control(emu, "GET", "pages")["pages"])
    eng, ops = pages[0], pages[1]  # the ENG and OPS home pages
    fetch(emu, [eng], ttl=1.0)  # nothing kept yet: reads the space list and ENG's permission
    time.sleep(0.6)
    fetch(emu, [ops], ttl=1.0)  # takes the list, reads OPS's permission (ENG's stays as old as it was)
    time.sleep(0.6)
    control(emu, "DELETE", "stats")

    fetch(emu, [eng, ops], ttl=1.0)

    assert directory_reads(emu) == {SPACE_LIST: 1, SPACE: 1}  # ENG's is older than 1 s; OPS's is not


def test_a_page_of_a_space_not_in_the_kept_list_makes_it_read_not_gone(emu: RunningEmulator) -> None:
    app = emu.app
    assert isinstance(app, ConfluenceEmulator)
    app.invisible_spaces.add("OPS")  # not listed to the credential yet
    items = full_run(emu)
    assert items and not any(i.container == "OPS" for i in items.values())
    app.invisible_spaces.discard("OPS")  # the credential was given the space
    wanted = next(p for p in control(emu, "GET", "pages")["pages"] if (int(p) - 100000) % 4 == 1)  # an OPS page
    control(emu, "DELETE", "stats")

    out = fetch(emu, [wanted])

    assert [(i.source_entity_id, i.container) for i in out if isinstance(i, RawItem)] == [(wanted, "OPS")]
    assert not any(isinstance(i, ItemGone) for i in out)
    assert directory_reads(emu)[SPACE_LIST] == 1
    # A page of a space the list has still takes it.
    control(emu, "DELETE", "stats")
    fetch(emu, [next(iter(sorted(items)))])
    assert SPACE_LIST not in directory_reads(emu)


def test_spaces_the_allow_list_names_but_cannot_see_are_noted_when_the_list_is_taken(emu: RunningEmulator) -> None:
    items = full_run(emu, scope_mode="selected", scope_list=["ENG", "NOPE"])
    control(emu, "DELETE", "stats")
    taken, fresh = CallStats(), CallStats()

    fetch(emu, sorted(items)[:1], stats=taken, scope_mode="selected", scope_list=["ENG", "NOPE"])
    assert SPACE_LIST not in directory_reads(emu)
    fetch(emu, sorted(items)[:1], ttl=0, stats=fresh, scope_mode="selected", scope_list=["ENG", "NOPE"])

    assert taken.unread == fresh.unread == {"NOPE"}
    assert taken.notes == fresh.notes and any("NOPE" in n for n in taken.notes)


def test_group_members_are_taken_and_a_failed_read_is_asked_again(emu: RunningEmulator) -> None:
    items = full_run(emu)
    wanted = restricted(items)
    space = items[wanted].container
    assert space is not None
    # A group the site does not know: its member read fails (404) and is kept by no one.
    control(emu, "PUT", f"spaces/{space}/permissions", {"groups": ["leadership", "ghosts"]})
    items = full_run(emu)
    assert "ghosts" not in (context(items[wanted]).group_members or {})
    control(emu, "DELETE", "stats")

    taken = fetch(emu, [wanted])

    assert directory_reads(emu) == {MEMBERS: 1}  # ghosts again; leadership taken
    fresh = fetch(emu, [wanted], ttl=0)
    assert [(i.payload, i.context) for i in taken] == [(i.payload, i.context) for i in fresh]
    assert "leadership" in (context(fresh[0]).group_members or {})


def test_cloud_group_names_are_taken_with_the_space_permissions() -> None:
    app = ConfluenceEmulator(pages=60, seed=3, token=TOKEN)
    app.group_ids_only = True  # group subjects carry ids only: names come from group/by-id
    running = serve(app)
    try:
        items = full_run(running)
        wanted = [restricted(items), sorted(items)[0]]
        control(running, "DELETE", "stats")

        taken = fetch(running, wanted)

        assert directory_reads(running) == {}
        fresh = fetch(running, wanted, ttl=0)
        assert GROUP_BY_ID in directory_reads(running)
        assert [(i.payload, i.context) for i in taken] == [(i.payload, i.context) for i in fresh]
        assert all(context(i).group_names for i in taken)
    finally:
        running.stop()
