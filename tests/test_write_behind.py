"""WriteBehind (decision 122) on its own, with real threads: one write at a time, in order, failures raised
where the sequential loop would have raised them, and nothing left running when the context ends."""

from __future__ import annotations

import threading
import time

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
