"""Commit pages on a writer thread while the run's thread maps the next (issue 15 §1, decisions 122, 142).

A page's transaction spends most of its time waiting for PostgreSQL (the upsert, the edges and refs, the
checkpoint, the commit), and PostgreSQL runs on a core of its own. Done on the run's thread, that wait
was on the run's critical path: with the source answering at once, the run's thread waited for the
database about as long as it mapped. :class:`WriteBehind` runs each page's write on one writer thread,
so the run's thread maps page N+1 while page N is written.

Joined writes (decision 142): a page handed over while the writer is still busy waits for it; the next
page handed over meanwhile joins the waiting one (``join``), and both commit in one transaction with the
later page's checkpoint. Where the database is a network hop away, each page's transaction costs about
eight round trips whatever its size, and the writer, not the source, bounds the run: joined pages pay
them once. With the database close by the writer keeps up and nothing joins. ``join`` decides what may
share a transaction (it returns None otherwise) and how large a joined write may grow.

Order and checkpoints: one write at a time, in the order handed over, on one thread. A failed write is
raised on the caller's thread at its next :meth:`submit` or :meth:`drain`; what waited behind it is
dropped, never written. The connection is used by one thread at a time: the writer while anything is
handed over and unwritten, the run's thread only after :meth:`drain` or the context's exit, which wait for
every handed-over page. A crash loses what was not committed (the write in flight rolls back): the
resumed run starts after the last committed checkpoint, as before.

Memory: one write in flight, one waiting (joined pages up to ``join``'s limit), and the page being mapped,
besides the read-ahead's queue.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

W = TypeVar("W")


class WriteBehind(Generic[W]):
    """Run ``write(work)`` for each submitted ``work`` on one writer thread, one at a time, in order.

    ``on_failure(work)`` runs on the caller's thread, with the work whose write raised, just before that
    exception is raised to the caller (the run rewinds its counters to the first page of that work).
    ``join(waiting, work)``, if given, returns one work that writes both (``waiting`` first) or None when they
    must be written apart.
    """

    def __init__(
        self,
        write: Callable[[W], None],
        on_failure: Callable[[W], None],
        *,
        name: str,
        join: Callable[[W, W], W | None] | None = None,
    ) -> None:
        self._write = write
        self._on_failure = on_failure
        self._join = join
        self._changed = threading.Condition()
        # Handed over and not yet started, each with the context of the submit that made it (log fields
        # kept in context variables): at most one.
        self._waiting: tuple[W, contextvars.Context] | None = None
        self._writing = False
        self._failed: tuple[BaseException, W] | None = None
        self._closing = False
        # Seconds the caller spent waiting for writes to end (in submit, drain and the exit): how much of
        # the run the database bound rather than the mapping (the run's end log line reports it).
        self.waited = 0.0
        self.joined = 0  # pages written in the transaction of the page before them
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: W) -> None:
        """Hand ``work`` over: join the waiting work, or wait until nothing waits; raise a failed write."""
        context = contextvars.copy_context()
        with self._changed:
            self._raise_failed()
            if self._waiting is not None and self._join is not None:
                joined = self._join(self._waiting[0], work)
                if joined is not None:
                    self._waiting = (joined, context)
                    self.joined += 1
                    return
            self._wait_while(lambda: self._waiting is not None)
            self._raise_failed()
            self._waiting = (work, context)
            self._changed.notify_all()

    def drain(self) -> None:
        """Wait until everything handed over is written; raise what a write raised."""
        with self._changed:
            self._wait_while(lambda: self._waiting is not None or self._writing)
            self._raise_failed()

    def _wait_while(self, busy: Callable[[], bool]) -> None:
        asked = time.monotonic()
        try:
            while busy() and self._failed is None:
                self._changed.wait()
        finally:
            self.waited += time.monotonic() - asked

    def _raise_failed(self) -> None:
        if self._failed is None:
            return
        error, work = self._failed
        self._failed = None
        self._on_failure(work)
        del work
        try:
            raise error
        finally:
            del error  # not held by its own traceback's frame: freed once handled, not by the collector

    def _loop(self) -> None:
        while True:
            with self._changed:
                while self._waiting is None and not self._closing:
                    self._changed.wait()
                if self._waiting is None:
                    return
                (work, context), self._waiting = self._waiting, None
                self._writing = True
                self._changed.notify_all()
            error: BaseException | None = None
            try:
                context.run(self._write, work)
            except BaseException as exc:  # raised on the caller's thread, as the sequential loop would
                error = exc
            with self._changed:
                self._writing = False
                if error is not None:
                    self._failed = (error, work)
                    self._waiting = None  # never written after a page that failed
                self._changed.notify_all()

    def __enter__(self) -> WriteBehind[W]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        # Whether the run ended or stopped for another reason, what was handed over is written first
        # (committed or rolled back): the run's own end or failure handling uses the connection next. A
        # write that failed is raised in place of the stop's own reason, which came later in page order:
        # the sequential loop would have stopped at that page (the other error stays as its context).
        try:
            self.drain()
        finally:
            with self._changed:
                self._closing = True
                self._changed.notify_all()
            self._thread.join()
