"""In-process cache of bearer-token look-ups, dropped at once when any token changes (issue 15 §2).

Without it every API request spent a thread hop, a pool checkout and a database round trip (plus a
commit) on the token before its handler ran. A hit costs a dict look-up.

Revocation stays immediate:

- the trigger ``_900_notify`` on ``api_tokens`` (sql/triggers/400_api_tokens_notify.sql) NOTIFYs
  ``harvester_api_tokens`` when a token is revoked, re-scoped, re-dated or deleted, by whoever does it
  (API, ``harvester token revoke``, psql); the API's change listener (app/api/change_listener.py,
  ListenTokenChanges) clears the cache;
- the cache answers only while that LISTEN is established: a lost listener connection clears it and
  every look-up goes to the database until the listener is back;
- a look-up that started before a clear is not stored after it (generation check), so a revocation that
  commits while a look-up is in flight cannot be undone by that look-up;
- an entry lives at most ``ttl`` seconds and never past the token's own expiry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from app.api.change_listener import ListenedCache

# The channel of sql/triggers/400_api_tokens_notify.sql (ListenTokenChanges subscribes to it).
TOKENS_CHANNEL = "harvester_api_tokens"


@dataclass(frozen=True, slots=True)
class CachedToken:
    token_id: int
    name: str
    scope: str
    principals: tuple[str, ...] = ()  # a search token's bound ACL tokens (issue 14 §4)


class TokenCache(ListenedCache[dict[str, tuple[CachedToken, float]]]):
    """token hash -> (CachedToken, monotonic deadline); safe to use from many threads."""

    def __init__(self, *, ttl: float = 10.0, max_entries: int = 10_000) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        super().__init__({})

    # -- look-ups ---------------------------------------------------------------------------------

    def get(self, digest: str) -> CachedToken | None:
        if not self._listening:
            return None
        found = self._entries.get(digest)
        if found is None:
            return None
        token, deadline = found
        if time.monotonic() >= deadline:
            with self._lock:
                self._entries.pop(digest, None)
            return None
        return token

    def put(self, digest: str, token: CachedToken, expires_at: datetime | None, generation: int) -> None:
        ttl = self._ttl
        if expires_at is not None:
            ttl = min(ttl, (expires_at - datetime.now(UTC)).total_seconds())
        if ttl <= 0:
            return
        with self._lock:
            if not self._listening or generation != self._generation:
                return
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            self._entries[digest] = (token, time.monotonic() + ttl)
