"""Null-safe reads of JSON payloads: the source decides the shape, a mapping must not crash on it.

Every connector walks nested API JSON where any level may be missing, null or of another type;
these helpers answer "absent" (None, ``{}`` or ``[]``) instead of raising.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from connectors.base import MalformedPayload, SourceError

# What ``isinstance`` checks a JSON object against. ``dict`` first: every parsed JSON object is one and
# an exact type match is answered in C, while ``Mapping`` alone goes through the ABC's Python-level
# ``__instancecheck__`` — a tenth of a Jira mapping's time (issue 15 profile). ``Mapping`` stays for
# any other mapping a caller passes.
JSON_OBJECT = (dict, Mapping)


def dig(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]...``, or None as soon as a level is not an object."""
    for key in path:
        if value is None or not isinstance(value, JSON_OBJECT):  # a miss: no ABC check for None
            return None
        value = value.get(key)
    return value


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    # An absent key (None) is the usual miss: answered before the Mapping ABC's Python-level check.
    return value if value is not None and isinstance(value, JSON_OBJECT) else {}


def results(container: Any) -> list[Mapping[str, Any]]:
    """The objects in ``container["results"]`` (Atlassian's paged envelope); [] when there are none."""
    items = container.get("results") if isinstance(container, JSON_OBJECT) else None
    return [r for r in items if isinstance(r, JSON_OBJECT)] if isinstance(items, list) else []


def listing_page(data: Any, key: str, what: str) -> Mapping[str, Any]:
    """A listing answer, which must carry its ``key`` array (an empty one when nothing matched). One without
    it (a proxy's or a login page's JSON) read as an empty page: it ended the listing early and the run
    succeeded, and an incremental run's cursor then passed what it never saw (decision 162). Now the run
    fails: :class:`SourceError` naming ``what`` (the connector and the request) and the array."""
    if not isinstance(data, JSON_OBJECT) or not isinstance(data.get(key), list):
        raise SourceError(f"{what}: the answer has no '{key}' array")
    return data


def json_object(body: bytes, what: str) -> Mapping[str, Any]:
    """``body`` parsed as a JSON object; :class:`MalformedPayload` naming ``what`` otherwise."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise MalformedPayload(f"{what} is not JSON") from exc
    except RecursionError:
        # A body nested thousands of levels deep: hostile or broken, never a delivery we read.
        raise MalformedPayload(f"{what} is nested too deeply") from None
    if not isinstance(data, JSON_OBJECT):
        raise MalformedPayload(f"{what} is not a JSON object")
    return data
