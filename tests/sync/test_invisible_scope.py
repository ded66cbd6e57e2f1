"""A scope list naming a unit the credential cannot see (issue 12, bad input): a Jira project, a Confluence
space, a Slack channel. The run goes on with the rest of the scope, its error_detail names the unit,
nothing else is dropped and reconciliation deletes nothing of that unit (end to end, emulators over HTTP).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.slack import SlackEmulator
from tests.sync.conftest import Jira, sync
from tests.sync.conftest import add_source as add_jira_source
from tests.sync.connectors_conftest import Emulator, add_source, dead_letters, live_ids, served


@pytest.fixture()
def confluence() -> Iterator[Emulator]:
    with served(ConfluenceEmulator(pages=24, seed=5, token="emulator-token-0001")) as emulator:
        yield emulator


@pytest.fixture()
def slack() -> Iterator[Emulator]:
    with served(SlackEmulator(messages=40, seed=3, token="emulator-token-0001")) as emulator:
        yield emulator


def _live(probe: psycopg.Connection[Any], source_id: int) -> set[str]:
    return live_ids(probe, source_id)


def test_a_jira_project_the_credential_cannot_see_is_named_and_nothing_of_it_is_deleted(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_jira_source(conn, keyring, jira, scope=["ALPHA", "BETA", "GHOST"])
    _, first = sync(conn, keyring, source_id, "full")
    assert first.state == "succeeded"
    assert "jira project GHOST named in scope_list is not visible to the credential" in (first.error_detail or "")
    held = _live(probe, source_id)
    beta = {sid for sid in held if jira.app.key_of(int(sid) - 10000).startswith("BETA-")}
    assert beta and held - beta  # both projects were read despite GHOST

    jira.app.invisible_projects.add("BETA")
    _, recon = sync(conn, keyring, source_id, "reconciliation")

    assert recon.state == "succeeded"
    assert "jira project BETA named in scope_list is not visible to the credential" in (recon.error_detail or "")
    assert _live(probe, source_id) == held  # nothing of BETA (nor anything else) was deleted
    assert dead_letters(probe, source_id) == {}


def test_a_confluence_space_the_credential_cannot_see_is_named_and_nothing_of_it_is_deleted(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki", scope=["ENG", "OPS", "NOPE"])
    _, first = sync(conn, keyring, source_id, "full")
    assert first.state == "succeeded"
    assert "confluence space NOPE named in scope_list is not visible" in (first.error_detail or "")
    held = _live(probe, source_id)
    assert held

    confluence.app.invisible_spaces.add("OPS")
    _, recon = sync(conn, keyring, source_id, "reconciliation")

    assert recon.state == "succeeded"
    assert "confluence space OPS named in scope_list is not visible" in (recon.error_detail or "")
    assert _live(probe, source_id) == held
    assert dead_letters(probe, source_id) == {}


def test_a_slack_channel_the_token_cannot_see_is_named_and_nothing_of_it_is_deleted(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url, scope=["C0GENERAL", "G0LEADERS"])
    _, first = sync(conn, keyring, source_id, "full")
    assert first.state == "succeeded"
    held = _live(probe, source_id)
    leaders = {sid for sid in held if sid.startswith("G0LEADERS:")}
    assert leaders and held - leaders

    slack.call("PATCH", "/_emulator/channels/G0LEADERS", json={"is_member": False})  # the app was removed
    _, recon = sync(conn, keyring, source_id, "reconciliation")

    assert recon.state == "succeeded"
    assert "slack channel G0LEADERS named in scope_list is not visible to the token" in (recon.error_detail or "")
    assert _live(probe, source_id) == held


def test_a_slack_channel_named_by_name_that_is_not_visible_stops_every_delete(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    source_id = add_source(conn, keyring, "slack", slack.base_url, scope=["general", "leadership"])
    sync(conn, keyring, source_id, "full")
    held = _live(probe, source_id)
    gone = sorted(sid for sid in held if sid.startswith("C0GENERAL:"))[0]
    channel, ts = gone.split(":")
    slack.call("DELETE", f"/_emulator/messages/{channel}/{ts}")
    slack.call("PATCH", "/_emulator/channels/G0LEADERS", json={"is_member": False})

    _, recon = sync(conn, keyring, source_id, "reconciliation")

    assert recon.state == "succeeded"
    detail = recon.error_detail or ""
    assert "slack channel #leadership named in scope_list is not visible" in detail
    assert "a scope unit could not be read: nothing was deleted" in detail
    assert _live(probe, source_id) == held  # the leadership channel's messages could be any of them
