"""The embedding thread takes one page's groups that queued while it was busy in one embedding call (issue
15 §1, app/pipeline/ahead.py, decision 67): fewer, longer calls, each group still handed exactly the
chunks of its own entities and every vector they need, a failure set on the groups of the failed call
only, never on another page's.

The stage is the product's VectorStage; only the model is a deterministic stand-in that can be held
(tests/vector/fakes.py). Whole runs through the stage are in tests/vector/test_embed_ahead.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import UTC, datetime

import pytest

from app.embedding import Vectors
from app.pipeline.ahead import COALESCE, EmbedAhead, Prepared, Stored
from app.vector.stage import VectorStage
from connectors.base import Entity, MalformedPayload, RawItem
from tests.vector.conftest import entity
from tests.vector.fakes import HashEmbedder

FETCHED = datetime(2024, 1, 1, tzinfo=UTC)


class HeldEmbedder(HashEmbedder):
    """Blocks its first call until released; records the texts of every call; can fail on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_on: str | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        self.started.set()
        assert self.release.wait(30), "the test never released the embedder"
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise RuntimeError("embedder gave up")
        return super().embed(texts)


def _raw(n: int, text: str) -> RawItem:
    return RawItem("ticket", str(n), {"n": n, "text": text}, FETCHED)


def _map(item: RawItem) -> Entity:
    if item.payload["text"] == "malformed":
        raise MalformedPayload("no text")
    return entity(int(item.payload["n"]), str(item.payload["text"]), ["group:all"])


def _submit_while_held(
    embedder: HeldEmbedder, groups: list[tuple[int, list[RawItem]]]
) -> tuple[EmbedAhead, list[Future[Prepared]]]:
    """Submit the first group, wait until the embedder holds it, queue the rest behind it."""
    ahead = EmbedAhead(VectorStage(embedder), _map).__enter__()
    futures = [ahead.submit(*groups[0], stored={})]
    assert embedder.started.wait(10)
    futures += [ahead.submit(page, items, stored={}) for page, items in groups[1:]]
    embedder.release.set()
    return ahead, futures


def _results_while_held(embedder: HeldEmbedder, groups: list[tuple[int, list[RawItem]]]) -> list[Prepared]:
    """As ``_submit_while_held``, then every group's result, in order (the thread closed after)."""
    ahead, futures = _submit_while_held(embedder, groups)
    try:
        return [f.result(timeout=30) for f in futures]
    finally:
        ahead.close()


def test_groups_of_one_page_queued_behind_a_slow_call_are_embedded_in_one_call() -> None:
    embedder = HeldEmbedder()
    # Page 1 has three groups, page 2 two: behind the held call, page 1's two queued groups share a call,
    # page 2's two share the next.
    groups = [
        (1, [_raw(0, "first group alone")]),
        (1, [_raw(1, "second group text"), _raw(2, "another paragraph")]),
        (1, [_raw(3, "third group text")]),
        (2, [_raw(4, "next page text"), _raw(5, "last paragraph")]),
        (2, [_raw(6, "next page, second group")]),
    ]
    results = _results_while_held(embedder, groups)
    assert len(groups) - 1 <= COALESCE
    stage = VectorStage(HashEmbedder())

    def texts(part: list[tuple[int, list[RawItem]]]) -> list[str]:
        return sorted(c.text for _, items in part for i in items for c in stage.chunks_of(_map(i)))

    assert [sorted(call) for call in embedder.calls] == [texts(groups[:1]), texts(groups[1:3]), texts(groups[3:])]
    for (_, items), prepared in zip(groups, results, strict=True):
        # Each group gets its own entities, mapped in order, and only their cuts ...
        assert [e.source_entity_id for e in prepared.mapped if isinstance(e, Entity)] == [
            i.source_entity_id for i in items
        ]
        assert set(prepared.ready.cut) == {("ticket", i.source_entity_id) for i in items}
        # ... and a vector for every chunk of them.
        for item in items:
            for chunk in stage.chunks_of(_map(item)):
                assert chunk.content_hash in prepared.ready.vectors


def test_a_failed_call_fails_its_own_page_and_no_other() -> None:
    embedder = HeldEmbedder()
    embedder.fail_on = "poison"
    groups = [
        (1, [_raw(0, "held call")]),
        (1, [_raw(1, "malformed")]),
        (1, [_raw(2, "same page as the held call")]),
        (2, [_raw(3, "poison pill")]),
        (2, [_raw(4, "innocent bystander")]),
    ]
    ahead, futures = _submit_while_held(embedder, groups)
    try:
        first = futures[0].result(timeout=30)
        # A malformed item is that item's outcome, not the group's failure.
        malformed = futures[1].result(timeout=30)
        same_page = futures[2].result(timeout=30)
        with pytest.raises(RuntimeError, match="gave up"):
            futures[3].result(timeout=30)
        with pytest.raises(RuntimeError, match="gave up"):
            futures[4].result(timeout=30)
    finally:
        ahead.close()
    assert [e.source_entity_id for e in first.mapped if isinstance(e, Entity)] == ["0"]
    assert len(malformed.mapped) == 1 and isinstance(malformed.mapped[0], MalformedPayload)
    assert set(same_page.ready.cut) == {("ticket", "2")}
    assert len(embedder.calls) == 3  # the held call, page 1's queued groups, page 2's


def test_a_record_twice_on_one_page_is_cut_per_version() -> None:
    embedder = HeldEmbedder()
    groups = [
        (1, [_raw(0, "held call")]),
        (1, [_raw(7, "version one")]),
        (1, [_raw(7, "version two")]),
    ]
    results = _results_while_held(embedder, groups)
    stage = VectorStage(HashEmbedder())
    for prepared, text in ((results[1], "version one"), (results[2], "version two")):
        want = [c.content_hash for c in stage.chunks_of(_map(_raw(7, text)))]
        assert [c.content_hash for c in prepared.ready.cut[("ticket", "7")]] == want
    assert len(embedder.calls) == 3  # the held call, then one call per version


