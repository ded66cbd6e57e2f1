"""Fetching ahead of the load (issue 15 §1) under bad input: a source that slows down mid-run, a page that
fails after later pages were fetched, an embedder that stalls.

Each test checks the three promises: pages commit in the source's order (entity ids are a bigserial,
so ``order by id`` is the commit order and must equal the order a bare ``enumerate()`` sees), no item is
lost or loaded twice (``entities_done`` equals the source's count, one row each), and the read-ahead is
bounded: after the k-th commit the emulator has served at most k + prefetch + 3 search pages (the page
mapped on the run's thread while page k was written behind it, decision 122; the ``prefetch`` queued; the
one the producer is building; the one it asked for ahead, decision 127).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
import pytest

from app.db.connect import connect
from app.embedding import get_embedder
from app.pipeline.run import DEFAULT_PREFETCH, ConnectionLost, Progress, execute_run
from app.queries import runs as rq
from app.registry import get_spec
from app.secrets import Keyring
from app.services.sources import start_run
from app.vector.stage import SCHEMA_DIMENSION, VectorStage
from connectors.base import CallStats, RawItem, SourceConfig
from tests.sync.conftest import TOKEN, Jira, JiraFactory, add_source, scalar

ISSUES = 600  # six search pages of 100
# Pages the source may have served beyond those committed: one mapped on the run's thread while the last
# committed one was written (decision 122), DEFAULT_PREFETCH in the queue, one the producer is building and
# the one that page asked for ahead (decision 127).
IN_FLIGHT = 1 + DEFAULT_PREFETCH + 1 + 1


def source_order(jira: Jira) -> list[str]:
    """The ids a bare enumerate() of the whole source yields, in order."""
    connector = get_spec("jira").create(SourceConfig(1, jira.base_url, TOKEN, "all", (), {}), CallStats())
    try:
        return [e.source_entity_id for e in connector.enumerate(None, None) if isinstance(e, RawItem)]
    finally:
        connector.close()


def search_pages(jira: Jira) -> int:
    """Issue search pages the emulator has served (the approximate count is not a page)."""
    routes: dict[str, int] = jira.stats()["by_route"]
    return sum(n for route, n in routes.items() if "search" in route and "approximate" not in route)


def committed_order(probe: psycopg.Connection[Any], source_id: int) -> list[str]:
    rows = probe.execute("select source_entity_id from entities where source_id = %s order by id", (source_id,))
    return [r[0] for r in rows.fetchall()]


class ReadAhead:
    """on_progress: after each commit, how many search pages the source had served by then."""

    def __init__(self, jira: Jira, pages_before: int) -> None:
        self.jira = jira
        self.before = pages_before
        self.seen: list[tuple[int, int]] = []  # (pages committed, search pages served)

    def __call__(self, progress: Progress) -> None:
        self.seen.append((len(self.seen) + 1, search_pages(self.jira) - self.before))

    def assert_bounded(self) -> None:
        assert self.seen, "no page was committed"
        for committed, served in self.seen:
            assert served <= committed + IN_FLIGHT, (committed, served)


def run_once(
    conn: psycopg.Connection[Any], run_id: int, keyring: Keyring, on_progress: Any = None, **kwargs: Any
) -> Any:
    return execute_run(conn, run_id, worker_id="overlap-test", keyring=keyring, on_progress=on_progress, **kwargs)


def test_a_source_that_slows_down_mid_run_commits_every_page_once_in_order(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(ISSUES)
    expected = source_order(jira)
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    ahead = ReadAhead(jira, search_pages(jira))

    def slow_down(progress: Progress) -> None:
        ahead(progress)
        if len(ahead.seen) == 1:
            jira.fault(latency_ms=150)  # every later request of the source takes 150 ms

    outcome = run_once(conn, run_id, keyring, slow_down)

    assert (outcome.state, outcome.done, outcome.errors) == ("succeeded", ISSUES, 0)
    assert committed_order(probe, source_id) == expected
    ahead.assert_bounded()
    assert scalar(probe, "select entities_done from sync_runs where id = %s", (run_id,)) == ISSUES


def test_a_page_that_fails_after_later_pages_were_fetched_resumes_exactly(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    jira = jira_factory(ISSUES)
    expected = source_order(jira)
    source_id = add_source(conn, keyring, jira)
    # The second page's first row takes its time (the producer meanwhile fetches the pages after it) and
    # then its own backend is terminated: a real database failure in the middle of that page's
    # transaction. A sequence is not transactional, so the fault fires once, on the 101st row ever.
    probe.execute("create sequence overlap_rows")
    probe.execute(
        """
        create function overlap_fault() returns trigger language plpgsql as $$
        begin
          if nextval('overlap_rows') = 101 then
            perform pg_sleep(1.5);
            perform pg_terminate_backend(pg_backend_pid());
            perform pg_sleep(10);
          end if;
          return new;
        end $$
        """
    )
    probe.execute(
        "create trigger overlap_fault before insert on entities for each row execute function overlap_fault()"
    )
    try:
        run_id = start_run(conn, source_id, mode="full", trigger="manual")
        ahead = ReadAhead(jira, search_pages(jira))

        with pytest.raises(ConnectionLost) as lost:
            run_once(conn, run_id, keyring, ahead)

        # Pages after the failed one had been fetched, none of them was committed, and the failed page
        # left nothing: exactly the first page is in, and the checkpoint stands after it.
        assert search_pages(jira) - ahead.before > 2
        ahead.assert_bounded()
        assert committed_order(probe, source_id) == expected[:100]
        assert scalar(probe, "select entities_done from sync_runs where id = %s", (run_id,)) == 100

        with connect(fresh_db_url, autocommit=True) as again:
            assert lost.value.lease.release(again)
            outcome = run_once(again, run_id, keyring)
    finally:
        probe.execute("drop trigger if exists overlap_fault on entities")
        probe.execute("drop function if exists overlap_fault()")
        probe.execute("drop sequence if exists overlap_rows")

    assert (outcome.state, outcome.done) == ("succeeded", ISSUES)
    assert committed_order(probe, source_id) == expected
    run = rq.get_run(probe, id=run_id)
    assert run is not None and (run.entities_done, run.deliveries) == (ISSUES, 2)


@contextmanager
def slow_then_refused(probe: psycopg.Connection[Any], slow: str, seconds: float, refused: str) -> Iterator[None]:
    """While open, inserting entity ``slow`` takes ``seconds`` (the run's thread maps on meanwhile) and
    inserting ``refused`` raises inside its page's transaction (a row the database refuses)."""
    probe.execute(
        """
        create function overlap_refuse() returns trigger language plpgsql as $$
        begin
          if new.source_entity_id = tg_argv[0] then
            perform pg_sleep(tg_argv[1]::float);
          end if;
          if new.source_entity_id = tg_argv[2] then
            raise exception 'refused % for the test', new.source_entity_id;
          end if;
          return new;
        end $$
        """
    )
    probe.execute(
        "create trigger overlap_refuse before insert on entities for each row "
        f"execute function overlap_refuse('{slow}', '{seconds}', '{refused}')"
    )
    try:
        yield
    finally:
        probe.execute("drop trigger if exists overlap_refuse on entities")
        probe.execute("drop function if exists overlap_refuse()")


def test_a_page_whose_write_fails_ends_the_run_as_the_sequential_loop_does(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    # The second page's write fails inside its transaction (a row the database refuses) while the run's
    # thread has already mapped the third (decision 122: pages are written behind the mapping). Written
    # behind or not, the run must end the same: the first page in, nothing of the failed page or of the one
    # mapped after it, the same reason and counters as the sequential loop (prefetch 0) reports.
    jira = jira_factory(ISSUES)
    expected = source_order(jira)
    refused = expected[100]
    ended: dict[int, tuple[Any, ...]] = {}
    with slow_then_refused(probe, refused, 0.5, refused):
        for prefetch in (0, DEFAULT_PREFETCH):
            source_id = add_source(conn, keyring, jira, name=f"jira-{prefetch}")
            run_id = start_run(conn, source_id, mode="full", trigger="manual")
            outcome = run_once(conn, run_id, keyring, prefetch=prefetch)
            run = rq.get_run(probe, id=run_id)
            assert run is not None
            ended[prefetch] = (
                outcome.state,
                outcome.done,
                outcome.errors,
                run.state,
                run.entities_done,
                run.error_detail,
                committed_order(probe, source_id),
            )

    state, _, _, run_state, _, detail, committed = ended[0]
    assert (state, run_state) == ("failed", "failed")
    assert detail is not None and f"refused {refused} for the test" in detail
    assert committed == expected[:100]
    assert ended[DEFAULT_PREFETCH] == ended[0]


def test_a_joined_write_that_fails_commits_none_of_its_pages_and_counts_up_to_its_first(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    # The first page's write takes 2 s, so the pages mapped meanwhile join into one waiting write
    # (decision 142); a row of the third page is refused, so that joined write fails as a whole. The run
    # keeps the first page, none of the joined ones, and reports the counters of the first page it did not
    # commit (200), not those of the last page that joined (decision 144).
    jira = jira_factory(ISSUES)
    expected = source_order(jira)
    refused = expected[250]
    with slow_then_refused(probe, expected[0], 2.0, refused):
        source_id = add_source(conn, keyring, jira)
        run_id = start_run(conn, source_id, mode="full", trigger="manual")
        outcome = run_once(conn, run_id, keyring)
    run = rq.get_run(probe, id=run_id)
    assert run is not None and run.error_detail is not None
    assert f"refused {refused} for the test" in run.error_detail
    assert outcome.write_joined >= 1
    assert (outcome.state, run.state) == ("failed", "failed")
    assert committed_order(probe, source_id) == expected[:100]
    assert (outcome.done, run.entities_done) == (200, 200)


# ---------------------------------------------------------------- an embedder that stalls


class StallingEmbeddings(ThreadingHTTPServer):
    """An OpenAI-compatible ``/v1/embeddings`` whose first answer waits ``stall`` seconds; while it
    waits it records how many search pages the Jira emulator served (the read-ahead under a stalled
    consumer). Production config names such a server through ``HARVESTER_EMBEDDER=openai``."""

    daemon_threads = True

    def __init__(self, jira: Jira, stall: float) -> None:
        super().__init__(("127.0.0.1", 0), _EmbeddingsHandler)
        self.jira = jira
        self.stall = stall
        self.requests = 0
        self.pages_during_stall: int | None = None
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    server: StallingEmbeddings

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests += 1
            first = self.server.requests == 1
        if first:
            time.sleep(self.server.stall)
            self.server.pages_during_stall = search_pages(self.server.jira)
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(body["input"])]
        raw = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 16.0 for i in range(SCHEMA_DIMENSION)]


@pytest.fixture()
def stalling(jira_factory: JiraFactory) -> Iterator[StallingEmbeddings]:
    jira = jira_factory(ISSUES)
    server = StallingEmbeddings(jira, stall=3.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_an_embedder_that_stalls_holds_the_read_ahead_and_loses_nothing(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, stalling: StallingEmbeddings
) -> None:
    jira = stalling.jira
    expected = source_order(jira)
    source_id = add_source(conn, keyring, jira)
    settings = {"embedder": "openai", "url": stalling.url, "model": "stall-test", "dimension": SCHEMA_DIMENSION}
    stage = VectorStage(get_embedder(settings))
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    before = search_pages(jira)
    ahead = ReadAhead(jira, before)

    outcome = run_once(conn, run_id, keyring, ahead, chunks=stage)

    assert (outcome.state, outcome.done, outcome.errors) == ("succeeded", ISSUES, 0)
    # The run's thread waited for the first page's vectors through most of the 3 s stall, and says so.
    assert outcome.vector_wait >= 1.5
    # While the first page's embedding stalled, the producer filled the queue and stopped.
    assert stalling.pages_during_stall is not None
    assert 1 < stalling.pages_during_stall - before <= 1 + IN_FLIGHT
    ahead.assert_bounded()
    assert committed_order(probe, source_id) == expected
    without_chunks = scalar(
        probe,
        "select count(*) from entities e where e.source_id = %s"
        " and not exists (select 1 from entity_chunks c where c.entity_id = e.id)",
        (source_id,),
    )
    assert without_chunks == 0


def test_a_run_reports_how_long_its_thread_waited_for_the_source_s_pages(
    conn: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # Every request takes 100 ms from the start, so the first page cannot reach the run's thread sooner:
    # the wait is at least that, never more than the run, and there is no embedder to wait for.
    jira = jira_factory(150)
    jira.fault(latency_ms=100)
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="app.pipeline.run"):
        outcome = run_once(conn, run_id, keyring)
    wall = time.monotonic() - started

    assert (outcome.state, outcome.done) == ("succeeded", 150)
    assert 0.1 <= outcome.page_wait <= wall and outcome.vector_wait == 0.0
    ended = [r for r in caplog.records if r.getMessage() == f"run {run_id} ended succeeded"]
    assert len(ended) == 1
    fields = vars(ended[0])  # the record's extra fields, as the JSON log handler writes them
    assert fields["page_wait_s"] == round(outcome.page_wait, 3) and fields["vector_wait_s"] == 0.0


def test_a_run_reports_how_long_its_thread_waited_for_the_writer(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Each write's upsert takes 0.4 s longer in the database (a statement trigger that sleeps), far more than
    # mapping a page: with read-ahead the run's thread hands pages to the writer faster than it writes them,
    # so pages join the waiting write (decision 142), and the run's thread waits for the writer, at the least
    # for most of the last write, and says so, in the outcome and in the run's end log line. With read-ahead
    # off it writes each page itself, waits for no writer and joins nothing.
    jira = jira_factory(ISSUES)
    probe.execute(
        "create function overlap_slow() returns trigger language plpgsql as $$"
        " begin perform pg_sleep(0.4); return null; end $$"
    )
    probe.execute(
        "create trigger overlap_slow after insert on entities for each statement execute function overlap_slow()"
    )
    waits: dict[int, tuple[float, Any, int, Any]] = {}
    try:
        for prefetch in (0, DEFAULT_PREFETCH):
            source_id = add_source(conn, keyring, jira, name=f"jira-{prefetch}")
            run_id = start_run(conn, source_id, mode="full", trigger="manual")
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="app.pipeline.run"):
                outcome = run_once(conn, run_id, keyring, prefetch=prefetch)
            assert (outcome.state, outcome.done) == ("succeeded", ISSUES)
            ended = [r for r in caplog.records if r.getMessage() == f"run {run_id} ended succeeded"]
            assert len(ended) == 1
            logged = vars(ended[0])
            waits[prefetch] = (outcome.write_wait, logged["write_wait_s"], outcome.write_joined, logged["write_joined"])
    finally:
        probe.execute("drop trigger if exists overlap_slow on entities")
        probe.execute("drop function if exists overlap_slow()")

    assert waits[0] == (0.0, 0.0, 0, 0)
    behind, logged, joined, joined_logged = waits[DEFAULT_PREFETCH]
    assert behind >= 0.4 * 0.75 and logged == round(behind, 3)
    assert 0 < joined < 6 and joined_logged == joined


def test_a_run_without_read_ahead_never_asks_for_a_listing_page_ahead(
    conn: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    """With ``prefetch`` 0 the rate gate uses the run's own connection, which holds each page's transaction
    while the connector is suspended: nothing may be requested then (decision 127). So after the k-th
    commit the source has served exactly k search pages; a listing asked ahead would have served k + 1
    (its search answering slower than ``AHEAD_AFTER``, which turns asking ahead on)."""
    jira = jira_factory(ISSUES)
    jira.fault(route_latency_ms={"/search/jql$": 80})
    source_id = add_source(conn, keyring, jira)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    ahead = ReadAhead(jira, search_pages(jira))
    outcome = run_once(conn, run_id, keyring, ahead, prefetch=0)
    assert (outcome.state, outcome.done) == ("succeeded", ISSUES)
    pages = ISSUES // 100
    assert ahead.seen[:pages] == [(k, k) for k in range(1, pages + 1)]
    assert all(served == pages for _, served in ahead.seen[pages:])  # the run's last commits ask nothing more


def test_a_run_cancelled_while_a_remote_embedder_holds_its_answer_ends_and_leaves_no_call_behind(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    """The embeddings endpoint holds its first answer for a minute (within the embedder's 60 s read timeout
    and 300 s answer bound) and the run is cancelled meanwhile. Before decision 167 the embedding thread's
    call was not interrupted: closing the stage waited its 30 s join timeout, and the call then ran on in a
    thread nobody joined."""
    jira = jira_factory(ISSUES)
    server = StallingEmbeddings(jira, stall=60.0)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    probe.execute("update platform_settings set value = '2' where key = 'stale_run_after'")  # a beat each 0.5 s
    try:
        source_id = add_source(conn, keyring, jira)
        settings = {"embedder": "openai", "url": server.url, "model": "stall-test", "dimension": SCHEMA_DIMENSION}
        stage = VectorStage(get_embedder(settings))
        run_id = start_run(conn, source_id, mode="full", trigger="manual")

        def cancel_once_stalled() -> None:
            deadline = time.monotonic() + 60  # a guard against a hang, not an assertion on speed
            while not server.requests:
                assert time.monotonic() < deadline, "the embedder was never asked"
                time.sleep(0.05)
            time.sleep(0.5)  # the call is waiting on the endpoint by now
            rq.cancel_run(probe, id=run_id)

        cancelling = threading.Thread(target=cancel_once_stalled)
        cancelling.start()
        started = time.monotonic()
        outcome = run_once(conn, run_id, keyring, chunks=stage)
        took = time.monotonic() - started
        cancelling.join(60)
    finally:
        server.shutdown()
        server.server_close()
        serving.join(timeout=10)

    assert outcome.state == "cancelled", outcome
    assert took < 20.0, took  # the beat and a quarter-second slice; before, the stage's 30 s join at least
    assert not [t.name for t in threading.enumerate() if t.name.startswith(f"run-{run_id}-")]
    assert server.requests == 1  # given up, not retried
