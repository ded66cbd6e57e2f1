"""In-process cache of the runs endpoints' encoded responses, dropped by NOTIFY (issue 15 §2, decision 65).

A bare handler that only reads a page of runs and serialises it already runs at 0.14-0.30 x a constant
handler (docs/performance.md, API fourth pass): the remaining lever is not to rebuild a page nothing
changed. ``GET /runs``, ``GET /sources/{id}/runs`` and ``GET /runs/{id}`` keep their 200 responses (status,
headers, body bytes) keyed by path and query string; the caller's token is not part of the key (the
answer does not depend on who asks, and the token middleware still runs first on every request, so a
revoked token gets its 401 from a cached page too).

Staying fresh:

- the triggers ``_900_notify_runs`` (sql/triggers/500_runs_notify.sql) NOTIFY ``harvester_runs`` when a
  transaction that changed ``sync_runs``, ``run_completeness`` or a source's secrets commits, whoever
  made it (worker, API, CLI, psql); the API's change listener (app/api/change_listener.py,
  ListenRunChanges) clears the cache;
- a request handled by this process with any other method than GET/HEAD/OPTIONS clears the cache when
  its response starts (after the handler committed), so the client that wrote reads its write at once
  without waiting for the notification;
- the cache answers only while the LISTEN is established: a lost listener connection clears it and
  turns it off (every request reads the database) until the listener is back and has cleared it again;
- the generation is read before the handler reads the database and the response is kept only if no
  clear happened since, so a change that commits during the read is never served afterwards;
- a response naming a ``running`` run is not kept: its elapsed time, rate and ETA move with the clock.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.api.change_listener import ListenedCache
from app.api.metrics import RUNS_CACHE

# The channel of sql/triggers/500_runs_notify.sql (ListenRunChanges subscribes to it).
RUNS_CHANNEL = "harvester_runs"

# msgspec writes a run's state without spaces; inside a string value (error_detail) the quotes would be
# escaped, so a body without this holds no running run (a false positive only costs a miss).
_LIVE_MARK = b'"state":"running"'
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Headers that belong to one response, not to the page (audit_middleware adds the request id outside).
_PER_RESPONSE = frozenset({b"x-request-id", b"date", b"set-cookie"})


class CachedResponse:
    __slots__ = ("body", "start")

    def __init__(self, start: Message, body: bytes) -> None:
        self.start = start
        self.body = body


class RunsCache(ListenedCache[OrderedDict[tuple[str, bytes], CachedResponse]]):
    """(path, query string) -> encoded response, at most ``max_entries`` (least recently used out)."""

    def __init__(self, *, max_entries: int = 256, max_body: int = 1 << 20) -> None:
        self._max_entries = max_entries
        self._max_body = max_body
        super().__init__(OrderedDict())
        # (key, generation) -> set when the request building that page is done; event loop only.
        self.flights: dict[tuple[tuple[str, bytes], int], asyncio.Event] = {}

    # -- look-ups -------------------------------------------------------------------------------------

    def get(self, key: tuple[str, bytes]) -> CachedResponse | None:
        if not self._listening:
            return None
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
        return found

    def put(self, key: tuple[str, bytes], response: CachedResponse, generation: int) -> None:
        if len(response.body) > self._max_body or _LIVE_MARK in response.body:
            return
        with self._lock:
            if not self._listening or generation != self._generation:
                return
            self._entries[key] = response
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)


def _cache_of(scope: Scope) -> RunsCache | None:
    cache: RunsCache | None = scope["litestar_app"].state.get("runs_cache")
    return cache


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if (name == b"content-length" and value != b"0") or name == b"transfer-encoding":
            return True
    return False


async def _send_kept(kept: CachedResponse, outcome: str, send: Send) -> None:
    """Answer from the cache (``outcome``: how the lookup found it, for the lookups counter)."""
    RUNS_CACHE.count(outcome)
    await send(kept.start)
    await send({"type": "http.response.body", "body": kept.body, "more_body": False})


def runs_cache_middleware(app: ASGIApp) -> ASGIApp:
    """Handler middleware of the cached GET handlers (inside the token middleware: auth runs first)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        cache = _cache_of(scope)
        # A GET with a body goes the long way, so the input guard (before_request) still judges it.
        if cache is None or scope["type"] != ScopeType.HTTP or scope["method"] != "GET" or _has_body(scope):
            await app(scope, receive, send)
            return
        key = (scope["path"], scope["query_string"])
        hit = cache.get(key)
        if hit is not None:
            await _send_kept(hit, "hit", send)
            return
        generation = cache.generation()  # before the handler reads the database
        flight = (key, generation)
        leader = cache.flights.get(flight)
        if leader is not None:
            # The same page is being built under this generation: wait for it rather than build it again
            # (after a clear, every request in flight would otherwise miss at once). What it kept, if
            # anything, is in the cache; put() already refused it if a clear came in between.
            await leader.wait()
            hit = cache.get(key)
            if hit is not None:
                await _send_kept(hit, "waited", send)
                return
        RUNS_CACHE.count("built")
        done = asyncio.Event()
        if leader is None:
            cache.flights[flight] = done
        start: list[Message] = []
        chunks: list[bytes] = []
        keep = [True]

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                if message["status"] != 200:
                    keep[0] = False
                start.append(
                    {**message, "headers": [(k, v) for k, v in message.get("headers", ()) if k not in _PER_RESPONSE]}
                )
            elif message["type"] == "http.response.body" and keep[0]:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False) and start:
                    # Kept before the last byte leaves, so a waiter finds it however the send goes.
                    cache.put(key, CachedResponse(start[0], b"".join(chunks)), generation)
            await send(message)

        try:
            await app(scope, receive, capture)
        finally:
            if cache.flights.get(flight) is done:
                del cache.flights[flight]
            done.set()

    return middleware


def writes_clear_middleware(app: ASGIApp) -> ASGIApp:
    """App middleware: a write handled here clears the runs cache when its response starts (read your writes)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] in _SAFE_METHODS:
            await app(scope, receive, send)
            return
        cache = _cache_of(scope)
        if cache is None:
            await app(scope, receive, send)
            return

        async def clear_then_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                cache.clear()
            await send(message)

        try:
            await app(scope, receive, clear_then_send)
        except BaseException:
            cache.clear()  # the exception handler outside renders this response: clear before it does
            raise

    return middleware
