"""Time helpers every connector needs: parse the sources' ISO timestamps, write window literals.

- :func:`parse_time` reads the ISO 8601 variants the sources send (``Z``, ``+01:00``, Atlassian's
  ``+0100``, fractional seconds, a naive value meaning UTC) into an aware UTC ``datetime``, or None when
  the value is absent or unreadable (a mapping must not fail on one bad date).
- :func:`window_literal` turns an incremental ``since`` (UTC) into the minute-precision literal JQL and
  CQL compare against. Both read such literals in the *API user's* time zone; when that zone is
  unknown the window opens :data:`WIDEST_UTC_OFFSET` earlier, so it can only widen, never shift later.
- :func:`millis_time` formats a time the way Atlassian APIs do (milliseconds, ``Z`` or ``+0000``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import orjson

WIDEST_UTC_OFFSET = timedelta(hours=14)  # UTC+14 (Line Islands): no zone is further ahead
_COMPACT_OFFSET = re.compile(r"^(.*[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)([+-]\d{2}):?(\d{2})$")


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp as aware UTC; None for anything that is not one."""
    if not isinstance(value, str):
        return None
    parsed: datetime | None
    try:
        # Python 3.11 reads what the sources send as it comes (``Z``, ``+0100``): the normalising below
        # costs five times the parse, and a Jira issue carries dozens of timestamps (decision 95).
        parsed = datetime.fromisoformat(value)
    except ValueError:
        parsed = _parse_normalised(value)
    return _as_utc(parsed)


def _as_utc(parsed: datetime | None) -> datetime | None:
    """Aware UTC; a naive time is UTC already."""
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        return None  # 0001-01-01 at +01:00 is before the first UTC instant a datetime holds


def _parse_normalised(value: str) -> datetime | None:
    """What :func:`parse_time` reads when ``fromisoformat`` does not take the text as it is: surrounding
    blanks, a ``Z`` or compact offset in a shape it rejects."""
    text = value.strip()
    if not text:
        return None
    text = text.replace("Z", "+00:00")
    match = _COMPACT_OFFSET.match(text)
    if match:
        text = f"{match.group(1)}{match.group(2)}:{match.group(3)}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def iso_utc(value: datetime | None) -> str | None:
    """``2024-01-01T10:00:00Z`` (JSON-safe metadata value); None stays None."""
    if value is None:
        return None
    if value.tzinfo is UTC:
        # orjson writes a UTC time as ``isoformat()`` does, in a third of the time (decision 95).
        return orjson.dumps(value, option=orjson.OPT_UTC_Z)[1:-1].decode()
    return value.isoformat().replace("+00:00", "Z")


def window_literal(since: datetime, zone: tzinfo | None, fmt: str) -> str:
    """``since`` as the source's query language reads it: ``zone``'s wall clock, floored to the minute.

    ``fmt`` is the literal's strftime shape (JQL ``%Y/%m/%d %H:%M``, CQL ``%Y-%m-%d %H:%M``); seconds
    are dropped, which floors the minute. ``zone`` None: the user's zone is unknown, so format in UTC
    and open the window by the widest offset.
    """
    moment = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
    local = moment.astimezone(zone) if zone is not None else (moment - WIDEST_UTC_OFFSET).astimezone(UTC)
    return local.strftime(fmt)


def millis_time(value: datetime, *, zulu: bool = True) -> str:
    """``2024-01-01T10:00:00.123Z`` (Confluence) or ``...123+0000`` (Jira) in UTC."""
    stamp = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return stamp + ("Z" if zulu else "+0000")
