"""The embedding stage (app/pipeline/ahead.py): items mapped, cut and embedded on their own thread ahead of
their page's transaction (issue 15 §1), against the real pipeline, PostgreSQL and the Jira emulator.

What it must not change: the chunks and vectors stored, the order pages commit in, and the run's
failure when the embedder gives up (pages before it committed, the run failed with a reason). What it
must handle: a read-ahead made stale by a later commit (the transaction embeds what is missing).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest

from app.digest import sha256_hex
from app.embedding import EmbeddingError, Vectors
from app.pipeline.ahead import GROUP, EmbedAhead
from app.pipeline.load import Batch, load_batch
from app.pipeline.run import execute_run
from app.queries import chunks as cq
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from app.vector.stage import VectorStage
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.jira.client import JiraConnector
from tests.sync.conftest import Jira, JiraFactory
from tests.sync.connectors_conftest import TOKEN, served
from tests.sync.test_overlap import committed_order, source_order
from tests.vector.conftest import add_source, entity, plain_source
from tests.vector.fakes import CountingEmbedder, HashEmbedder

ISSUES = 250  # three search pages of 100: the stage prepares page 2 while page 1 commits


def stored_chunks(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[str, int, str, str, str]]:
    rows = probe.execute(
        "select e.source_entity_id, c.ordinal, c.content_hash, c.embedding::text, c.embedding_model"
        " from entity_chunks c join entities e on e.id = c.entity_id where e.source_id = %s"
        " order by 1, 2",
        (source_id,),
    )
    return [tuple(r) for r in rows.fetchall()]


class ThreadRecorder(CountingEmbedder):
    """Records the thread of every embed call (the stage's own thread, or the run's in a transaction)."""

    def __init__(self) -> None:
        super().__init__(HashEmbedder())
        self.threads: set[str] = set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.threads.add(threading.current_thread().name)
        return super().embed(texts)


class Rejects(CountingEmbedder):
    """Raises, as an embedder whose retries ran out does, on every call asking for a text with ``marker``
    (each time: the stage may ask for a page's texts ahead of it, decision 107, and again with it)."""

    def __init__(self, marker: str) -> None:
        super().__init__(HashEmbedder())
        self.marker = marker

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(self.marker in t for t in texts):
            self.calls += 1
            raise EmbeddingError("embeddings endpoint answered 400: 'input too long'")
        return super().embed(texts)


class RightsAtFirstCall(CountingEmbedder):
    """Records how many project role look-ups (the second round of a Jira page's rights) the emulator had
    answered when the first embedding call came."""

    def __init__(self, jira: Jira) -> None:
        super().__init__(HashEmbedder())
        self.jira = jira
        self.roles_then: int | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.roles_then is None:
            self.roles_then = role_lookups(self.jira)
        return super().embed(texts)


def rights_of(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[str, list[str]]]:
    """Each entity's id and principals, in id order."""
    rights = "select source_entity_id, acl_principals from entities where source_id = %s order by 1"
    return probe.execute(rights, (source_id,)).fetchall()


def role_lookups(jira: Jira) -> int:
    routes: dict[str, int] = jira.stats()["by_route"]
    return sum(n for route, n in routes.items() if "/role" in route)


def run(
    conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, stage: VectorStage | None, prefetch: int
) -> Any:
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    outcome = execute_run(conn, run_id, worker_id="ahead-test", keyring=keyring, chunks=stage, prefetch=prefetch)
    return run_id, outcome


def entities_without_chunks(probe: psycopg.Connection[Any], source_id: int) -> int:
    row = probe.execute(
        "select count(*) from entities e where e.source_id = %s"
        " and not exists (select 1 from entity_chunks c where c.entity_id = e.id)",
        (source_id,),
    ).fetchone()
    return int(row[0]) if row else -1


def test_embedding_ahead_stores_what_the_sequential_loop_stores_in_the_same_order(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(ISSUES)
    expected = source_order(jira)
    sequential = add_source(conn, keyring, jira, name="sequential")
    ahead = add_source(conn, keyring, jira, name="ahead")
    in_transaction, on_thread = ThreadRecorder(), ThreadRecorder()

    _, first = run(conn, keyring, sequential, VectorStage(in_transaction), prefetch=0)
    run_id, second = run(conn, keyring, ahead, VectorStage(on_thread), prefetch=3)

    assert (first.state, second.state) == ("succeeded", "succeeded")
    assert second.done == ISSUES
    assert committed_order(probe, ahead) == expected
    # Same chunks, hashes and vectors, and each distinct text embedded once per page as before.
    assert [r[1:] for r in stored_chunks(probe, ahead)] == [r[1:] for r in stored_chunks(probe, sequential)]
    assert sorted(on_thread.texts) == sorted(in_transaction.texts)
    # The ahead run embedded on the stage's thread only, never inside a page transaction.
    assert on_thread.threads == {f"run-{run_id}-embed"}
    assert in_transaction.threads == {threading.current_thread().name}


def test_an_embedder_that_gives_up_on_the_stage_thread_fails_the_run_after_the_pages_before_it(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    jira = jira_factory(ISSUES)
    # An issue the embedder rejects; the change makes it the source's last, on the third page (200-249).
    jira.patch(jira.key(7), summary="rejected-by-the-embedder")
    expected = source_order(jira)
    assert expected.index(jira.id(7)) >= 200
    source_id = add_source(conn, keyring, jira)
    embedder = Rejects("rejected-by-the-embedder")

    run_id, outcome = run(conn, keyring, source_id, VectorStage(embedder), prefetch=3)

    assert outcome.state == "failed"
    assert outcome.detail is not None and outcome.detail.startswith("embedder failed: ")
    assert "answered 400" in outcome.detail
    assert committed_order(probe, source_id) == expected[:200]
    saved = rq.get_run(probe, id=run_id)
    assert saved is not None and (saved.state, saved.entities_done) == ("failed", 200)
    assert saved.error_detail is not None and "embedder failed" in saved.error_detail
    assert entities_without_chunks(probe, source_id) == 0


def test_a_page_s_text_is_embedded_while_its_rights_are_read_and_only_once(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 107: a Jira page whose rights take requests is announced by a Preview; the stage embeds its
    text while the connector reads the rights, and the page's own groups then find those vectors. At 300 ms
    a request the rights take two rounds after the search page (schemes, then roles and leads). What the
    page's items store is read once, for the preview (decision 126)."""
    jira = jira_factory(40)  # one search page
    jira.fault(latency_ms=300)
    sequential = add_source(conn, keyring, jira, name="sequential")
    ahead_source = add_source(conn, keyring, jira, name="ahead")
    embedder = RightsAtFirstCall(jira)
    _, first = run(conn, keyring, sequential, VectorStage(CountingEmbedder(HashEmbedder())), prefetch=0)
    reads: list[int] = []
    real_read = cq.list_stored_hashes_by_identity

    def counted(c: psycopg.Connection[Any], *, rows: Any, source_id: int) -> Any:
        reads.append(len(rows))
        return real_read(c, rows=rows, source_id=source_id)

    monkeypatch.setattr(cq, "list_stored_hashes_by_identity", counted)

    _, second = run(conn, keyring, ahead_source, VectorStage(embedder), prefetch=3)

    assert reads == [40]  # the preview's 40 issues at once; the page's three groups read nothing more

    assert (first.state, second.state, second.done) == ("succeeded", "succeeded", 40)
    # The first call came before the page's role look-ups were answered (without the preview it waits for
    # all of them: the page's items are emitted with their rights).
    assert embedder.roles_then is not None and role_lookups(jira) > embedder.roles_then
    # No text twice; the rows, rights and chunks are the sequential run's.
    assert len(embedder.texts) == len(set(embedder.texts))
    assert [r[1:] for r in stored_chunks(probe, ahead_source)] == [r[1:] for r in stored_chunks(probe, sequential)]
    loaded = rights_of(probe, ahead_source)
    assert loaded == rights_of(probe, sequential)
    assert all(principals for _, principals in loaded)  # real rights, not the preview's (visible to nobody)


def test_the_next_search_page_is_embedded_while_the_page_before_waits_on_the_source(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 138: against a source slow enough for the listing to be asked ahead, the second search page's
    issues reach the embedding thread, as solo groups of that page, while the first page's items still wait on
    the source, before any group of the second page's own; its own groups then embed nothing again. The rows,
    rights and chunks are those of a run with neither read-ahead nor previews."""
    jira = jira_factory(150)  # two search pages of the connector's 100
    jira.fault(latency_ms=60)  # above AHEAD_AFTER: the second search page is asked ahead
    sequential = add_source(conn, keyring, jira, name="sequential")
    ahead_source = add_source(conn, keyring, jira, name="ahead")
    _, first = run(conn, keyring, sequential, VectorStage(CountingEmbedder(HashEmbedder())), prefetch=0)
    submitted: list[tuple[int, bool, int]] = []  # page, solo, items
    real_submit = EmbedAhead.submit

    def spied(self: EmbedAhead, page: int, items: Sequence[Any], stored: Any, *, solo: bool = False) -> Any:
        submitted.append((page, solo, len(items)))
        return real_submit(self, page, items, stored, solo=solo)

    monkeypatch.setattr(EmbedAhead, "submit", spied)
    embedder = CountingEmbedder(HashEmbedder())
    _, second = run(conn, keyring, ahead_source, VectorStage(embedder), prefetch=3)

    assert (first.state, second.state, second.done) == ("succeeded", "succeeded", 150)
    announced = [n for page, solo, n in submitted if page == 1 and solo]
    assert sum(announced) == 50  # the whole second page, announced ahead
    first_solo = next(i for i, (page, solo, _) in enumerate(submitted) if page == 1 and solo)
    first_own = next(i for i, (page, solo, _) in enumerate(submitted) if page == 1 and not solo)
    assert first_solo < first_own
    # Announced while the first page's items still came: some of its own groups follow the announcement.
    assert any(page == 0 and not solo for page, solo, _ in submitted[first_solo:])
    # No text twice; the rows, rights and chunks are the sequential run's.
    assert len(embedder.texts) == len(set(embedder.texts))
    assert [r[1:] for r in stored_chunks(probe, ahead_source)] == [r[1:] for r in stored_chunks(probe, sequential)]
    assert rights_of(probe, ahead_source) == rights_of(probe, sequential)


def test_a_run_without_the_embedding_stage_has_its_connector_build_no_preview(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 138: previews serve the embedding stage alone; a run without it (or without read-ahead) tells
    the connector so (``SourceConfig.previews``), which then spends nothing on them, though its first page's
    rights take requests and its second search page is asked ahead."""
    jira = jira_factory(150)
    jira.fault(latency_ms=60)
    built: list[int] = []
    real = JiraConnector._preview_items

    def counted(self: JiraConnector, issues: Sequence[Any], *, neighbour: bool) -> Any:
        built.append(len(issues))
        return real(self, issues, neighbour=neighbour)

    monkeypatch.setattr(JiraConnector, "_preview_items", counted)
    for n, (stage, prefetch) in enumerate(((None, 3), (VectorStage(CountingEmbedder(HashEmbedder())), 0))):
        _, outcome = run(conn, keyring, add_source(conn, keyring, jira, name=f"plain-{n}"), stage, prefetch)
        assert (outcome.state, outcome.done) == ("succeeded", 150)
    assert built == []
    _, outcome = run(conn, keyring, add_source(conn, keyring, jira, name="embedding"), VectorStage(HashEmbedder()), 3)
    assert outcome.state == "succeeded" and sum(built) >= 150  # the first page's own, the second announced


def test_a_read_ahead_made_stale_by_a_later_commit_is_completed_in_the_transaction(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """The same entity on two pages in flight: page N+1 was prepared while the entity still stored text A,
    page N then committed text B, and page N+1 brings A back. Its ready vectors lack A's texts (they were
    stored when it was read); the transaction must notice and embed them."""
    source_id = plain_source(conn, keyring)
    embedder = CountingEmbedder(HashEmbedder())
    stage = VectorStage(embedder)
    text_a = "First paragraph of A.\n\nSecond paragraph of A."
    text_b = "Something else entirely."
    a, b = entity(1, text_a, ["group:all"]), entity(1, text_b, ["group:all"])

    def load(e: Any, ready: Any = None) -> None:
        with conn.transaction():
            load_batch(conn, source_id=source_id, run_id=0, batch=Batch([e]), record_seen=False, chunks=stage,
                       ready=ready)  # fmt: skip

    try:
        load(a)
        stored_a = [(r[2], r[4]) for r in stored_chunks(probe, source_id)]
        ready = stage.prepare([(a, stored_a)])  # read while A is stored: nothing to embed
        assert ready.vectors == {}
        load(b)
        embedder.reset()
        load(a, ready)

        assert embedder.calls == 1
        chunks = stage.chunks_of(a)
        assert sorted(embedder.texts) == sorted(c.text for c in chunks)
        assert [r[2] for r in stored_chunks(probe, source_id)] == [c.content_hash for c in chunks]
    finally:
        probe.execute("delete from entities where source_id = %s", (source_id,))


def test_an_items_scoped_run_embeds_its_items_ahead_too(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    """A DLQ retry or webhook run fetches named items in pages of 50: their groups go to the stage too."""
    jira = jira_factory(60)
    expected = source_order(jira)
    source_id = add_source(conn, keyring, jira)
    embedder = ThreadRecorder()
    items = [{"source_type": "ticket", "source_entity_id": sid} for sid in expected]
    run_id = start_run(conn, source_id, mode="incremental", trigger="manual", scope={"kind": "items", "items": items})

    outcome = execute_run(conn, run_id, worker_id="ahead-test", keyring=keyring, chunks=VectorStage(embedder))

    assert (outcome.state, outcome.done, outcome.errors) == ("succeeded", 60, 0)
    assert sorted(committed_order(probe, source_id)) == sorted(expected)
    assert embedder.threads == {f"run-{run_id}-embed"}
    # Pages of 50 and 10 items, groups of 16, 16, 16, 2 and 10: page 1's in one to four calls (as many
    # as queued together), page 2's in one.
    assert 2 <= embedder.calls <= 5
    assert entities_without_chunks(probe, source_id) == 0


class FirstCall(CountingEmbedder):
    """Records how many texts each embedding call asked for, in order."""

    def __init__(self) -> None:
        super().__init__(HashEmbedder())
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.sizes.append(len(texts))
        return super().embed(texts)


def test_an_idle_embedder_is_handed_what_came_instead_of_waiting_for_a_whole_group(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """Confluence reads each page's attachments and its path's rights one request after another, so at a
    run's start a group of 16 pages takes seconds to gather against a real site. While the embedding
    thread has nothing in hand, the producer hands it what came in ``EARLY_AFTER`` seconds
    (app/pipeline/ahead.py); what is stored is what the sequential loop stores."""
    # 80 pages in four spaces: each space's listing (one page of up to 50) holds 20, more than a group.
    with served(ConfluenceEmulator(pages=80, seed=5, token=TOKEN)) as confluence:
        # 50 ms a request: a group's pages then take well over EARLY_AFTER to come (the first call holds 3).
        # At 20 ms the fan-out's first window of 16 reads lands at once since decision 129 resolved most title
        # links without a request (each had been a round trip in turn), and the group filled first.
        confluence.fault(latency_ms=50)
        url = confluence.base_url + "/wiki"
        sequential, ahead_source = (
            create_source(conn, keyring, NewSource(name=n, connector_type="confluence", base_url=url, credential=TOKEN))
            for n in ("sequential", "ahead")
        )
        counted = FirstCall()
        _, first = run(conn, keyring, sequential, VectorStage(CountingEmbedder(HashEmbedder())), prefetch=0)
        _, second = run(conn, keyring, ahead_source, VectorStage(counted), prefetch=3)

    assert (first.state, second.state) == ("succeeded", "succeeded")
    assert second.done == first.done == 80
    # The first call embedded the texts of the pages read by then (one to a few chunks each), not of GROUP.
    first_pages = probe.execute(
        "select count(distinct c.entity_id) from entity_chunks c join entities e on e.id = c.entity_id"
        " where e.source_id = %s and c.content_hash = any(%s)",
        (ahead_source, [sha256_hex(t.encode()) for t in counted.texts[: counted.sizes[0]]]),
    ).fetchone()
    assert first_pages is not None and 0 < first_pages[0] < GROUP
    assert [r[1:] for r in stored_chunks(probe, ahead_source)] == [r[1:] for r in stored_chunks(probe, sequential)]


def test_a_group_waiting_while_the_source_stalls_goes_to_an_idle_embedder_without_the_next_item(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """Decision 132: the producer used to look at a waiting group only when the next item came, so while
    the source took its time over one page the pages before it sat in the group and the embedder idled.
    The connector now runs on a thread of its own, and the producer, waiting for it, hands the group over
    once it is ``EARLY_AFTER`` old and the embedder idle. One Confluence page answers 1 s late, the others
    at once: the first embedding call holds the pages read before it, and not it."""
    with served(ConfluenceEmulator(pages=40, seed=5, token=TOKEN)) as confluence:
        url = confluence.base_url + "/wiki"
        sequential, ahead_source = (
            create_source(conn, keyring, NewSource(name=n, connector_type="confluence", base_url=url, credential=TOKEN))
            for n in ("sequential", "ahead")
        )
        _, first = run(conn, keyring, sequential, VectorStage(CountingEmbedder(HashEmbedder())), prefetch=0)
        # Entities are written in the order the connector emits them: the fifth page read is the slow one.
        pages = probe.execute(
            "select source_entity_id from entities where source_id = %s and source_type = 'page' order by id",
            (sequential,),
        ).fetchall()
        slow = pages[4][0]
        confluence.fault(latency_ms=1000, keys=[slow])
        counted = FirstCall()
        _, second = run(conn, keyring, ahead_source, VectorStage(counted), prefetch=3)

    assert (first.state, second.state) == ("succeeded", "succeeded")
    assert second.done == first.done
    hashes = [sha256_hex(t.encode()) for t in counted.texts[: counted.sizes[0]]]
    # A chunk's text starts with its entity's title, so each text names the page it came from.
    holders = {
        r[0]
        for r in probe.execute(
            "select distinct e.source_entity_id from entity_chunks c join entities e on e.id = c.entity_id"
            " where e.source_id = %s and e.source_type = 'page' and c.content_hash = any(%s)",
            (ahead_source, hashes),
        ).fetchall()
    }
    read_before = {r[0] for r in pages[:4]}
    assert holders and holders <= read_before, (holders, slow)
    assert [r[1:] for r in stored_chunks(probe, ahead_source)] == [r[1:] for r in stored_chunks(probe, sequential)]
