"""An answer from an HTTP endpoint Harvester calls out to, read within a bound of size and time (decisions
162 and 165).

httpx's timeouts bound each wait for bytes, not the whole answer: a receiver or an embeddings endpoint that
sends a few bytes at a time, each within the read timeout, held its caller without end (an alert job, the
audit sink's thread, a run waiting for vectors). :func:`post_bounded` gives up once the answer has taken
``max_seconds`` from the request or passed ``max_bytes``.

The time bound covers the whole exchange, the status line and headers included (decision 165): a
:class:`BoundedClient`'s connections, direct or through a proxy, read and write through
:class:`_DeadlineStream`, which waits at most what is left of the request's time before each receive, send or
connect. The deadline travels in a context variable set by :func:`post_bounded`; outside it a connection
waits as httpx's timeouts say. The sources' own client (``connectors.answer_deadline``) does the same for
every source answer.

A caller that may stop (a run's embedding thread, decision 167) says so with :func:`abandon_when`: its
receives then wait in the sources' slices (``connectors.answer_deadline.next_slice``) and give up once the
event is set, and :func:`sleep_unless_abandoned` ends a retry's backoff the same way, both raising
:class:`CallAbandoned`.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

# The slices a stoppable receive waits in, and their length (four wake-ups a second while an endpoint holds
# its answer), are the sources' client's: one rule for both.
from connectors.answer_deadline import Spent, next_slice

_deadline: ContextVar[float | None] = ContextVar("harvester_answer_deadline", default=None)
_abandon: ContextVar[threading.Event | None] = ContextVar("harvester_call_abandon", default=None)


class AnswerTooSlow(httpx.TimeoutException):
    """The answer had not ended ``max_seconds`` after its request: a timeout like any other to the caller."""


class AnswerTooLarge(httpx.DecodingError):
    """The answer's decoded body passed ``max_bytes``: no retry can shrink it."""


class CallAbandoned(httpx.TimeoutException):
    """The caller stopped (:func:`abandon_when`) while its request waited for the answer or its retry
    waited out a backoff: nothing should retry it."""


@contextmanager
def abandon_when(stop: threading.Event) -> Iterator[None]:
    """Calls made in this context give up their answer, or their backoff, once ``stop`` is set."""
    token = _abandon.set(stop)
    try:
        yield
    finally:
        _abandon.reset(token)


def sleep_unless_abandoned(seconds: float) -> None:
    """``time.sleep``, ended with :class:`CallAbandoned` when the context's stop (:func:`abandon_when`) is set."""
    stop = _abandon.get()
    if stop is None:
        time.sleep(seconds)
    elif stop.wait(seconds):
        raise CallAbandoned("the caller stopped while a retry waited for its turn")


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    headers: httpx.Headers
    content: bytes  # decoded (gunzipped), at most max_bytes


_ABANDONED = "the caller stopped while its request waited for the answer"


def _wait_left(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` shortened to what is left of the request's time; raises ``error`` when nothing is left."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's time was up")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection's stream whose every wait ends by the request's deadline (httpcore passes the timeout of
    each receive and send down to the stream, so this is where a trickled head can be cut)."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        stop = _abandon.get()
        if stop is None:
            return self._inner.read(max_bytes, _wait_left(timeout, httpcore.ReadTimeout))
        # In slices, so that the caller's stop is seen between them; together they wait what one receive
        # would have (httpcore's streams may be read again after a timeout: it is the socket's own).
        started = time.monotonic()
        while True:
            if stop.is_set():
                raise httpcore.ReadTimeout(_ABANDONED)
            wait = next_slice(started, timeout, _deadline.get())
            if wait is Spent.DEADLINE:
                raise httpcore.ReadTimeout("the request's time was up")
            if wait is Spent.TIMEOUT:
                raise httpcore.ReadTimeout("timed out")
            try:
                return self._inner.read(max_bytes, wait)
            except httpcore.ReadTimeout:
                continue

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _wait_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        # A proxy's tunnel upgrades the stream it opened: the TLS stream is bounded the same way.
        tls = self._inner.start_tls(ssl_context, server_hostname, _wait_left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own backend, its streams wrapped in :class:`_DeadlineStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        wait = _wait_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, wait, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        wait = _wait_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, wait, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _bounded(transport: httpx.BaseTransport) -> httpx.BaseTransport:
    """``transport`` with its connections' waits bounded. httpx's ``HTTPTransport`` takes no network backend,
    so its pool's is wrapped: a later httpx that keeps it elsewhere fails here, loudly, at the client's
    construction, not silently unbounded. A transport the caller chose (a test's) is left as it is."""
    if type(transport) is not httpx.HTTPTransport:
        return transport
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if not isinstance(backend, httpcore.NetworkBackend):
        raise RuntimeError(
            f"httpx {httpx.__version__} keeps its connections' backend elsewhere: an answer's time bound "
            "cannot cover its headers (app/http_answer.py)"
        )
    if not isinstance(backend, _DeadlineBackend):
        pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]
    return transport


class BoundedClient(httpx.Client):
    """An ``httpx.Client`` whose transports, the proxies' from the environment included, bound every wait by
    the deadline :func:`post_bounded` sets."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx.BaseTransport:
        return _bounded(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx.BaseTransport:
        return _bounded(super()._init_proxy_transport(*args, **kwargs))


@contextmanager
def _answer_deadline(deadline: float) -> Iterator[None]:
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def post_bounded(client: httpx.Client, url: str, *, max_bytes: int, max_seconds: float, **request: Any) -> Answer:
    """POST through ``client`` and read the answer within the bounds. Raises :class:`AnswerTooSlow` or
    :class:`AnswerTooLarge` (both ``httpx.HTTPError``), or what ``client.stream`` raises. Through a
    :class:`BoundedClient` the time bound covers the connect, the request's body and the answer's head too."""
    deadline = time.monotonic() + max_seconds
    parts: list[bytes] = []
    size = 0
    head = False
    try:
        with _answer_deadline(deadline), client.stream("POST", url, **request) as response:
            head = True
            # Each chunk is what one receive brought, inflated: the size is checked between receives.
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise AnswerTooLarge(f"the answer is larger than {max_bytes} bytes", request=response.request)
                parts.append(chunk)
                if time.monotonic() > deadline:
                    raise AnswerTooSlow(_too_slow(max_seconds, f"{size} bytes had come"), request=response.request)
            return Answer(response.status_code, response.headers, b"".join(parts))
    except httpx.TimeoutException as exc:
        stop = _abandon.get()
        if stop is not None and stop.is_set():
            raise CallAbandoned(_ABANDONED) from None
        if isinstance(exc, AnswerTooSlow) or time.monotonic() < deadline:
            raise
        where = f"{size} bytes had come" if head else "its status line and headers had not all come"
        raise AnswerTooSlow(_too_slow(max_seconds, where)) from None


def _too_slow(max_seconds: float, where: str) -> str:
    return f"the answer had not ended {max_seconds:g} s after the request ({where})"
