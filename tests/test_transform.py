"""The content hash is a stored contract: these digests were made by the hash as it stood before the
load path was made cheaper (issue 15 §2), and every stored ``entities.content_hash`` depends on them.
A change here means every unchanged entity is rewritten (and re-chunked) once after an upgrade."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.pipeline.transform import content_hash, entity_row
from connectors.base import Acl, Edge, Entity, Ref

T = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def awkward_entities() -> dict[str, Entity]:
    plain = Entity(
        source_type="ticket",
        source_entity_id="10001",
        status="final",
        title="PROJ-1 Login fails",
        text="The login form rejects valid credentials.",
        url="https://jira.example.com/browse/PROJ-1",
        author="ann@example.com",
        created_at=T,
        updated_at=T.replace(microsecond=0),
        acl=Acl(("user:ann@example.com", "group:jira:dev")),
        metadata={"priority": "High", "labels": ["auth", "web"], "nested": {"b": 1, "a": None}},
        natural_key="PROJ-1",
        container="PROJ",
    )
    return {
        "plain": plain,
        "graph": Entity(
            source_type="page",
            source_entity_id="77",
            status="draft",
            title="Run\x00book",
            text="a\n\nb",
            url=None,
            author=None,
            created_at=None,
            updated_at=datetime(2026, 3, 4, 5, 6, 7),  # naive
            acl=Acl(None),
            metadata={},
            edges=(Edge("parent", "page", "1"), Edge("blocks", "page", "2", "P-2")),
            refs=(Ref("mentions", "issue", "PROJ-9", "jira"), Ref("author", "user", "@bob", None)),
            aliases=("99", "98", "99"),
            out_of_scope=True,
            sections=("a", "b"),
        ),
        "offsets": Entity(
            source_type="message",
            source_entity_id="C1/1700000000.000100",
            status="archived",
            title="",
            text="Ünïcode ✓",
            url=None,
            author="U1",
            created_at=datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=3))),
            updated_at=datetime(2026, 3, 4, 5, 6, 7, 1, tzinfo=timezone(timedelta(hours=5, minutes=30, seconds=15))),
            acl=Acl(("user:b", "user:b", "group:a")),
            metadata={"thread": {"replies": 2}},
        ),
        "big_int": Entity(
            source_type="ticket",
            source_entity_id="1",
            status="final",
            title="t",
            text="x",
            url=None,
            author=None,
            created_at=T,
            updated_at=T,
            acl=Acl(()),
            metadata={"custom": 2**70, "when": "2026"},
        ),
    }


PINNED = {
    "plain": "f7d9f92b7bc24c05b66ed8213c1c6be23ecd0a6f1ead89f3b4676d9ae8fe35d7",
    "graph": "b9ad783661d3d7636e7dc72a10ee1f6876f5a976c46c146ec6e0078e0bb752a1",
    "offsets": "9c77fda3e23b3b66a2191b3b3311af6a402f3776b422bcb143e90347f6764c09",
    "big_int": "52d2eaa4349e0879de7df959d1c8eb04d33e602b86235ec39b7174f3cbe7e58c",
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_content_hash_keeps_the_digests_already_stored(name: str) -> None:
    entity = awkward_entities()[name]
    assert content_hash(entity) == PINNED[name]
    assert entity_row(entity)["content_hash"] == PINNED[name]


def test_row_timestamps_are_isoformat_text_whatever_the_zone() -> None:
    zones = (None, UTC, timezone(timedelta(hours=-3, minutes=-30)), timezone(timedelta(hours=5, seconds=15)))
    for zone in zones:
        for value in (datetime(1, 1, 1, tzinfo=zone), datetime(2026, 12, 31, 23, 59, 59, 1, tzinfo=zone)):
            entity = dataclasses.replace(awkward_entities()["plain"], created_at=value, updated_at=value)
            row = entity_row(entity)
            assert row["source_created_at"] == row["source_updated_at"] == value.isoformat()


def test_row_needs_no_particular_json_encoder() -> None:
    # Any connection's JSON dumps (the standard library's too) must be able to send the page.
    for name, entity in awkward_entities().items():
        if name != "big_int":
            json.dumps(entity_row(entity))


def test_row_stores_each_principal_and_alias_once_and_no_nul() -> None:
    cases = awkward_entities()
    assert entity_row(cases["offsets"])["acl_principals"] == ["group:a", "user:b"]
    graph = entity_row(cases["graph"])
    assert graph["acl_principals"] is None
    assert graph["aliases"] == ["98", "99"]
    assert graph["title"] == "Runbook"
    assert entity_row(cases["plain"])["aliases"] == []
