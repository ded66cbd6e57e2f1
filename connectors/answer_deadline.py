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
taken-over run no longer waits up to a read timeout for a source that holds its answer. The connection's
TCP and TLS handshakes do too (decision 168): a host that drops the handshake's packets (a firewall, a
backlog that is full), or one that takes the connection and never answers its TLS hello, held a stopped run
for the connect timeout, 30 s, per attempt.
"""

from __future__ import annotations

import enum
import errno
import http.client
import io
import os
import select
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
from urllib3.util.connection import allowed_gai_family

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


def _handshake(sock: socket.socket, address: Any, timeout: float | None, stop: threading.Event) -> None:
    """``sock.connect(address)`` within ``timeout``, in slices of :data:`STOP_SLICE` so that the run's stop
    is seen between them (a blocking connect cannot be woken)."""
    sock.setblocking(False)
    code = sock.connect_ex(address)
    if code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
        started = time.monotonic()
        # poll(), not a selector: no epoll descriptor to open and close for each connection.
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        while True:
            if stop.is_set():
                raise AnswerAbandoned("the run stopped while its request waited for the connection")
            wait = next_slice(started, timeout, None)
            if isinstance(wait, Spent):
                raise TimeoutError("timed out")  # the connect timeout, as the socket would have said
            if poller.poll(wait * 1000):
                break
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if code:
        raise OSError(code, os.strerror(code))


def _connect_stoppable(
    address: tuple[str, int],
    timeout: float | None,
    source_address: tuple[str, int] | None,
    options: Any,
    stop: threading.Event,
) -> socket.socket:
    """``urllib3.util.connection.create_connection`` with each address's handshake through
    :func:`_handshake`: the same addresses in the same order, the same options, each attempt bounded by
    ``timeout``. The name's resolution is not sliced: ``getaddrinfo`` cannot be woken either."""
    host, port = address
    if host.startswith("["):
        host = host.strip("[]")
    try:
        host.encode("idna")  # as urllib3 checks before resolving: its own error, not a UnicodeError
    except UnicodeError:
        raise LocationParseError(f"'{host}', label empty or too long") from None
    error: OSError | None = None
    for family, kind, proto, _name, where in socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            for option in options or ():
                sock.setsockopt(*option)
            if source_address:
                sock.bind(source_address)
            _handshake(sock, where, timeout, stop)
        except AnswerAbandoned:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
            continue
        sock.settimeout(timeout)
        return sock
    raise error if error is not None else OSError("getaddrinfo returns an empty list")


class _StoppableConnect(HTTPConnection):
    """A connection whose TCP handshake, inside a request made under :func:`answer_deadline` with a stop,
    gives up once the run stops (decision 168); every other connection connects as urllib3 does."""

    def _new_conn(self) -> socket.socket:
        stop: threading.Event | None = getattr(_local, "stop", None)
        if stop is None:
            return super()._new_conn()
        timeout = self.timeout if isinstance(self.timeout, (int, float)) else None
        try:
            # _dns_host: the host as urllib3 resolves it (a trailing dot kept), as its own _new_conn does.
            sock = _connect_stoppable(
                (self._dns_host, self.port), timeout, self.source_address, self.socket_options, stop
            )
        except AnswerAbandoned:
            raise ConnectTimeoutError(self, "the run stopped while its request waited for the connection") from None
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        sys.audit("http.client.connect", self, self.host, self.port)  # as urllib3's own _new_conn
        return sock


class _BoundedHTTPConnection(_StoppableConnect):
    response_class = _BoundedResponse


class _BoundedHTTPSConnection(_StoppableConnect, HTTPSConnection):
    response_class = _BoundedResponse


class _BoundedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _BoundedHTTPConnection


class _BoundedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _BoundedHTTPSConnection


class _StoppableTLSSocket(ssl.SSLSocket):
    """A TLS socket whose handshake, inside a request made under :func:`answer_deadline` with a stop, waits
    in slices and gives up once the run stops (decision 168). OpenSSL resumes a handshake whose wait timed
    out where it was, as it does for a non-blocking socket, so the slices add up to the one wait."""

    def do_handshake(self, block: bool = False) -> None:
        stop: threading.Event | None = getattr(_local, "stop", None)
        timeout = self.gettimeout()
        if stop is None or not timeout:
            super().do_handshake(block)  # no stop, or a blocking or non-blocking socket: as the standard one
            return
        started = time.monotonic()
        try:
            while True:
                if stop.is_set():
                    raise AnswerAbandoned("the run stopped while its request waited for the TLS handshake")
                wait = next_slice(started, timeout, None)
                if isinstance(wait, Spent):
                    raise TimeoutError("_ssl.c: The handshake operation timed out")  # as the socket would say
                self.settimeout(wait)
                try:
                    super().do_handshake(block)
                    return
                except TimeoutError:
                    continue
        finally:
            self.settimeout(timeout)


def pool_manager(proxy: str | None, **kwargs: Any) -> urllib3.PoolManager:
    """A pool manager (through ``proxy`` when given) whose answers honour :func:`answer_deadline`. Its
    ``ssl_context``, when given, makes TLS sockets whose handshake honours the run's stop (the attribute is
    the standard library's documented hook; without a stop they behave as its own)."""
    context = kwargs.get("ssl_context")
    if isinstance(context, ssl.SSLContext):
        context.sslsocket_class = _StoppableTLSSocket
    manager = urllib3.ProxyManager(proxy, **kwargs) if proxy else urllib3.PoolManager(**kwargs)
    manager.pool_classes_by_scheme = {"http": _BoundedHTTPConnectionPool, "https": _BoundedHTTPSConnectionPool}
    return manager
