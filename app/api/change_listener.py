"""One LISTEN connection per API process that keeps its in-process caches honest.

The token cache (app/api/token_cache.py) and the runs response cache (app/api/runs_cache.py) are each
cleared by a notification their triggers send when a change commits. Both listen on the same connection
and thread: a notification clears the cache of its channel; while the connection is down every cache is
off (each request reads the database), and when it is back each cache is cleared once more after LISTEN,
so a change committed while nobody listened is never served.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psycopg

log = logging.getLogger(__name__)
LISTENER = "harvester-api-listen"  # application_name of the LISTEN connection (docs/operations.md counts it)

M = TypeVar("M", bound=MutableMapping[Any, Any])


class ListenedCache(Generic[M]):
    """What the two caches share: their entries, a generation counter that every clear bumps (a look-up
    that started before a clear must not store its answer after it), and whether LISTEN holds (the
    cache answers nothing while it does not). Subclasses read and write ``_entries`` under ``_lock``."""

    def __init__(self, entries: M) -> None:
        self._entries = entries
        self._lock = threading.Lock()
        self._generation = 0
        self._listening = False

    def generation(self) -> int:
        """Read before reading the database and hand to the subclass's ``put``."""
        return self._generation

    def clear(self) -> None:
        """Drop everything: a change that may alter an entry committed."""
        with self._lock:
            self._generation += 1
            self._entries.clear()

    @property
    def listening(self) -> bool:
        return self._listening

    def set_listening(self, value: bool) -> None:
        """On (and cleared) once LISTEN holds; off (and cleared) when the connection is lost."""
        with self._lock:
            self._listening = value
            self._generation += 1
            self._entries.clear()


@dataclass(frozen=True, slots=True)
class Subscription:
    channel: str  # the channel the triggers NOTIFY
    listen: Callable[[psycopg.Connection[Any]], None]  # the LISTEN query of sql/queries
    cache: ListenedCache[Any]  # switched on and off and cleared by the listener


class ChangeListener:
    def __init__(self, url: str, subscriptions: Sequence[Subscription]) -> None:
        self._url = url
        self._subscriptions = tuple(subscriptions)
        self._by_channel = {s.channel: s.cache for s in self._subscriptions}
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, *, wait: float = 5.0) -> None:
        """Start the listener thread; waits up to ``wait`` seconds for LISTEN (the caches stay off until
        then, so starting never blocks the API on it)."""
        self._thread = threading.Thread(target=self._listen_forever, name="cache-listener", daemon=True)
        self._thread.start()
        self._ready.wait(wait)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._set_listening(False)

    def _set_listening(self, value: bool) -> None:
        for s in self._subscriptions:
            s.cache.set_listening(value)

    def _listen_forever(self) -> None:
        connected_before = False
        lost_logged = False
        channels = ", ".join(s.channel for s in self._subscriptions)
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=10, application_name=LISTENER) as conn:
                    for s in self._subscriptions:
                        s.listen(conn)
                    # LISTEN first, then clear: a change committed before LISTEN is covered by the clear,
                    # any later one by its notification.
                    self._set_listening(True)
                    self._ready.set()
                    if connected_before:
                        log.info("cache listener reconnected (LISTEN %s); cached answers are served again", channels)
                    else:
                        log.info("cache listener started (LISTEN %s)", channels)
                    connected_before, lost_logged = True, False
                    self._drain(conn)
            except psycopg.Error as exc:
                self._set_listening(False)  # off before the line is written: a reader of the log may rely on it
                if not self._stop.is_set() and not lost_logged:
                    # The type only: a connection error's text may name the server's user and host.
                    log.warning(
                        "cache listener lost its connection (%s); token look-ups and runs requests read the "
                        "database until it reconnects",
                        type(exc).__name__,
                    )
                    lost_logged = True
            finally:
                self._set_listening(False)
                self._ready.set()
            self._stop.wait(1.0)

    def _drain(self, conn: psycopg.Connection[Any]) -> None:
        while not self._stop.is_set():
            # A short timeout so stop() is honoured; the payload is only a hint, the channel says which
            # cache to clear.
            for note in conn.notifies(timeout=1.0, stop_after=1):
                cache = self._by_channel.get(note.channel)
                if cache is not None:
                    cache.clear()
            # notifies() returns quietly on a closed connection.
            if conn.closed or conn.broken:
                raise psycopg.OperationalError("listener connection closed")