def test_stored_chunks_are_not_embedded_again() -> None:
    embedder = HeldEmbedder()
    stage = VectorStage(HashEmbedder())
    unchanged = _map(_raw(1, "stored already"))
    stored_chunks: list[tuple[str, str | None]] = [
        (c.content_hash, embedder.model_name) for c in stage.chunks_of(unchanged)
    ]
    ahead = EmbedAhead(VectorStage(embedder), _map).__enter__()
    embedder.release.set()
    try:
        done = ahead.submit(1, [_raw(1, "stored already")], {("ticket", "1"): Stored("other", False, stored_chunks)})
        prepared = done.result(timeout=30)
    finally:
        ahead.close()
    assert embedder.calls == [] and prepared.ready.vectors == {}


def test_a_preview_s_vectors_serve_its_page_and_its_failure_fails_only_that_page() -> None:
    """Decision 107: a connector's Preview reaches the thread as groups of the page it announces, whose
    futures nobody reads. The page's own groups then embed nothing the preview embedded; a preview whose
    call failed leaves them to ask again, and the failure is theirs, the page before untouched."""
    embedder = HeldEmbedder()
    embedder.release.set()
    ahead = EmbedAhead(VectorStage(embedder), _map).__enter__()
    try:
        first = [_raw(n, f"first page, item {n}") for n in range(1, 5)]
        ahead.submit(0, first, stored={})  # the preview
        own = ahead.submit(0, first, stored={}).result(timeout=30)
        assert len(embedder.calls) == 1
        assert set(own.ready.cut) == {("ticket", str(n)) for n in range(1, 5)}
        needed = {c.content_hash for chunks in own.ready.cut.values() for c in chunks}
        assert needed <= set(own.ready.vectors)

        embedder.fail_on = "second page, item 7"
        second = [_raw(n, f"second page, item {n}") for n in range(5, 9)]
        ahead.submit(1, second, stored={})  # fails, unread
        failed = ahead.submit(1, second, stored={})
        with pytest.raises(RuntimeError, match="gave up"):
            failed.result(timeout=30)
        assert len(embedder.calls) == 3 and all("second page, item 7" in " ".join(c) for c in embedder.calls[1:])
    finally:
        ahead.close()


def test_a_page_s_last_groups_go_before_a_preview_of_the_next_page_queued_earlier() -> None:
    """Decision 138: a preview of the page ahead reaches the thread as solo groups, each embedded in a call
    of its own and after every group of the page before, whenever that one was queued. The page before's
    last groups, which decide when it commits, then wait for one group's call, not for the whole preview."""
    embedder = HeldEmbedder()
    ahead = EmbedAhead(VectorStage(embedder), _map).__enter__()
    try:
        ahead.submit(1, [_raw(0, "held call")], stored={})
        assert embedder.started.wait(10)
        preview = [ahead.submit(2, [_raw(n, f"next page, item {n}")], stored={}, solo=True) for n in (10, 11, 12)]
        last = ahead.submit(1, [_raw(1, "this page's last group")], stored={})
        embedder.release.set()
        last.result(timeout=30)
        for f in preview:
            f.result(timeout=30)
    finally:
        ahead.close()
    stage = VectorStage(HashEmbedder())

    def texts(n: int, text: str) -> list[str]:
        return sorted(c.text for c in stage.chunks_of(_map(_raw(n, text))))

    assert [sorted(call) for call in embedder.calls] == [
        texts(0, "held call"),
        texts(1, "this page's last group"),
        *(texts(n, f"next page, item {n}") for n in (10, 11, 12)),
    ]


def test_a_preview_ahead_s_vectors_serve_its_page_after_the_page_before_s_last_groups() -> None:
    """Decision 138: the next page's preview is embedded, then the page before's last group, then the next
    page's own groups: those find the preview's vectors (kept per page) and embed nothing again."""
    embedder = HeldEmbedder()
    embedder.release.set()
    ahead = EmbedAhead(VectorStage(embedder), _map).__enter__()
    try:
        following = [_raw(n, f"next page, item {n}") for n in (10, 11)]
        ahead.submit(2, following, stored={}, solo=True).result(timeout=30)  # the preview ahead
        ahead.submit(1, [_raw(1, "this page's last group")], stored={}).result(timeout=30)
        own = ahead.submit(2, following, stored={}).result(timeout=30)
    finally:
        ahead.close()
    assert len(embedder.calls) == 2  # the preview's, the page before's; none for the page's own group
    needed = {c.content_hash for chunks in own.ready.cut.values() for c in chunks}
    assert needed and needed <= set(own.ready.vectors)


def test_closing_an_idle_thread_does_not_wait_out_its_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    # close() wakes the idle thread instead of leaving it to notice the stop at its next poll: with a poll
    # longer than the join's timeout, the thread has still ended when close() returns. (It used to cost
    # every run with the embedding stage up to one poll, 0.2 s, at its end.)
    import app.pipeline.ahead as ahead_module

    monkeypatch.setattr(ahead_module, "POLL", 3600.0)
    ahead = EmbedAhead(VectorStage(HashEmbedder()), _map, join_timeout=2.0).__enter__()
    done = ahead.submit(1, [_raw(0, "one group")], stored={}).result(timeout=30)
    assert [e.source_entity_id for e in done.mapped if isinstance(e, Entity)] == ["0"]
    ahead.close()
    assert ahead.stopped
