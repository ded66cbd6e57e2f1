"""Directories a connector reads whole, kept for a few minutes for the next runs that fetch items by id.

A webhook delivery or a dead-letter retry is a run of its own that fetches one item or a few by id. Such a
run still needs the directories the item's mapping and rights are read from: Slack's ``users.list`` (who a
mention is, who is a guest) and ``conversations.list`` (the channel's facts and whether it is in scope),
Jira's server info, field list, scope check and each project's and security level's rights, Confluence's
space list, spaces' permissions and groups' members. Read for every delivery, Slack's alone cost about 75
requests an event in a workspace of 10,000 people and 5,000 channels, out of a per-method budget of about
20 a minute (``bench/fetch_by_id.py``, decision 125).

A run that reads a directory whole leaves it here; a later run of the same source that fetches by id takes
it while it is younger than the platform setting ``directory_ttl`` (``SourceConfig.directory_ttl``; 0 turns
this off). A run that enumerates (full, incremental, reconciliation) always reads its own and leaves it for
the next. What the connector looks for and does not find in a directory taken from here (a channel or a
person that is new since) makes it read the directory anew, so nothing new is mistaken for gone. What can
be stale, for at most the setting's seconds, is what changed about someone or something already listed: a
person who became a guest or changed their e-mail address, a permission scheme or a group edited. An entity
loaded by id then carries rights as they were a few minutes before, as it would have had the run come a few
minutes earlier.

One store per process, keyed by the connector, the source, the base URL, a SHA-256 of the credential (the
secret itself is never a key: a rotated credential reads its own), and what the directory depends on.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

DEFAULT_DIRECTORY_TTL = 300.0  # seconds; the platform setting ``directory_ttl`` seeds the same
# Entries kept; past that the oldest go. A source keeps a handful (directories read item by item are one
# entry each, ``put_item``), so this is a few hundred sources per process.
MAX_DIRECTORIES = 2048


class Directories:
    """Values with an age, kept for as long as the asker accepts; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[Hashable, tuple[float, Any]] = {}

    def get(self, key: Hashable, ttl: float) -> Any | None:
        """The value left under ``key`` at most ``ttl`` seconds ago, or None."""
        if ttl <= 0:
            return None
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or self._clock() - entry[0] > ttl:
            return None
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        """Leave ``value`` (which nobody changes afterwards) under ``key``, as of now."""
        with self._lock:
            self._entries.pop(key, None)
            self._make_room()
            self._entries[key] = (self._clock(), value)

    def get_item(self, key: Hashable, item: Hashable, ttl: float) -> Any | None:
        """``item`` of the directory under ``key`` (left by ``put_item``) if read at most ``ttl`` seconds ago."""
        kept = self.get(key, ttl)
        entry = kept.get(item) if isinstance(kept, dict) else None
        if entry is None or self._clock() - entry[0] > ttl:
            return None
        return entry[1]

    def put_item(self, key: Hashable, item: Hashable, value: Any, ttl: float) -> None:
        """Leave ``item`` of a directory read item by item (a project's rights, a space's permission, a
        group's members) under ``key``, as of now. One entry per directory, not per item: a site's hundreds
        of projects or groups would push every other source out of the store. Each item keeps the time it
        was read, so reading one does not make the others live longer; those older than ``ttl`` go. A new
        dict each time, never changed afterwards: another run may hold the one it replaces."""
        with self._lock:
            now = self._clock()
            old = self._entries.pop(key, None)
            kept = old[1] if old is not None and isinstance(old[1], dict) else {}
            items = {k: e for k, e in kept.items() if now - e[0] <= ttl}
            items[item] = (now, value)
            self._make_room()
            self._entries[key] = (now, items)

    def _make_room(self) -> None:
        if len(self._entries) >= MAX_DIRECTORIES:
            del self._entries[next(iter(self._entries))]  # insertion order: the oldest left

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


SHARED = Directories()


class _Source(Protocol):
    """What of ``connectors.base.SourceConfig`` is read here (that module imports this one)."""

    @property
    def source_id(self) -> int: ...
    @property
    def base_url(self) -> str: ...
    @property
    def credential(self) -> str | None: ...
    @property
    def scope_mode(self) -> str: ...
    @property
    def scope_list(self) -> tuple[Any, ...]: ...
    @property
    def directory_ttl(self) -> float: ...


def directory_key(connector: str, config: _Source, *parts: Hashable) -> tuple[Hashable, ...]:
    """Where a source's directory is kept: never the credential itself, only its SHA-256."""
    credential = hashlib.sha256((config.credential or "").encode()).hexdigest()
    return (connector, config.source_id, config.base_url.rstrip("/"), credential, *parts)


class SourceDirectories:
    """One source's part of the store, as its connector sees it: the keys made for it, the setting's age
    passed along, and nothing taken unless the run fetches by id (``taking``, set by ``fetch``). Every run
    leaves what it read fresh."""

    def __init__(self, connector: str, config: _Source, store: Directories = SHARED) -> None:
        self._store = store
        self._prefix = directory_key(connector, config)
        self._ttl = config.directory_ttl
        # What a directory that holds only what the scope names depends on, besides the source.
        self.scope: tuple[Hashable, ...] = (config.scope_mode, tuple(sorted(str(s) for s in config.scope_list)))
        self.taking = False

    def key(self, what: str, *parts: Hashable) -> tuple[Hashable, ...]:
        return (*self._prefix, what, *parts)

    def get(self, what: str, *parts: Hashable) -> Any | None:
        """Directory ``what`` as an earlier run left it, while young enough; None when not taking."""
        return self._store.get(self.key(what, *parts), self._ttl) if self.taking else None

    def put(self, what: str, value: Any, *parts: Hashable) -> None:
        self._store.put(self.key(what, *parts), value)

    def get_item(self, what: str, item: Hashable) -> Any | None:
        """``item`` of directory ``what`` as an earlier run read it, while young enough; None when not taking."""
        return self._store.get_item(self.key(what), item, self._ttl) if self.taking else None

    def put_item(self, what: str, item: Hashable, value: Any) -> None:
        self._store.put_item(self.key(what), item, value, self._ttl)
