"""A Slack run that fetches by id takes the workspace's directories an earlier run of the source read
(connectors.directories, decision 125), against the Slack emulator over real HTTP.

Each test starts with no directories kept (tests/conftest.py clears them around every test)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectors.base import CallStats, ItemGone, RawItem, SourceConfig
from connectors.emulators.kit import RunningEmulator, serve
from connectors.emulators.slack import SlackEmulator
from connectors.slack.client import SlackConnector

TOKEN = "xoxb-test"
DIRECTORIES = ("/api/auth.test", "/api/users.list", "/api/conversations.list")


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    running = serve(SlackEmulator(messages=70, seed=5, token=TOKEN, connect=True))
    yield running
    running.stop()


def connector(emu: RunningEmulator, ttl: float = 300.0, token: str = TOKEN) -> SlackConnector:
    config = SourceConfig(
        7, emu.base_url, token, "all", (), {"direct_messages": True}, max_attempts=1, directory_ttl=ttl
    )
    return SlackConnector(config, CallStats(), page_size=50, max_wait=0.01)


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def directory_reads(emu: RunningEmulator) -> dict[str, int]:
    """Requests per directory method since the stats were reset (the emulator counts by route pattern)."""
    routes = {
        route.split(" ", 1)[-1].replace("\\", ""): n for route, n in control(emu, "GET", "stats")["by_route"].items()
    }
    return {route: n for route, n in routes.items() if route in DIRECTORIES}


def message_in(emu: RunningEmulator, channel: str) -> str:
    ids = control(emu, "GET", f"messages?channel={channel}")["messages"]
    return str(ids[0])


def full_run(emu: RunningEmulator, ttl: float = 300.0) -> dict[str, RawItem]:
    conn = connector(emu, ttl)
    try:
        return {i.source_entity_id: i for i in conn.enumerate(None, None) if isinstance(i, RawItem)}
    finally:
        conn.close()


def fetch(emu: RunningEmulator, ids: list[str], ttl: float = 300.0, token: str = TOKEN) -> list[Any]:
    conn = connector(emu, ttl, token)
    try:
        return list(conn.fetch([("message", i) for i in ids]))
    finally:
        conn.close()


def test_a_fetch_by_id_after_a_run_reads_no_directory_and_maps_the_same() -> None:
    running = serve(SlackEmulator(messages=70, seed=5, token=TOKEN, connect=True))
    try:
        everything = full_run(running)
        wanted = [message_in(running, "C0INCIDENT"), message_in(running, "G0LEADERS")]
        control(running, "DELETE", "stats")

        taken = fetch(running, wanted)

        assert directory_reads(running) == {}
        fresh = fetch(running, wanted, ttl=0)  # the platform setting at 0: every run reads its own
        assert len(directory_reads(running)) == 3
        assert [(i.source_entity_id, i.payload, i.context) for i in taken] == [
            (i.source_entity_id, i.payload, i.context) for i in fresh
        ]
        assert {i.source_entity_id for i in taken} >= set(wanted) and set(wanted) <= set(everything)
    finally:
        running.stop()


def test_directories_older_than_the_setting_are_read_again(emu: RunningEmulator) -> None:
    full_run(emu)
    wanted = [message_in(emu, "C0INCIDENT")]
    control(emu, "DELETE", "stats")

    time.sleep(0.3)  # older than the 0.2 s asked for below
    fetch(emu, wanted, ttl=0.2)

    assert len(directory_reads(emu)) == 3


def test_a_rotated_credential_reads_its_own() -> None:
    running = serve(SlackEmulator(messages=70, seed=5, token=None))  # takes any token
    try:
        full_run(running)
        wanted = [message_in(running, "C0INCIDENT")]
        control(running, "DELETE", "stats")

        out = fetch(running, wanted, token="xoxb-rotated")

        assert len(directory_reads(running)) == 3 and any(isinstance(i, RawItem) for i in out)
    finally:
        running.stop()


def test_a_channel_new_since_the_kept_list_is_read_not_taken_for_gone(emu: RunningEmulator) -> None:
    control(emu, "PATCH", "channels/G0HRTEAM", {"is_member": False})  # not listed to the token yet
    assert not any(i.container == "G0HRTEAM" for i in full_run(emu).values())
    control(emu, "PATCH", "channels/G0HRTEAM", {"is_member": True})  # the app was added to the channel
    wanted = message_in(emu, "G0HRTEAM")
    control(emu, "DELETE", "stats")

    out = fetch(emu, [wanted])

    assert [i.source_entity_id for i in out if isinstance(i, RawItem)][:1] == [wanted]
    assert not any(isinstance(i, ItemGone) for i in out)
    assert directory_reads(emu) == {"/api/conversations.list": 1}


def test_someone_not_in_the_kept_user_map_makes_it_read_once_more(emu: RunningEmulator) -> None:
    """The Slack Connect channel has a member of another organisation, never in users.list: the kept map
    lacks them, so the run reads the map anew, once, and maps the message as a run without it would. The map it
    read is kept with the ids it lacks, so the next run does not read it again for them."""
    full_run(emu)
    wanted = [str(control(emu, "POST", "messages", {"channel": "C0PARTNER", "text": "hi", "user": "W0EXTERN01"})["id"])]
    control(emu, "DELETE", "stats")

    taken = fetch(emu, wanted)

    assert directory_reads(emu) == {"/api/users.list": 1}
    control(emu, "DELETE", "stats")
    again = fetch(emu, wanted)  # the map read just now, with the ids it lacks: not read a third time
    assert directory_reads(emu) == {} and [i.context for i in again] == [i.context for i in taken]
    fresh = fetch(emu, wanted, ttl=0)
    assert [(i.payload, i.context) for i in taken] == [(i.payload, i.context) for i in fresh]


def test_channels_the_scope_names_but_cannot_see_are_noted_when_the_list_is_taken(emu: RunningEmulator) -> None:
    def selected(ttl: float) -> SlackConnector:
        config = SourceConfig(7, emu.base_url, TOKEN, "selected", ("C0INCIDENT", "C0NOWHERE1"), {}, directory_ttl=ttl)
        return SlackConnector(config, CallStats(), page_size=50, max_wait=0.01)

    first = selected(300.0)
    list(first.enumerate(None, None))
    first.close()
    wanted = message_in(emu, "C0INCIDENT")
    control(emu, "DELETE", "stats")
    by_id = selected(300.0)

    out = list(by_id.fetch([("message", wanted)]))

    by_id.close()
    assert directory_reads(emu) == {} and [i.source_entity_id for i in out][:1] == [wanted]
    assert by_id.stats.unread == {"C0NOWHERE1"} == first.stats.unread


def test_an_event_about_a_channel_reads_its_facts_fresh(emu: RunningEmulator) -> None:
    """``<channel>:*`` comes from an event about the channel itself (renamed, archived, a member joined or
    left): the run reads the channel list, so what the event changed is what the messages carry."""
    full_run(emu)
    control(emu, "PATCH", "channels/C0INCIDENT", {"is_archived": True})
    control(emu, "DELETE", "stats")

    taken = fetch(emu, ["C0INCIDENT:*"])

    assert directory_reads(emu).get("/api/conversations.list") == 1
    fresh = fetch(emu, ["C0INCIDENT:*"], ttl=0)
    assert [(type(i), i.source_entity_id, getattr(i, "context", None)) for i in taken] == [
        (type(i), i.source_entity_id, getattr(i, "context", None)) for i in fresh
    ]
    assert any(isinstance(i, RawItem) and (getattr(i.context, "channel", None) or {}).get("is_archived") for i in taken)
