"""The project's JSON encoding for jsonb parameters (orjson), registered per connection.

``app.db.connect.configure_connection`` registers :func:`dumps` on every connection the product opens;
nothing sets it process-wide, so what a query writes does not depend on which modules were imported.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# An escaped NUL preceded by an even number of backslashes (an odd count would be a literal "\\u0000").
_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")
_ORJSON_OPTS = orjson.OPT_NON_STR_KEYS


def encode(value: Any, option: int = 0) -> bytes:
    """JSON bytes; values that are not JSON (datetimes) become strings. ``option``: extra orjson options."""
    try:
        return orjson.dumps(value, default=str, option=_ORJSON_OPTS | option)
    except (orjson.JSONEncodeError, TypeError):
        # orjson refuses integers beyond 64 bits; the standard library takes them.
        text = json.dumps(value, default=str, ensure_ascii=False, sort_keys=bool(option & orjson.OPT_SORT_KEYS))
        return text.encode()


def dumps(value: Any) -> bytes:
    """JSON for every jsonb parameter: as :func:`encode`, and NUL, which jsonb cannot hold, is dropped
    (sources do send it)."""
    data = encode(value)
    return _NUL.sub(rb"\1", data) if b"\\u0000" in data else data
