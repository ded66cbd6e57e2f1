"""Entity -> database row: normalisation and the content hash. Pure functions."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import orjson

from app.db.jsonb import encode
from connectors.base import Entity


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def content_hash(entity: Entity) -> str:
    """SHA-256 of everything the projections store for the entity except the neighbour flag.

    Equal hash -> the loader writes nothing, the chunker embeds nothing (seed 000 "content hash").
    """
    doc = {
        "type": entity.source_type,
        "id": entity.source_entity_id,
        "status": entity.status,
        "title": entity.title,
        "text": entity.text,
        "sections": list(entity.sections),
        "url": entity.url,
        "author": entity.author,
        "created": _iso(entity.created_at),
        "updated": _iso(entity.updated_at),
        "acl": None if entity.acl.principals is None else sorted(entity.acl.principals),
        "metadata": entity.metadata,
        "key": entity.natural_key,
        "container": entity.container,
        "edges": sorted([e.relation, e.target_type, e.target_id, e.target_key or ""] for e in entity.edges),
        "refs": sorted([r.relation, r.target_kind, r.target_ref, r.source_hint or ""] for r in entity.refs),
        "aliases": sorted(entity.aliases),
    }
    return hashlib.sha256(encode(doc, orjson.OPT_SORT_KEYS)).hexdigest()


def _clean(text: str) -> str:
    # PostgreSQL text cannot hold NUL; sources do send it (binary-ish descriptions).
    return text.replace("\x00", "")


def entity_row(entity: Entity) -> dict[str, Any]:
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
        "source_created_at": _iso(entity.created_at),
        "source_updated_at": _iso(entity.updated_at),
        "metadata": entity.metadata,
        "acl_principals": None if entity.acl.principals is None else sorted(set(entity.acl.principals)),
        "aliases": sorted(set(entity.aliases)),
        "out_of_scope": entity.out_of_scope,
        "content_hash": content_hash(entity),
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
