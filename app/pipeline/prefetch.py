"""Fetch the next pages while the current one is mapped, loaded and committed (issue 15 §1).

:class:`Prefetch` runs a page iterator (the connector's paging, HTTP and all) on a producer thread and
hands its pages to the consumer, in order, through a bounded queue: at most ``depth`` pages wait,
plus the one the producer is building and the one the consumer is loading, so memory stays flat
however slow the database or the embedder is (back-pressure: the producer blocks on a full queue).

Order and checkpoints: the consumer still commits page by page with the checkpoint after each page;
the producer only reads ahead. An exception in the producer (the source failing, a lost lease) is
queued behind the pages fetched before it and raised by the consumer at that position, after those
pages were committed, exactly where the sequential loop would have raised it.

Stopping: :meth:`Prefetch.close` (the consumer is done, failed, or lost its lease) sets a stop event;
the producer never blocks on ``put`` for longer than ``POLL`` seconds without checking it, and closes
the page iterator on its own thread (a generator can only be closed by the thread running it). A
producer blocked inside an HTTP call is not interrupted: it notices the stop after that call, and
``close`` waits for it at most ``join_timeout`` seconds (the thread is a daemon).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

POLL = 0.2  # seconds between stop checks of a blocked producer or consumer


@dataclass(frozen=True, slots=True)
class _End:
    """The producer ran the iterator to its end."""


@dataclass(frozen=True, slots=True)
class _Failed:
    """The producer's iterator raised ``error`` after the pages queued before this message."""

    error: BaseException


class Prefetch(Generic[T]):
    """Iterate ``pages`` on a producer thread, ``depth`` (>= 1) items ahead of the consumer."""

    def __init__(self, pages: Iterator[T], depth: int, *, name: str = "prefetch", join_timeout: float = 30.0) -> None:
        if depth < 1:
            raise ValueError("prefetch depth must be at least 1")
        self._pages = pages
        self._queue: queue.Queue[T | _End | _Failed] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._join_timeout = join_timeout
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._started = False

    def __enter__(self) -> Prefetch[T]:
        self._thread.start()
        self._started = True
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[T]:
        for message in self.polled(POLL):
            if message is not None:
                yield message

    def polled(self, every: float) -> Iterator[T | None]:
        """The items in order, and None each time nothing came for ``every`` seconds: a consumer that has
        something to do while it waits (hand a waiting group to an idle embedder) gets the chance."""
        while True:
            try:
                message = self._queue.get(timeout=every)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    # Cannot happen (the producer always queues _End or _Failed unless stopped); a
                    # consumer must never wait forever on a dead producer.
                    raise RuntimeError("the page producer stopped without a result") from None
                yield None
                continue
            if isinstance(message, _End):
                return
            if isinstance(message, _Failed):
                error = message.error
                del message
                try:
                    raise error
                finally:
                    # The raise puts this frame in the error's traceback: without the locals dropped, the
                    # error would hold itself (and every frame of the producer's it went through, with the
                    # generators they were iterating) in a cycle only the collector frees, on whichever
                    # thread it then runs (decision 157).
                    del error
            yield message

    def close(self) -> None:
        """Stop the producer and wait for it (bounded); pages still queued are dropped, never committed."""
        self._stop.set()
        if not self._started:
            return
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(self._join_timeout)

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()

    def _produce(self) -> None:
        try:
            for page in self._pages:
                if not self._put(page):
                    return
            self._put(_End())
        except BaseException as exc:  # forwarded: the consumer raises it at this position
            self._put(_Failed(exc))
        finally:
            close = getattr(self._pages, "close", None)
            if close is not None:
                close()

    def _put(self, message: T | _End | _Failed) -> bool:
        """Queue ``message``, waiting while the queue is full; False once the consumer stopped us."""
        while not self._stop.is_set():
            try:
                self._queue.put(message, timeout=POLL)
                return True
            except queue.Full:
                continue
        return False
