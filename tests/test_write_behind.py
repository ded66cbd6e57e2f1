"""WriteBehind (decision 122) on its own, with real threads: one write at a time, in order, failures raised
where the sequential loop would have raised them, and nothing left running when the context ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from app.pipeline.write_behind import WriteBehind


class Writes:
    def __init__(self, fail_on: int | None = None, pause: float = 0.0) -> None:
        self.fail_on = fail_on
        self.pause = pause
        self.done: list[int] = []
        self.threads: set[str] = set()
        self.in_flight = 0
        self.most_in_flight = 0
        self.failed: list[int] = []
        self.lock = threading.Lock()

    def write(self, page: int) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.threads.add(threading.current_thread().name)
        time.sleep(self.pause)
        with self.lock:
            self.in_flight -= 1
        if page == self.fail_on:
            raise RuntimeError(f"page {page} refused")
        self.done.append(page)

    def on_failure(self, page: int) -> None:
        self.failed.append(page)


def test_pages_are_written_one_at_a_time_in_order_on_the_writer_thread() -> None:
    writes = Writes(pause=0.01)
    with WriteBehind(writes.write, writes.on_failure, name="test-write") as writer:
        for page in range(20):
            writer.submit(page)
        writer.drain()
    assert writes.done == list(range(20))
    assert writes.most_in_flight == 1
    assert len(writes.threads) == 1 and threading.current_thread().name not in writes.threads


@pytest.mark.parametrize(
    ("fail_on", "pages"),
    [
        (3, 10),  # raised when the next page is handed over; nothing after it is written
        (4, 5),  # the last page's write: raised by the context's normal exit
    ],
)
def test_a_failed_write_is_raised_and_nothing_after_it_is_written(fail_on: int, pages: int) -> None:
    writes = Writes(fail_on=fail_on)
    with (
        pytest.raises(RuntimeError, match=f"page {fail_on} refused"),
        WriteBehind(writes.write, writes.on_failure, name="test-write") as writer,
    ):
        for page in range(pages):
            writer.submit(page)
    assert writes.done == list(range(fail_on))
    assert writes.failed == [fail_on]


def test_a_stop_for_another_reason_waits_for_the_write_in_flight() -> None:
    writes = Writes(pause=0.3)
    with pytest.raises(KeyError), WriteBehind(writes.write, writes.on_failure, name="test-write") as writer:
        writer.submit(0)
        raise KeyError("the source failed")
    # The write in flight ended before the context did: the connection is free for the failure handling.
    assert writes.done == [0] and writes.in_flight == 0 and writes.failed == []


def test_a_write_that_failed_while_the_run_stopped_for_another_reason_is_the_one_raised() -> None:
    writes = Writes(fail_on=0, pause=0.1)
    with (
        pytest.raises(RuntimeError, match="page 0 refused") as raised,
        WriteBehind(writes.write, writes.on_failure, name="test-write") as writer,
    ):
        writer.submit(0)
        raise KeyError("the next page's fetch failed")
    # Earlier in page order, so it is what the sequential loop would have raised; the later one is its context.
    assert isinstance(raised.value.__context__, KeyError)
    assert writes.failed == [0]


def _join_small(limit: int) -> Callable[[list[int], list[int]], list[int] | None]:
    """Join two works of page numbers while they hold ``limit`` pages at most."""

    def join(waiting: list[int], work: list[int]) -> list[int] | None:
        return [*waiting, *work] if len(waiting) + len(work) <= limit else None

    return join


class Joined(Writes):
    """Writes of works that are lists of page numbers (joined pages), each recorded as one write."""

    def __init__(self, fail_on: int | None = None, pause: float = 0.0) -> None:
        super().__init__(fail_on, pause)
        self.writes: list[list[int]] = []
        self.started = threading.Event()

    def write_pages(self, pages: list[int]) -> None:
        self.started.set()
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.pause)
        with self.lock:
            self.in_flight -= 1
        if self.fail_on in pages:
            raise RuntimeError(f"pages {pages} refused")
        self.writes.append(pages)

    def failed_pages(self, pages: list[int]) -> None:
        self.failed.append(pages[0])


def _first_started(writer: WriteBehind[list[int]], writes: Joined) -> None:
    """Hand page 0 over and wait until the writer has taken it (a page handed over before that joins it)."""
    writer.submit([0])
    assert writes.started.wait(30)


def test_pages_handed_over_while_the_writer_is_busy_join_the_waiting_one_in_order() -> None:
    writes = Joined(pause=0.3)
    with WriteBehind(writes.write_pages, writes.failed_pages, name="test-write", join=_join_small(3)) as writer:
        # Page 0 is being written; 1 waits for it, 2 and 3 join 1, 4 cannot (three pages already): it waits
        # for the writer to take [1, 2, 3], then waits itself and takes 5 and 6 in.
        _first_started(writer, writes)
        for page in range(1, 7):
            writer.submit([page])
        writer.drain()
    assert writes.writes == [[0], [1, 2, 3], [4, 5, 6]]
    assert writer.joined == 4
    assert writes.most_in_flight == 1


def test_a_waiting_page_is_written_without_another_hand_over() -> None:
    writes = Joined(pause=0.2)
    with WriteBehind(writes.write_pages, writes.failed_pages, name="test-write", join=_join_small(10)) as writer:
        _first_started(writer, writes)
        writer.submit([1])  # waits behind page 0
        deadline = time.monotonic() + 30  # a guard against a hang, not a timing assertion
        while writes.writes != [[0], [1]]:
            assert time.monotonic() < deadline, writes.writes
            time.sleep(0.01)
        # Nothing was handed over or drained meanwhile: the writer took the waiting page by itself.
        assert writer.joined == 0


def test_a_failed_write_drops_the_pages_that_joined_behind_it() -> None:
    writes = Joined(fail_on=0, pause=0.3)
    with (
        pytest.raises(RuntimeError, match=r"pages \[0\] refused"),
        WriteBehind(writes.write_pages, writes.failed_pages, name="test-write", join=_join_small(10)) as writer,
    ):
        _first_started(writer, writes)
        for page in range(1, 4):
            writer.submit([page])  # 1, 2 and 3 wait joined while 0 is written, and 0 fails
        writer.drain()
    assert writes.writes == []
    assert writes.failed == [0]


def test_a_page_that_may_not_join_waits_its_turn() -> None:
    writes = Joined(pause=0.2)

    def odd_apart(waiting: list[int], work: list[int]) -> list[int] | None:
        return None if work[0] % 2 else [*waiting, *work]

    with WriteBehind(writes.write_pages, writes.failed_pages, name="test-write", join=odd_apart) as writer:
        _first_started(writer, writes)
        for page in range(1, 5):
            writer.submit([page])
    # 1 waits behind 0; 2 joins it; 3 may not join, so it waits for [1, 2] to start; 4 joins 3.
    assert writes.writes == [[0], [1, 2], [3, 4]]
    assert [p for w in writes.writes for p in w] == list(range(5))
