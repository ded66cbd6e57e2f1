"""The checkpoint a run saves with every page (``sync_runs.checkpoint``): one type, one builder, one parser.

A resumed run reads it back to start after the last committed page. ``from_json`` accepts whatever an
earlier version stored: a missing key takes its default, a value of the wrong shape is dropped (the run
then fetches more than it needs, never less: every write is idempotent).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

# A page's checkpoint stores at most this many of the watermark's boundary ids. A bulk import can give
# tens of thousands of items one update time; storing them all made every page's checkpoint O(items so
# far): sorted, encoded and written again for each page (``bench/watermark_boundary.py``, decision 125).
# The ids only spare the next incremental run from mapping again items it already holds at exactly the
# boundary; a run resumed from a checkpoint that kept fewer forgets the rest, and the next incremental run
# maps those again and loads nothing new (every write is idempotent). A run that is not interrupted keeps
# them all in memory and stores them all in the incremental cursor, once.
BOUNDARY_IDS_KEPT = 1000


def _kept(ids: AbstractSet[str]) -> list[str]:
    return sorted(ids) if len(ids) <= BOUNDARY_IDS_KEPT else sorted(islice(ids, BOUNDARY_IDS_KEPT))


@dataclass(frozen=True, slots=True)
class RunCheckpoint:
    # The connector's own position after the last committed page (None: start from the beginning).
    connector: Mapping[str, Any] | None = None
    # Newest source-side modification time seen: becomes the incremental cursor when the run succeeds.
    max_updated: datetime | None = None
    # Ids seen at exactly ``max_updated`` (the watermark's boundary ids, app.pipeline.watermark); at most
    # BOUNDARY_IDS_KEPT of them are stored.
    boundary_ids: AbstractSet[str] = frozenset()
    # Items taken from the source so far, across deliveries.
    enumerated: int = 0
    # Enumeration finished and its last items are committed: a resumed run goes straight to resolve.
    complete: bool = False
    # Containers (channels, spaces) the connector could not read in this run: never taken for deleted.
    unread_containers: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": dict(self.connector) if self.connector is not None else None,
            "max_updated": self.max_updated.isoformat() if self.max_updated else None,
            "boundary_ids": _kept(self.boundary_ids),
            "enumerated": self.enumerated,
            "complete": self.complete,
            "unread_containers": sorted(self.unread_containers),
        }

    @classmethod
    def from_json(cls, data: object) -> RunCheckpoint:
        if not isinstance(data, Mapping):
            return cls()
        connector = data.get("connector")
        enumerated = data.get("enumerated")
        unread = data.get("unread_containers")
        boundary = data.get("boundary_ids")
        return cls(
            connector=dict(connector) if isinstance(connector, Mapping) else None,
            max_updated=_timestamp(data.get("max_updated")),
            boundary_ids=frozenset(str(i) for i in boundary) if isinstance(boundary, list) else frozenset(),
            enumerated=enumerated if isinstance(enumerated, int) and not isinstance(enumerated, bool) else 0,
            complete=data.get("complete") is True,
            unread_containers=frozenset(str(c) for c in unread) if isinstance(unread, list) else frozenset(),
        )


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
