"""Entity -> database row: normalisation and the content hash. Pure functions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from app.db.jsonb import encode
from app.digest import sha256_hex
from connectors.base import Entity


def _iso(value: datetime | None) -> str | None:
    """``value.isoformat()``, the text the hash and the row have always carried.

    orjson writes a naive or UTC datetime as exactly that text (the pinned digests check it) in a
    fraction of the time; it drops the seconds of an offset like +05:30:15, so any other zone keeps
    ``isoformat()``. Connectors normalise to UTC (``connectors.timeutil``): the fallback is rare. The row
    gets text, not the datetime, so it encodes the same with any JSON dumps a connection has.
    """
    if value is None:
        return None
    zone = value.tzinfo
    return orjson.dumps(value)[1:-1].decode() if zone is None or zone is UTC else value.isoformat()


def _hash(entity: Entity, created: str | None, updated: str | None, acl: list[str] | None) -> str:
    """SHA-256 of everything the projections store for the entity except the neighbour flag.

    Equal hash -> the loader writes nothing, the chunker embeds nothing (seed 000 "content hash"). The
    bytes hashed are a stored contract: every stored ``content_hash`` was made from exactly this document
    (orjson, sorted keys, at every level), so changing a key, a value's shape or the options would make
    every unchanged entity look changed once after an upgrade (a full rewrite and re-chunking).
    ``tests/test_transform.py`` pins the digests. Tuples serialise as the lists they were once copied to,
    and empty sequences skip the sort: same bytes, less work (docs/performance.md "Load path").
    """
    doc = {
        "type": entity.source_type,
        "id": entity.source_entity_id,
        "status": entity.status,
        "title": entity.title,
        "text": entity.text,
        "sections": entity.sections,
        "url": entity.url,
        "author": entity.author,
        "created": created,
        "updated": updated,
        "acl": acl,
        "metadata": entity.metadata,
        "key": entity.natural_key,
        "container": entity.container,
        "edges": sorted([e.relation, e.target_type, e.target_id, e.target_key or ""] for e in entity.edges)
        if entity.edges
        else (),
        "refs": sorted([r.relation, r.target_kind, r.target_ref, r.source_hint or ""] for r in entity.refs)
        if entity.refs
        else (),
        "aliases": sorted(entity.aliases) if entity.aliases else (),
    }
    # Without letting go of the interpreter lock: the read-ahead's threads would keep it (app/digest.py).
    return sha256_hex(encode(doc, orjson.OPT_SORT_KEYS))


def content_hash(entity: Entity) -> str:
    """The entity's content hash (see :func:`_hash`); :func:`entity_row` computes it along the row."""
    principals = entity.acl.principals
    return _hash(
        entity, _iso(entity.created_at), _iso(entity.updated_at), None if principals is None else sorted(principals)
    )


def _clean(text: str) -> str:
    # PostgreSQL text cannot hold NUL; sources do send it (binary-ish descriptions).
    return text.replace("\x00", "")


def entity_row(entity: Entity) -> dict[str, Any]:
    """The UpsertEntities record of one entity. Each value the hash also covers is computed once."""
    created, updated = _iso(entity.created_at), _iso(entity.updated_at)
    principals = entity.acl.principals
    acl = None if principals is None else sorted(principals)
    return {
        "source_type": entity.source_type,
        "source_entity_id": entity.source_entity_id,
        "natural_key": entity.natural_key,
        "container": entity.container,
        "status": entity.status,
        "title": _clean(entity.title),
        "body": _clean(entity.text),
        "url": entity.url,
        "author": entity.author,
        "source_created_at": created,
        "source_updated_at": updated,
        "metadata": entity.metadata,
        # The hash covers the principals as given (repeats too); the row stores each once.
        "acl_principals": acl if acl is None or len(set(acl)) == len(acl) else sorted(set(acl)),
        "aliases": sorted(set(entity.aliases)) if entity.aliases else [],
        "out_of_scope": entity.out_of_scope,
        "content_hash": _hash(entity, created, updated, acl),
    }


def edge_rows(entity_id: int, entity: Entity) -> list[dict[str, Any]]:
    seen: set[tuple[str, str, str]] = set()
    rows = []
    for e in entity.edges:
        k = (e.relation, e.target_type, e.target_id)
        if k in seen:
            continue
        seen.add(k)
        rows.append(
            {
                "from_entity_id": entity_id,
                "relation": e.relation,
                "direction": "outward",
                "target_type": e.target_type,
                "target_source_entity_id": e.target_id,
                "target_key": e.target_key,
            }
        )
    return rows


def ref_rows(entity_id: int, entity: Entity) -> list[dict[str, Any]]:
    return [
        {
            "entity_id": entity_id,
            "relation": r.relation,
            "target_kind": r.target_kind,
            "target_ref": r.target_ref,
            "source_hint": r.source_hint,
        }
        for r in entity.refs
    ]
