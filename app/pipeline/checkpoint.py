"""The checkpoint a run saves with every page (``sync_runs.checkpoint``): one type, one builder, one parser.

A resumed run reads it back to start after the last committed page. ``from_json`` accepts whatever an
earlier version stored: a missing key takes its default, a value of the wrong shape is dropped (the run
then fetches more than it needs, never less: every write is idempotent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class RunCheckpoint:
    # The connector's own position after the last committed page (None: start from the beginning).
    connector: Mapping[str, Any] | None = None
    # Newest source-side modification time seen: becomes the incremental cursor when the run succeeds.
    max_updated: datetime | None = None
    # Ids seen at exactly ``max_updated`` (the watermark's boundary ids, app.pipeline.watermark).
    boundary_ids: frozenset[str] = frozenset()
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
            "boundary_ids": sorted(self.boundary_ids),
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
