"""The producer/consumer hand-over behind the pipeline's read-ahead (app/pipeline/prefetch.py)."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from app.pipeline.prefetch import Prefetch


def test_pages_arrive_in_order_and_the_producer_stays_at_most_depth_plus_one_ahead() -> None:
    produced: list[int] = []

    def pages() -> Iterator[int]:
        for n in range(20):
            produced.append(n)
            yield n

    consumed: list[int] = []
    with Prefetch(pages(), 2) as ahead:
        for page in ahead:
            time.sleep(0.01)  # a slow consumer: the queue fills and the producer must wait
            assert len(produced) <= page + 1 + 2 + 1  # this page, two queued, one in the producer's hand
            consumed.append(page)
    assert consumed == list(range(20))


def test_a_producer_failure_is_raised_after_the_pages_before_it() -> None:
    def pages() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("page 3 failed at the source")

    consumed: list[int] = []
    with pytest.raises(ValueError, match="page 3"), Prefetch(pages(), 4) as ahead:
        for page in ahead:
            consumed.append(page)
    assert consumed == [1, 2]


def test_closing_early_stops_a_producer_blocked_on_a_full_queue_and_closes_its_iterator() -> None:
    closed = threading.Event()

    def pages() -> Iterator[int]:
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    ahead = Prefetch(pages(), 1)
    with ahead:
        for page in ahead:
            if page == 3:
                break
    assert closed.wait(5) and ahead.stopped


def test_a_failure_once_handled_frees_the_stream_the_producer_was_reading_without_the_collector() -> None:
    """The run's page builder raises (a lost lease) while the connector's stream it reads is suspended. Once
    the consumer has handled the forwarded error, that stream must be closed by reference counting, on the
    spot: left in a cycle with the error's traceback, it was closed later by the collector on whatever thread
    ran it, a fan-out thread among them, where its listing waited for itself (decision 157)."""
    closed: list[str] = []

    def stream() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed.append(threading.current_thread().name)

    def pages(items: Iterator[int]) -> Iterator[int]:
        for n in items:
            yield n
            if n == 1:
                raise ValueError("lease lost")

    gc.disable()  # only reference counting frees anything here
    try:
        try:
            with Prefetch(pages(stream()), 2) as ahead:
                for _ in ahead:
                    pass
        except ValueError:
            pass
        assert closed == ["MainThread"]  # freed as the error was, by the thread that handled it
    finally:
        gc.enable()


def test_depth_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Prefetch(iter([1]), 0)


def test_polled_yields_none_while_the_producer_waits_and_then_every_item_in_order() -> None:
    # Decision 132: a consumer with something else to do (hand a waiting group to an idle embedder) gets a
    # None each time nothing came for ``every`` seconds; the items still arrive, in order, and a failure
    # after them is raised at its position.
    release = threading.Event()

    def items() -> Iterator[int]:
        yield 1
        assert release.wait(10)
        yield 2
        raise ValueError("the source failed after item 2")

    seen: list[int | None] = []
    with pytest.raises(ValueError, match="after item 2"), Prefetch(items(), 4) as ahead:
        for item in ahead.polled(0.01):
            seen.append(item)
            if seen.count(None) == 3:
                release.set()  # the producer is held until the consumer has had three idle turns
    assert seen[0] == 1 and seen.count(None) >= 3 and seen[-1] == 2
    assert [s for s in seen if s is not None] == [1, 2]
