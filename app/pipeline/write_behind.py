"""Commit one page on a writer thread while the run's thread maps the next (issue 15 §1, decision 122).

A page's transaction spends most of its time waiting for PostgreSQL (the upsert, the edges and refs, the
checkpoint, the commit), and PostgreSQL runs on a core of its own. Done on the run's thread, that wait
was on the run's critical path: with the source answering at once, the run's thread waited for the
database about as long as it mapped. :class:`WriteBehind` runs each page's write on one writer thread,
so the run's thread maps page N+1 while page N is written.

Order and checkpoints: at most one write is in flight. :meth:`WriteBehind.submit` first waits for the
previous write and raises what it raised, so pages commit in order, each with its own checkpoint, and a
page is never written after one that failed. The connection is used by one thread at a time: the writer
while a write is in flight, the run's thread only after :meth:`drain` or the context's exit, which wait
for it. A crash loses at most the page being written (rolled back) and the one mapped (never written):
the resumed run starts after the last committed page, as before.

Memory: one page mapped and one being written, besides the read-ahead's queue.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

W = TypeVar("W")


class WriteBehind(Generic[W]):
    """Run ``write(work)`` for each submitted ``work`` on one writer thread, one at a time, in order.

    ``on_failure(work)`` runs on the caller's thread, with the work whose write raised, just before that
    exception is raised to the caller (the run rewinds its counters to that page's).
    """

    def __init__(self, write: Callable[[W], None], on_failure: Callable[[W], None], *, name: str) -> None:
        self._write = write
        self._on_failure = on_failure
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: tuple[Future[None], W] | None = None
        # Seconds the caller spent waiting for writes to end (in submit, drain and the exit): how much of
        # the run the database bound rather than the mapping (the run's end log line reports it).
        self.waited = 0.0

    def submit(self, work: W) -> None:
        """Wait for the previous write (raising what it raised), then start writing ``work``."""
        self.drain()
        # The writer runs in a copy of the caller's context (log fields kept in context variables).
        context = contextvars.copy_context()
        self._pending = (self._pool.submit(context.run, self._write, work), work)

    def drain(self) -> None:
        """Wait for the write in flight, if any; raise what it raised."""
        if self._pending is None:
            return
        future, work = self._pending
        self._pending = None
        asked = time.monotonic()
        try:
            error = future.exception()  # waits: the write is one page's transaction
        finally:
            self.waited += time.monotonic() - asked
        if error is not None:
            self._on_failure(work)
            raise error

    def __enter__(self) -> WriteBehind[W]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        # Whether the run ended or stopped for another reason, the write in flight ends first (committed
        # or rolled back): the run's own end or failure handling uses the connection next. A write that
        # failed is raised in place of the stop's own reason, which came later in page order: the
        # sequential loop would have stopped at that page (the other error stays as its context).
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True)
