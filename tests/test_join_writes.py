"""Which consecutive pages may share one transaction (decision 142, ``app.pipeline.run.join_writes``), and
what the joined write carries: the later page's checkpoint and counters, both pages' entities in order, the
vectors prepared for both."""

from __future__ import annotations

import pytest

from app.chunking import Chunk, Ready
from app.pipeline import run
from app.pipeline.load import Batch
from app.pipeline.run import PageWrite, join_writes
from connectors.base import Acl, Entity, ItemError


def _entity(i: int, title: str = "") -> Entity:
    return Entity("ticket", str(i), "final", title or f"issue {i}", "", None, None, None, None, Acl(()))


def _page(first: int, n: int, *, ready: Ready | None = None, **batch: list) -> PageWrite:  # type: ignore[type-arg]
    entities = [_entity(i) for i in range(first, first + n)]
    return PageWrite(
        batch=Batch(entities=entities, **batch),
        ready=ready,
        checkpoint={"enumerated": first + n},
        done=first + n,
        total=1000,
        errors=first,
        api_calls=first // 10,
        rate_limited=first // 100,
        stopped_at=(first + n, 1000, first),
    )


def test_two_pages_of_entities_join_with_the_later_checkpoint_and_counters() -> None:
    a, b = _page(0, 100), _page(100, 100)
    joined = join_writes(a, b)
    assert joined is not None
    assert [e.source_entity_id for e in joined.batch.entities] == [str(i) for i in range(200)]
    later = (b.checkpoint, b.done, b.total, b.errors, b.api_calls, b.rate_limited)
    assert (joined.checkpoint, joined.done, joined.total, joined.errors, joined.api_calls, joined.rate_limited) == later


def test_a_joined_write_that_fails_stops_the_run_at_its_first_page_s_counters() -> None:
    # Neither page commits when their one transaction fails: the run reports what the sequential loop
    # reports when the first of them fails, not the later page's counters (decision 144).
    a, b, c = _page(0, 100), _page(100, 100), _page(200, 100)
    joined = join_writes(a, b)
    assert joined is not None
    joined = join_writes(joined, c)
    assert joined is not None and joined.done == c.done
    assert joined.stopped_at == a.stopped_at == (100, 1000, 0)


def test_an_item_on_both_pages_keeps_both_sightings_in_order_for_the_loader_to_keep_the_last() -> None:
    a = _page(0, 1)
    b = PageWrite(**{**{f: getattr(a, f) for f in PageWrite.__slots__}, "batch": Batch([_entity(0, "renamed")])})
    joined = join_writes(a, b)
    assert joined is not None and [e.title for e in joined.batch.entities] == ["issue 0", "renamed"]


@pytest.mark.parametrize(
    "apart",
    [
        {"errors": [ItemError("ticket", "7", "malformed", "bad")]},
        {"gone": [("ticket", "8")]},
    ],
    ids=["a dead letter", "an item gone"],
)
def test_a_page_with_dead_letters_or_deletions_is_written_on_its_own(apart: dict) -> None:  # type: ignore[type-arg]
    plain, other = _page(0, 10), _page(10, 10, **apart)
    assert join_writes(plain, other) is None
    assert join_writes(other, plain) is None


def test_a_joined_write_stays_within_its_item_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "JOIN_MAX_ITEMS", 150)
    assert join_writes(_page(0, 100), _page(100, 50)) is not None
    assert join_writes(_page(0, 100), _page(100, 51)) is None
    monkeypatch.setattr(run, "JOIN_MAX_ITEMS", 0)  # joining off
    assert join_writes(_page(0, 1), _page(1, 1)) is None


def test_prepared_vectors_join_with_the_later_page_s_chunks_winning() -> None:
    first = Ready(vectors={"h1": "[1]"}, cut={("ticket", "0"): [Chunk(0, "old", "h1")]})
    second = Ready(vectors={"h2": "[2]"}, cut={("ticket", "0"): [Chunk(0, "new", "h2")]})
    joined = join_writes(_page(0, 1, ready=first), _page(1, 1, ready=second))
    assert joined is not None and joined.ready is not None
    assert joined.ready.vectors == {"h1": "[1]", "h2": "[2]"}
    assert [c.text for c in joined.ready.cut[("ticket", "0")]] == ["new"]
    assert first.vectors == {"h1": "[1]"}  # the waiting page's own Ready is left as it was
    # A page whose vectors were prepared never joins one whose were not (its transaction embeds them).
    assert join_writes(_page(0, 1, ready=Ready()), _page(1, 1)) is None
    assert join_writes(_page(0, 1), _page(1, 1, ready=Ready())) is None
