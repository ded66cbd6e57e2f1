"""Share of a payload's non-empty fields that reach the :class:`Entity` (the issue's closing measure).

Generic, used for every connector: a payload leaf "reaches" the entity when its value shows up in
the entity — equal to one of the entity's leaf values (metadata, edges, refs, ACL, times...), or, for
strings of four characters or more, inside its text, title or URL. ``_expandable`` (Atlassian's
"ask for more" placeholders) is not data and is skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from connectors.base import Entity

SKIP_KEYS = frozenset({"_expandable"})


@dataclasses.dataclass(frozen=True, slots=True)
class Coverage:
    reached: int
    total: int
    missed: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.reached / self.total if self.total else 1.0


# Paging envelope and API self-links: present in every list response, never record data.
ENVELOPE_KEYS = frozenset({"start", "limit", "size", "self", "collection", "context", "next", "representation"})


def leaves(value: Any, path: str = "", skip: frozenset[str] = SKIP_KEYS) -> Iterator[tuple[str, Any]]:
    """Non-empty scalar leaves as ``(dotted.path, value)``; list indices become ``[]``."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k not in skip:
                yield from leaves(v, f"{path}.{k}" if path else str(k), skip)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from leaves(v, f"{path}[]", skip)
    elif value is not None and value != "":
        yield path, value


def _entity_values(entity: Entity) -> tuple[set[str], str]:
    values: set[str] = set()
    for field in dataclasses.fields(entity):
        for _, v in leaves(_plain(getattr(entity, field.name))):
            values.add(_norm(v))
    blob = "\n".join([entity.text, entity.title, entity.url or "", *values])
    return values, blob


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, datetime):
        return v.isoformat()
    return v


def _norm(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, str) and len(v) >= 19 and v[4:5] == "-" and v[10:11] == "T":
        try:  # the same instant written two ways (Z vs +00:00 vs -0600, milliseconds) is the same value
            moment = datetime.fromisoformat(v.replace("Z", "+00:00"))
            return moment.astimezone(UTC).isoformat() if moment.tzinfo else moment.isoformat()
        except ValueError:
            return v
    return str(v)


def field_coverage(
    payload: Mapping[str, Any],
    entity: Entity,
    *,
    converted: frozenset[str] = frozenset(),
    skip: frozenset[str] = SKIP_KEYS,
    dropped: Callable[[str, Any], bool] | None = None,
) -> Coverage:
    """``converted``: paths the mapping turns into text (markup bodies) and so never appear verbatim.
    ``dropped(path, value)``: True for a leaf deliberately not kept (not counted at all)."""
    values, blob = _entity_values(entity)
    reached = 0
    missed: list[str] = []
    for path, v in leaves(payload, skip=skip):
        if dropped is not None and dropped(path, v):
            continue
        s = _norm(v)
        if path in converted or s in values or (isinstance(v, str) and len(s) >= 4 and s in blob):
            reached += 1
        else:
            missed.append(path)
    return Coverage(reached, reached + len(missed), tuple(sorted(set(missed))))
