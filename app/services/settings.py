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
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg

from app.queries import settings as q
from app.secrets import Keyring
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
    "lane_wait_max",
    "takeover_grace",
    "webhook_dedupe_ttl",
    "rate_limit_patience",
)
MAX_DELIVERIES_LIMIT = 1000
MAX_FANOUT = 16  # requests of one listing page at once; the table's CHECK holds the same bound
MAX_DIRECTORY_TTL = 3600  # seconds a directory read whole may serve by-id runs; the table's CHECK holds the same
MAX_LOCK_WAIT = 3600  # seconds a run's statement may wait for another session's lock; the table's CHECK holds the same
MAX_RESPONSE_MIB = 4096  # MiB one source answer's decoded body may reach; the table's CHECK holds the same
MAX_RESPONSE_SECONDS = 3600  # seconds one source answer may take in all; the table's CHECK holds the same
ALERT_EVENTS = ("run_failed", "source_health_error", "mass_delete_held", "dead_letters_over_threshold", "worker_gone")
CHANNEL_KINDS = ("webhook", "slack")
MAX_CHANNELS = 20


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


def normalise(changes: Mapping[str, Any], keyring: Keyring | None = None) -> dict[str, Any]:
    """The stored JSON value of every given key; raises InvalidField on the first invalid one."""
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "alert_channels":
            out[key] = _channels(value, keyring)
        elif key == "alert_dlq_threshold":
            out[key] = _whole(key, value, 1, 10_000_000)
        elif key in SECONDS_KEYS:
            out[key] = _whole(key, value, 1, MAX_SECONDS)
        elif key == "max_deliveries":
            out[key] = _whole(key, value, 1, MAX_DELIVERIES_LIMIT)
        elif key == "fetch_fanout":
            out[key] = _whole(key, value, 1, MAX_FANOUT)
        elif key == "directory_ttl":
            out[key] = _whole(key, value, 0, MAX_DIRECTORY_TTL)
        elif key == "lock_wait_max":
            out[key] = _whole(key, value, 1, MAX_LOCK_WAIT)
        elif key == "response_max_mib":
            out[key] = _whole(key, value, 1, MAX_RESPONSE_MIB)
        elif key == "response_max_seconds":
            out[key] = _whole(key, value, 1, MAX_RESPONSE_SECONDS)
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
        elif key == "completeness_tolerance":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InvalidField(key, "must be a number")
            if not 0 <= value <= 1:
                raise InvalidField(key, "must be between 0 and 1")
            out[key] = float(value)
        elif key == "search_include_drafts":
            if not isinstance(value, bool):
                raise InvalidField(key, "must be true or false")
            out[key] = value
        else:
            raise InvalidField(key, "unknown setting")
    return out


def _channels(value: Any, keyring: Keyring | None) -> list[dict[str, Any]]:
    """Alert channels as stored: the HMAC key encrypted (``secret_enc``), never in clear (no secret in
    platform_settings; the table's CHECK refuses a ``secret`` key)."""
    if not isinstance(value, list) or len(value) > MAX_CHANNELS:
        raise InvalidField("alert_channels", f"must be a list of at most {MAX_CHANNELS} channels")
    stored: list[dict[str, Any]] = []
    for i, channel in enumerate(value):
        at = f"alert_channels[{i}]"
        if not isinstance(channel, Mapping):
            raise InvalidField(at, 'must be {"kind": "webhook"|"slack", "url": ...}')
        unknown = set(channel) - {"kind", "url", "secret", "events"}
        if unknown:
            raise InvalidField(f"{at}.{sorted(unknown)[0]}", "unknown field")
        kind = channel.get("kind")
        if kind not in CHANNEL_KINDS:
            raise InvalidField(f"{at}.kind", f"must be one of {', '.join(CHANNEL_KINDS)}")
        url = channel.get("url")
        if not isinstance(url, str) or not _is_http_url(url):
            raise InvalidField(f"{at}.url", "must be an http:// or https:// URL with a host")
        item: dict[str, Any] = {"kind": kind, "url": url}
        secret = channel.get("secret")
        if secret is not None:
            if not isinstance(secret, str) or not 16 <= len(secret) <= 256:
                raise InvalidField(f"{at}.secret", "must be 16 to 256 characters")
            if keyring is None:
                raise InvalidField(f"{at}.secret", "cannot be stored without the encryption key")
            item["secret_enc"] = keyring.encrypt(secret, context="alert_channel")
        events = channel.get("events")
        if events is not None:
            if not isinstance(events, list) or any(e not in ALERT_EVENTS for e in events):
                raise InvalidField(f"{at}.events", f"must list some of {', '.join(ALERT_EVENTS)}")
            item["events"] = sorted(set(events))
        stored.append(item)
    return stored


def _is_http_url(url: str) -> bool:
    if len(url) > 2048 or any(c.isspace() for c in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  raises on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _timezone(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise InvalidField("timezone", "must be an IANA time zone name such as Europe/Berlin")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidField("timezone", "is not a known IANA time zone") from None
    return value


def channel_out(stored: Mapping[str, Any]) -> dict[str, Any]:
    """What a client sees of a channel: the key masked, a Slack URL's secret path masked."""
    url = str(stored.get("url", ""))
    if stored.get("kind") == "slack":
        parts = urlsplit(url)
        url = f"{parts.scheme}://{parts.netloc}/••••"
    return {
        "kind": stored.get("kind"),
        "url": url,
        "secret": "••••" if stored.get("secret_enc") else None,
        "events": stored.get("events"),
    }


def read_settings(conn: psycopg.Connection[Any]) -> tuple[int, dict[str, Any]]:
    """The version and every value, the window as day + time."""
    values: dict[str, Any] = {r.key: r.value for r in q.list_settings(conn)}
    if "reconcile_window" in values:
        values["reconcile_window"] = minutes_to_window(values["reconcile_window"])
    if "alert_channels" in values:
        values["alert_channels"] = [channel_out(c) for c in values["alert_channels"]]
    return q.get_settings_version(conn) or 0, values


def update_settings(
    conn: psycopg.Connection[Any],
    changes: Mapping[str, Any],
    *,
    expected_version: int | None = None,
    keyring: Keyring | None = None,
) -> tuple[int, dict[str, Any]]:
    """Validate all, then write all in the caller's transaction; returns the new version and values."""
    stored = normalise(changes, keyring)
    if expected_version is not None:
        current = q.get_settings_version(conn) or 0
        if current != expected_version:
            raise SettingsConflict(current)
    for key, value in stored.items():
        q.put_setting(conn, key=key, value=value)
    return read_settings(conn)
