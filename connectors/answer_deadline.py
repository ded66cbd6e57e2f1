"""One answer's time bound from the request to its last byte, headers included (decision 163).

urllib3's read timeout bounds each wait for bytes, not the whole answer. Decision 162 bounded the body by
checking the clock between receives, but the status line and headers are read inside ``urlopen``, line by
line: a source or proxy sending them a few bytes at a time, each within the read timeout, held a request
for up to http.client's header limits (100 lines of 64 KiB) times that timeout, with the run's heartbeat
beating all along.

Here every receive of an answer, from its status line to its last byte, waits at most what is left of the
request's time: the answer's socket file is read through :class:`_DeadlineReader`, which sets the socket's
timeout to ``min(read timeout, time left)`` before each receive and fails at once when nothing is left. The
overshoot is one system call, not one read timeout. No thread, no timer: a receive costs one
``settimeout`` more.

The deadline travels in a thread-local set around ``urlopen`` (:func:`answer_deadline`), since urllib3
builds the response deep inside its pool; pools that bound their answers come from :func:`pool_manager`.
A response built with no deadline set (a proxy's ``CONNECT`` answer outside a request) reads as before.

A run's stop travels the same way (decision 166): given the run's stop event, a receive waits in slices of
:data:`STOP_SLICE` and gives up with :class:`AnswerAbandoned` once the event is set, so a cancelled or
taken-over run no longer waits up to a read timeout for a source that holds its answer.
"""

from __future__ import annotations

import enum
import http.client
import io
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_local = threading.local()

# How soon a receive notices its run's stop: a source holding its answer costs four wake-ups a second,
# and an answer that comes within a slice costs nothing more.
STOP_SLICE = 0.25


class Spent(enum.Enum):
    """Which bound a sliced receive ran out of: each caller raises its own library's error for it."""

    DEADLINE = "the answer's time bound"
    TIMEOUT = "the read timeout"


def next_slice(started: float, timeout: float | None, deadline: float | None) -> float | Spent:
    """How long the next slice of a receive that began at ``started`` may wait: at most :data:`STOP_SLICE`,
    what is left of the answer's ``deadline`` and what is left of the receive's own read ``timeout`` (the
    slices together wait what one receive would have). Shared by the sources' reader here and the outbound
    calls' stream (``app.http_answer``), so both see a stop the same way."""
    now = time.monotonic()
    wait = STOP_SLICE
    if deadline is not None:
        left = deadline - now
        if left <= 0:
            return Spent.DEADLINE
        wait = min(wait, left)
    if timeout is not None:
        own = timeout - (now - started)
        if own <= 0:
            return Spent.TIMEOUT
        wait = min(wait, own)
    return wait


class AnswerDeadlinePassed(TimeoutError):
    """The answer had not ended when the request's time was up (a ``socket.timeout``, so urllib3 raises it
    as its ``ReadTimeoutError`` and every caller's timeout handling applies)."""


class AnswerAbandoned(TimeoutError):
    """The run stopped while its request waited for the answer (a ``socket.timeout`` to urllib3, like
    :class:`AnswerDeadlinePassed`; the caller's next step, its retry, meets the run's stop)."""


@contextmanager
def answer_deadline(deadline: float, stop: threading.Event | None = None) -> Iterator[None]:
    """Responses built in this thread inside the block are read by ``deadline`` (``time.monotonic()``),
    and, with ``stop``, given up within :data:`STOP_SLICE` of its being set."""
    before = getattr(_local, "deadline", None), getattr(_local, "stop", None)
    _local.deadline, _local.stop = deadline, stop
    try:
        yield
    finally:
        _local.deadline, _local.stop = before


class _DeadlineReader(io.RawIOBase):
    """The socket's own raw reader, each receive bounded by what is left of the deadline and, with a stop
    event, waiting in slices so that the run's stop is seen between them."""

    def __init__(self, raw: io.RawIOBase, sock: Any, deadline: float, stop: threading.Event | None) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline
        self._stop = stop
        # The read timeout the connection set: no single receive waits longer than it did before.
        self._timeout = sock.gettimeout()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self._stop is None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise AnswerDeadlinePassed("the answer's time bound passed")
            self._sock.settimeout(left if self._timeout is None else min(self._timeout, left))
            try:
                return self._raw.readinto(buffer)
            except TimeoutError:
                if time.monotonic() >= self._deadline:
                    raise AnswerDeadlinePassed("the answer's time bound passed") from None
                raise
        return self._sliced(buffer, self._stop)

    def _sliced(self, buffer: Any, stop: threading.Event) -> int:
        # The socket itself, not its SocketIO: SocketIO refuses every read after its first timeout, and
        # here a slice's timeout is not the receive's.
        started = time.monotonic()
        while True:
            if stop.is_set():
                raise AnswerAbandoned("the run stopped while its request waited for the answer")
            wait = next_slice(started, self._timeout, self._deadline)
            if wait is Spent.DEADLINE:
                raise AnswerDeadlinePassed("the answer's time bound passed")
            if wait is Spent.TIMEOUT:
                raise TimeoutError("timed out")  # the read timeout, as the socket would have said
            self._sock.settimeout(wait)
            try:
                return int(self._sock.recv_into(buffer))
            except TimeoutError:
                continue

    def close(self) -> None:
        if not self.closed:
            self._raw.close()  # releases the socket's reference, as http.client's own file would
        super().close()


class _BoundedResponse(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        deadline: float | None = getattr(_local, "deadline", None)
        if deadline is not None:
            # The buffered file http.client made, detached so that dropping it does not close the socket's
            # raw reader, which the bounded one now owns.
            raw = self.fp.detach()
            self.fp = io.BufferedReader(_DeadlineReader(raw, sock, deadline, getattr(_local, "stop", None)))


class _BoundedHTTPConnection(HTTPConnection):
    response_class = _BoundedResponse


class _BoundedHTTPSConnection(HTTPSConnection):
    response_class = _BoundedResponse


class _BoundedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _BoundedHTTPConnection


class _BoundedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _BoundedHTTPSConnection


def pool_manager(proxy: str | None, **kwargs: Any) -> urllib3.PoolManager:
    """A pool manager (through ``proxy`` when given) whose answers honour :func:`answer_deadline`."""
    manager = urllib3.ProxyManager(proxy, **kwargs) if proxy else urllib3.PoolManager(**kwargs)
    manager.pool_classes_by_scheme = {"http": _BoundedHTTPConnectionPool, "https": _BoundedHTTPSConnectionPool}
    return manager
