"""Slack Connect and guests (issue 13 §1), end to end with the emulator's real shapes: a public channel
is the workspace group's, plus its guests (``is_restricted`` / ``is_ultra_restricted``, who see only the
channels they belong to) and, in an externally shared channel (``is_ext_shared``), its members from
another organisation by Slack id. A guest never reaches a public channel they are not in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.slack import EXTERNAL, PARTNER, SlackEmulator
from tests.sync.conftest import sync
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, entity, served

GALE = "user:gale.guest@contractor.example"  # multi-channel guest, member of #incidents and #partner-acme
SAM = "user:sam.single@contractor.example"  # single-channel guest, member of #random


@pytest.fixture()
def slack() -> Iterator[Emulator]:
    with served(SlackEmulator(messages=40, seed=3, token=TOKEN, connect=True)) as emulator:
        yield emulator


def _acl_of_channel(probe: psycopg.Connection[Any], source_id: int, channel: str) -> set[tuple[str, ...]]:
    rows = probe.execute(
        "select acl_principals from live_entities where source_id = %s and container = %s", (source_id, channel)
    ).fetchall()
    assert rows, channel
    return {tuple(sorted(r[0])) for r in rows}


def test_guests_and_external_members_are_named_on_public_channels_they_belong_to(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    posted = slack.call("POST", "/_emulator/messages", json={"channel": PARTNER, "text": "joint launch plan"})
    source_id = add_source(conn, keyring, "slack", slack.base_url)

    _, run = sync(conn, keyring, source_id, "full")

    assert run.state == "succeeded"
    team = f"group:slack:{slack.app.team_id}:members"
    assert _acl_of_channel(probe, source_id, "C0GENERAL") == {(team,)}
    assert _acl_of_channel(probe, source_id, "C0INCIDENT") == {tuple(sorted((GALE, team)))}
    assert _acl_of_channel(probe, source_id, "C0RANDOM") == {tuple(sorted((SAM, team)))}
    shared = entity(probe, source_id, posted["id"])
    assert shared is not None
    assert sorted(shared["acl_principals"]) == sorted([GALE, team, f"user:slack:{EXTERNAL}"])
    assert shared["metadata"]["channel_shared"] is True
    # Private channels list their members one by one already; no guest is in #leadership.
    assert all(GALE not in acl and SAM not in acl for acl in _acl_of_channel(probe, source_id, "G0LEADERS"))
