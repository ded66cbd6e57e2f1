"""Several requests of one listing page at once, results in the page's order (issue 15 §1).

A listing page names items whose bodies, attachments or threads each cost a request of their own
(Confluence Cloud lists page ids and reads each page; a Jira issue's attachments; a Slack thread's
replies). Against a real source each such request waits 100–500 ms, so doing them one after another
makes the listing page as slow as the sum. :class:`FanOut` runs a function over the page's items on a
small thread pool and hands the results back **in the items' order**, so what a connector yields, and
therefore every checkpoint, is exactly what the sequential loop produced.

Only requests belong on the pool: the function must not change the connector's run state (caches of
permissions, group names...), which the calling thread updates with the results, in order. Two
exceptions, both safe from any thread: a cache whose entry is the same whoever writes it first (Jira's
project roles), and one guarded by a lock (Jira's application roles). The rate budget still holds: every
request waits on the credential's shared gate (``connectors.http``) before it goes out, whichever
thread sends it. An exception is raised at its item's position, after the results before it were
handed back; requests not yet started are cancelled and those already sent are waited for.

The listing pages themselves follow each other by cursor; :meth:`FanOut.listing` yields them in order and
asks for each page's successor (:meth:`FanOut.ahead`) while the page before is read, once the source has
answered a listing request slowly enough for that to pay (``AHEAD_AFTER``, decision 127).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Requests of one listing page in flight at once. Small on purpose: it hides the source's latency
# without looking like a burst to a source that has no rate-limit headers; the shared rate budget caps
# the rate whatever this is.
DEFAULT_FANOUT = 4
# A listing request is asked for ahead only once the last one took at least this long (decision 127).
# Against a source that answers at once a run is bound by its CPU, and a request on another thread only
# adds to the contention for the interpreter lock (and, first of all, to the source's while the run's first
# page reads its rights): a Jira run against an emulator answering at once took 5-8 % longer with every
# page asked ahead. So the first request goes at its turn and is timed, and every answer slower than this
# (any real source's) turns asking ahead on, a faster one off.
AHEAD_AFTER = 0.05
WINDOW_PER_WORKER = 4  # items submitted ahead per worker thread


# Set on the threads of every fan-out pool: see settle().
_on_pool = threading.local()


def _enter_pool() -> None:
    _on_pool.yes = True


def settle(futures: Collection[Future[Any]]) -> None:
    """Cancel the requests of ``futures`` that have not started and wait for those that have (each is bounded
    by its timeout), so none outlives the listing or page that sent it.

    Except on a fan-out pool's own thread. A listing dropped without being closed (its generator left in a
    reference cycle, e.g. by an exception's traceback) is closed by the garbage collector on whichever thread
    happens to collect it, and that may be a pool thread running the very request its close would wait for:
    it would wait for itself, forever (a cancelled run's worker hung so, decision 157). There the requests are
    left to end on their own, and :meth:`FanOut.close` waits for them."""
    for f in futures:
        f.cancel()
    if not getattr(_on_pool, "yes", False):
        wait(futures)


def call(read: Callable[[], R]) -> R:
    """``read()``: for :meth:`FanOut.ordered` over requests of different kinds, each bound beforehand."""
    return read()


class Ahead(Generic[R]):
    """One request sent ahead of its turn (:meth:`FanOut.ahead`)."""

    def __init__(self, read: Callable[[], R], future: Future[R] | None) -> None:
        self._read = read
        self._future = future

    def result(self) -> R:
        """What the request got, or the error it raised, raised here: at its turn, never earlier."""
        return self._read() if self._future is None else self._future.result()

    def drop(self) -> None:
        """Not wanted after all (the listing stopped): cancelled if it has not started, waited for if it
        has (each request is bounded by its timeout), so none outlives the listing that sent it."""
        if self._future is not None:
            settle([self._future])

    def answered(self) -> R | None:
        """What the request got, if it was sent ahead and the source has already answered; None otherwise
        (not sent yet, still waiting, or failed: a failure is raised by :meth:`result`, at its turn). Never
        waits."""
        f = self._future
        if f is None or not f.done() or f.cancelled() or f.exception() is not None:
            return None
        return f.result()


class Listing(Generic[R]):
    """A listing's pages in order (:meth:`FanOut.listing`), iterated and closed like a generator.

    :meth:`upcoming` shows the page after the one handed out last once the source has answered it, without
    taking it: a connector may announce that page's items while it still hands out the items of the one
    before (Jira's previews, decision 138)."""

    def __init__(
        self,
        fanout: FanOut,
        first: Callable[[], R],
        following: Callable[[R], Callable[[], R] | None],
        opening: Ahead[R] | None,
        ahead: bool,
    ) -> None:
        self._fanout = fanout
        self._first = first
        self._following = following
        self._opening = opening
        self._ahead = ahead
        self._pending: Ahead[R] | None = None
        self._pages = self._read()

    def __iter__(self) -> Listing[R]:
        return self

    def __next__(self) -> R:
        return next(self._pages)

    def close(self) -> None:
        """Drop the page asked ahead (cancelled, or waited for if it has started)."""
        self._pages.close()

    def upcoming(self) -> R | None:
        """The next page if it was asked for ahead and has already come; None otherwise. Never waits."""
        pending = self._pending
        return pending.answered() if pending is not None else None

    def _read(self) -> Generator[R, None, None]:
        first, opening, ahead = self._first, self._opening, self._ahead
        page = opening.result() if opening is not None else (self._fanout.timed(first) if ahead else first)()
        try:
            while True:
                read = self._following(page)
                if read is not None:
                    self._pending = self._fanout.ahead(read) if ahead else Ahead(read, None)
                yield page
                pending, self._pending = self._pending, None
                if pending is None:
                    return
                page = pending.result()
        finally:
            if self._pending is not None:
                self._pending.drop()
                self._pending = None


class FanOut:
    """A connector's request pool; ``workers <= 1`` runs everything on the caller's thread.

    ``listing_ahead``: whether :meth:`ahead` may send a request before its turn. The run's pipeline turns it
    off when the rate gate shares the run's connection (no read-ahead, ``prefetch`` 0): a request sent
    while the caller is suspended at a ``yield`` could reach that connection inside the run's page
    transaction."""

    def __init__(
        self, workers: int = DEFAULT_FANOUT, *, name: str = "harvester-fanout", listing_ahead: bool = True
    ) -> None:
        self.workers = max(1, workers)
        self._name = name
        self._listing_ahead = listing_ahead
        self._pool: ThreadPoolExecutor | None = None
        self._last_listing: float | None = None  # seconds the last request through ahead() took; None: none yet

    def ordered(self, fn: Callable[[T], R], items: Iterable[T]) -> Generator[R, None, None]:
        """``fn(item)`` for each item, at most ``workers`` at a time, yielded in the items' order."""
        if self.workers == 1:
            yield from map(fn, items)
            return
        pool = self._start_pool()
        pending: deque[Future[R]] = deque()
        try:
            # Submitted ahead of the one being handed back: a window of a few times the pool, because
            # many items need no request at all (an issue without attachments) and would otherwise
            # leave the pool idle. Memory stays bounded by the window, not by the listing page.
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= self.workers * WINDOW_PER_WORKER:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            # An error or a closed generator: what has not started never will, and what has is waited
            # for (each request is bounded by its timeout), so no request of this page outlives the call
            # and none can reach the rate gate's connection while the run commits on it.
            settle(pending)

    def ahead(self, read: Callable[[], R]) -> Ahead[R]:
        """``read()`` started now on the pool, its result taken later (:meth:`Ahead.result`): a listing's
        next page requested while the caller still hands out the items of the one before. It runs when its
        result is asked for instead, on the caller's thread, as the sequential loop would: with one worker,
        with ``listing_ahead`` off, and while the source answers listings sooner than ``AHEAD_AFTER``
        (or before one was timed, :meth:`timed`).

        Only from the thread that enumerates: a request running on the pool that asked for another ahead
        and waited for it could wait for a slot it holds itself."""
        timed = self.timed(read)
        quick = self._last_listing is None or self._last_listing < AHEAD_AFTER
        if self.workers == 1 or not self._listing_ahead or quick:
            return Ahead(timed, None)
        return Ahead(timed, self._start_pool().submit(timed))

    def listing(
        self,
        first: Callable[[], R],
        following: Callable[[R], Callable[[], R] | None],
        *,
        opening: Ahead[R] | None = None,
        ahead: bool = True,
    ) -> Listing[R]:
        """A listing's pages, in order: ``first()`` (or ``opening``'s result: the first page, already asked
        for), then ``following(page)()`` for each page until ``following`` gives None. Each page's successor
        is asked for (:meth:`ahead`) before the page is handed out, so the source prepares it while the page's
        items are read; an error of a page is raised at its turn, after everything before it was handed
        out; closing the listing drops the page asked ahead (decision 127). ``ahead`` False: every page at
        its turn, nothing timed (a listing read by a request already on the pool). The first page is read
        when the first is asked for."""
        return Listing(self, first, following, opening, ahead)

    def openings(
        self, units: Sequence[T], first_page: Callable[[T], Callable[[], R]]
    ) -> Generator[tuple[T, Ahead[R] | None], None, None]:
        """Each of a listing's containers (a Slack channel, a Confluence space's pages) with its first page
        asked for (:meth:`ahead`) when the container before it starts: most containers are one listing page,
        which has no next page of its own to ask for ahead (decision 127). The first container's opening is
        None (its listing reads its own first page, perhaps from a checkpoint). An opening its container did
        not use (it failed before reading it), and the one asked ahead when the caller stops, are dropped."""
        upcoming: Ahead[R] | None = None
        try:
            for n, unit in enumerate(units):
                opening, upcoming = upcoming, None
                if n + 1 < len(units):
                    upcoming = self.ahead(first_page(units[n + 1]))
                try:
                    yield unit, opening
                finally:
                    if opening is not None:
                        opening.drop()
        finally:
            if upcoming is not None:
                upcoming.drop()

    def _start_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.workers, thread_name_prefix=self._name, initializer=_enter_pool
            )
        return self._pool

    def timed(self, read: Callable[[], R]) -> Callable[[], R]:
        """``read`` noting how long it took, wherever it runs: the next ``ahead`` decides by it. A listing's
        first page goes through here, so that its second can be asked for ahead."""

        def timed() -> R:
            started = time.monotonic()
            try:
                return read()
            finally:
                self._last_listing = time.monotonic() - started

        return timed

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
