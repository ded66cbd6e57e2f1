"""Validated platform-settings updates (seed 003 "Настройки"): all or nothing, version bumped per change.

An invalid value raises :class:`InvalidField` naming the key before anything is written, so the version
and every value stay as they were. The reconcile window travels as day + time in the organisation's time
zone and is stored as minute of week (docs/decisions.md #4). No key can hold a secret: the key set is
closed (a CHECK in the schema too) and the one free-text value must be an IANA time-zone name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg

from app.queries import settings as q
from app.services.sources import InvalidField

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_TIME = re.compile(r"^(?P<h>\d{2}):(?P<m>\d{2})$")
# Upper bounds keep every interval inside PostgreSQL's integer (make_interval(secs => int)) and sane.
MAX_SECONDS = 10 * 365 * 86400
SECONDS_KEYS = (
    "sync_interval",
    "reconcile_interval",
    "probe_interval",
    "watchdog_silence",
    "incremental_lookback",
    "stale_run_after",
    "takeover_grace",
    "webhook_dedupe_ttl",
)
MAX_DELIVERIES_LIMIT = 1000


class SettingsConflict(Exception):
    """The caller edited an older version than the stored one (optimistic concurrency)."""

    def __init__(self, current: int) -> None:
        super().__init__(f"settings are at version {current}")
        self.current = current


def window_to_minutes(window: Mapping[str, Any]) -> int:
    day = window.get("day")
    if not isinstance(day, str) or day.lower() not in DAYS:
        raise InvalidField("reconcile_window.day", f"must be one of {', '.join(DAYS)}")
    time = window.get("time")
    match = _TIME.match(time) if isinstance(time, str) else None
    if match is None:
        raise InvalidField("reconcile_window.time", 'must be "HH:MM"')
    hours, minutes = int(match["h"]), int(match["m"])
    if hours > 23 or minutes > 59:
        raise InvalidField("reconcile_window.time", "is out of range (00:00 .. 23:59)")
    return DAYS.index(day.lower()) * 1440 + hours * 60 + minutes


def minutes_to_window(minutes: int) -> dict[str, str]:
    day, rest = divmod(int(minutes), 1440)
    return {"day": DAYS[day % 7], "time": f"{rest // 60:02d}:{rest % 60:02d}"}


def _whole(key: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidField(key, "must be a whole number")
    if not low <= value <= high:
        raise InvalidField(key, f"must be between {low} and {high}")
    return value


def normalise(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The stored JSON value of every given key; raises InvalidField on the first invalid one."""
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key in SECONDS_KEYS:
            out[key] = _whole(key, value, 1, MAX_SECONDS)
        elif key == "max_deliveries":
            out[key] = _whole(key, value, 1, MAX_DELIVERIES_LIMIT)
        elif key == "reconcile_window":
            if not isinstance(value, Mapping):
                raise InvalidField(key, 'must be {"day": ..., "time": "HH:MM"}')
            out[key] = window_to_minutes(value)
        elif key == "timezone":
            out[key] = _timezone(value)
        elif key == "mass_delete_share":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InvalidField(key, "must be a number")
            if not 0 < value <= 1:
                raise InvalidField(key, "must be greater than 0 and at most 1")
            out[key] = float(value)
        elif key == "search_include_drafts":
            if not isinstance(value, bool):
                raise InvalidField(key, "must be true or false")
            out[key] = value
        else:
            raise InvalidField(key, "unknown setting")
    return out


def _timezone(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise InvalidField("timezone", "must be an IANA time zone name such as Europe/Berlin")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidField("timezone", "is not a known IANA time zone") from None
    return value


def read_settings(conn: psycopg.Connection[Any]) -> tuple[int, dict[str, Any]]:
    """The version and every value, the window as day + time."""
    values: dict[str, Any] = {r.key: r.value for r in q.list_settings(conn)}
    if "reconcile_window" in values:
        values["reconcile_window"] = minutes_to_window(values["reconcile_window"])
    return q.get_settings_version(conn) or 0, values


def update_settings(
    conn: psycopg.Connection[Any], changes: Mapping[str, Any], *, expected_version: int | None = None
) -> tuple[int, dict[str, Any]]:
    """Validate all, then write all in the caller's transaction; returns the new version and values."""
    stored = normalise(changes)
    if expected_version is not None:
        current = q.get_settings_version(conn) or 0
        if current != expected_version:
            raise SettingsConflict(current)
    for key, value in stored.items():
        q.put_setting(conn, key=key, value=value)
    return read_settings(conn)
