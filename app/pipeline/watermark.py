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
        """The watermark after seeing every ``(item_id, updated)``: ``advance`` for each in turn."""
        moving = MovingWatermark(self)
        moving.advance_all(seen)
        return moving.frozen()

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


class MovingWatermark:
    """A run's watermark while it pages, advanced in place: O(the page) a page.

    A bulk import or a migration can give thousands of items one update time. Advanced as an immutable
    :class:`Watermark` one item at a time, each item copied the boundary's ids: O(ids) an item, quadratic over
    the run; once a page, still O(ids) a page (``bench/watermark_boundary.py``, decision 125). The run's
    thread alone changes it; a page's checkpoint reads it there, before the next page is mapped.
    """

    __slots__ = ("ids", "updated")

    def __init__(self, start: Watermark) -> None:
        self.updated: datetime | None = start.updated
        self.ids: set[str] = set(start.ids)

    def advance_all(self, seen: Iterable[tuple[str, datetime | None]]) -> None:
        for item_id, at in seen:
            if at is None or (self.updated is not None and at < self.updated):
                continue
            if self.updated is None or at > self.updated:
                self.updated = at
                self.ids = {item_id}
            else:
                self.ids.add(item_id)

    def frozen(self) -> Watermark:
        return Watermark(self.updated, frozenset(self.ids))
