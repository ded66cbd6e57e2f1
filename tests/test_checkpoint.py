"""RunCheckpoint: one builder (to_json), one parser (from_json) that takes what earlier versions stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from app.pipeline.checkpoint import BOUNDARY_IDS_KEPT, RunCheckpoint


def test_round_trip() -> None:
    cp = RunCheckpoint(
        connector={"startAt": 100, "jql": "project = A"},
        max_updated=datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        boundary_ids=frozenset({"10002", "10001"}),
        enumerated=150,
        complete=True,
        unread_containers=frozenset({"C2", "C1"}),
    )
    stored = cp.to_json()
    assert stored == {
        "connector": {"startAt": 100, "jql": "project = A"},
        "max_updated": "2024-05-01T12:30:00+00:00",
        "boundary_ids": ["10001", "10002"],
        "enumerated": 150,
        "complete": True,
        "unread_containers": ["C1", "C2"],
    }
    assert RunCheckpoint.from_json(stored) == cp


@pytest.mark.parametrize(
    "stored",
    [
        None,  # a run that never committed a page
        {},
        [],  # not an object at all
        {"connector": None, "max_updated": None},  # an envelope from before enumerated/complete existed
        {"connector": "junk", "max_updated": "not a time", "enumerated": "7", "complete": "yes",
         "unread_containers": "C1"},
    ],
)
def test_old_or_odd_checkpoints_parse_to_a_fresh_start(stored: Any) -> None:
    assert RunCheckpoint.from_json(stored) == RunCheckpoint()


def test_a_partial_old_envelope_keeps_what_it_has() -> None:
    cp = RunCheckpoint.from_json({"connector": {"cursor": "abc"}, "max_updated": "2024-01-02T00:00:00+00:00"})
    assert cp.connector == {"cursor": "abc"}
    assert cp.max_updated == datetime(2024, 1, 2, tzinfo=UTC)
    assert (cp.enumerated, cp.complete, cp.unread_containers) == (0, False, frozenset())


def test_a_checkpoint_keeps_at_most_its_share_of_the_boundary_ids() -> None:
    """A bulk import's boundary can hold tens of thousands of ids; a page's checkpoint stores at most
    BOUNDARY_IDS_KEPT of them (decision 125), each one of the boundary's, and reads them back."""
    ids = {f"ITEM-{i}" for i in range(BOUNDARY_IDS_KEPT + 500)}
    stored = RunCheckpoint(max_updated=datetime(2024, 5, 1, tzinfo=UTC), boundary_ids=ids).to_json()
    kept = stored["boundary_ids"]
    assert len(kept) == BOUNDARY_IDS_KEPT and set(kept) <= ids and kept == sorted(kept)
    assert RunCheckpoint.from_json(stored).boundary_ids == frozenset(kept)
    few = RunCheckpoint(boundary_ids={"b", "a"}).to_json()["boundary_ids"]
    assert few == ["a", "b"]
