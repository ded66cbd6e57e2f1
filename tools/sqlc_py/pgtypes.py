"""PostgreSQL type name -> Python annotation, for parameters and result columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Which Python module a generated annotation needs; "" means a builtin.
_SIMPLE: dict[str, tuple[str, str]] = {}


def _register(module: str, annotation: str, *names: str) -> None:
    for name in names:
        _SIMPLE[name] = (module, annotation)


_register("", "int", "bigint", "int8", "bigserial", "serial8", "integer", "int", "int4", "serial")
_register("", "int", "serial4", "smallint", "int2", "smallserial", "serial2", "oid")
_register("", "str", "text", "varchar", "character varying", "char", "character", "bpchar", "citext")
_register("", "str", "name", "xml", "tsquery", "tsvector", "macaddr", "macaddr8")
# psycopg loads uuid as uuid.UUID; annotating str would make mypy lie about every uuid column.
_register("uuid", "uuid.UUID", "uuid")
_register("", "bool", "boolean", "bool")
_register("", "float", "float8", "double precision", "float", "float4", "real")
_register("", "bytes", "bytea", "blob")
_register("decimal", "decimal.Decimal", "numeric", "decimal")
_register("datetime", "datetime.datetime", "timestamptz", "timestamp")
_register("datetime", "datetime.datetime", "timestamp with time zone", "timestamp without time zone")
_register("datetime", "datetime.date", "date")
_register("datetime", "datetime.time", "time", "timetz", "time with time zone", "time without time zone")
_register("datetime", "datetime.timedelta", "interval")

JSON_TYPES = frozenset({"json", "jsonb"})
# pgvector types need pgvector.psycopg.register_vector(conn); they read back as pgvector's own classes
# and accept those or numpy arrays. Typed Any so the generated code does not import pgvector.
VECTOR_TYPES = {
    "vector": "pgvector.Vector",
    "halfvec": "pgvector.HalfVector",
    "sparsevec": "pgvector.SparseVector",
}


@dataclass(frozen=True, slots=True)
class PyType:
    """A resolved annotation plus what the generated code must know about it."""

    annotation: str  # without "| None"
    modules: frozenset[str]
    nullable: bool
    json_kind: str  # "", "json" or "jsonb": input values are wrapped for psycopg
    array_dims: int
    note: str  # trailing comment for types the plugin does not know

    def render(self) -> str:
        return f"{self.annotation} | None" if self.nullable else self.annotation


def type_name(column: dict[str, Any]) -> str:
    """The bare lower-case type name; sqlc spells pg_catalog types both ways."""
    ident = column.get("type") or {}
    name = str(ident.get("name") or "").lower()
    if name.startswith("pg_catalog."):
        name = name.removeprefix("pg_catalog.")
    return name


def resolve(column: dict[str, Any], enums: frozenset[str]) -> PyType:
    """Map one sqlc Column to a Python type."""
    name = type_name(column)
    base = name.rsplit(".", 1)[-1]
    dims = int(column.get("array_dims") or 0)
    if column.get("is_array") and dims == 0:
        dims = 1
    module, annotation, json_kind, note = "", "Any", "", ""
    if base in _SIMPLE:
        module, annotation = _SIMPLE[base]
    elif base in JSON_TYPES:
        json_kind = base
    elif base in VECTOR_TYPES:
        note = f"{VECTOR_TYPES[base]} when read; numpy.ndarray or {VECTOR_TYPES[base]} when written"
    elif name in enums or base in enums:
        annotation = "str"
    else:
        note = f"unknown PostgreSQL type {name or '?'!r}: cast it in the SQL to get a typed value"
    for _ in range(dims):
        annotation = f"list[{annotation}]"
    return PyType(
        annotation=annotation,
        modules=frozenset({module} if module else ()),
        nullable=not column.get("not_null", False),
        json_kind=json_kind,
        array_dims=dims,
        note=note,
    )
