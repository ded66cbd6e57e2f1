"""The incremental cursor as a watermark (seed 000 ``sources.incremental_cursor``; issue 12 item 4).

A time alone cannot say which items at exactly that time were already taken, so the cursor keeps the
boundary time AND the ids seen at it: ``{"updated": <iso>, "ids": [...]}``. The next incremental run
fetches ``updated >= boundary`` (minus the platform look-back, which covers a source's index lag) and
skips only the items it already holds at exactly the boundary; anything else at or after the
boundary, such as an item updated while the previous run was paging, is loaded.

One builder (:meth:`Watermark.advance` during a run), one parser (:meth:`Watermark.from_cursor`), one
writer (:meth:`Watermark.to_cursor`). A cursor written before this module (``{"updated"}`` only)
parses to a watermark with no ids: nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Watermark:
    updated: datetime | None = None
    ids: frozenset[str] = frozenset()

    @classmethod
    def from_cursor(cls, cursor: object) -> Watermark:
        if not isinstance(cursor, Mapping):
            return cls()
        updated = _timestamp(cursor.get("updated"))
        ids = cursor.get("ids")
        if updated is None:
            return cls()
        return cls(updated, frozenset(str(i) for i in ids) if isinstance(ids, list) else frozenset())

    def to_cursor(self) -> dict[str, Any] | None:
        if self.updated is None:
            return None
        return {"updated": self.updated.isoformat(), "ids": sorted(self.ids)}

    def advance(self, item_id: str, updated: datetime | None) -> Watermark:
        """The watermark after seeing ``item_id`` modified at ``updated``."""
        if updated is None or (self.updated is not None and updated < self.updated):
            return self
        if self.updated is None or updated > self.updated:
            return Watermark(updated, frozenset({item_id}))
        return Watermark(updated, self.ids | {item_id})

    def advance_all(self, seen: Iterable[tuple[str, datetime | None]]) -> Watermark:
        mark = self
        for item_id, updated in seen:
            mark = mark.advance(item_id, updated)
        return mark

    def already_seen(self, item_id: str, updated: datetime | None) -> bool:
        """True only for an item taken at exactly the boundary and unchanged since."""
        return updated is not None and updated == self.updated and item_id in self.ids


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
