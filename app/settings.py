"""Platform settings read from platform_settings (seed 001 schedule defaults; per-source NULL inherits)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from app.queries import settings as q
from connectors.directories import DEFAULT_DIRECTORY_TTL
from connectors.fanout import DEFAULT_FANOUT
from connectors.http import DEFAULT_RESPONSE_MAX_BYTES, DEFAULT_RESPONSE_MAX_SECONDS

# What migration 44 seeds; read while a database between upgrades lacks the row.
DEFAULT_LOCK_WAIT_MAX = 60


@dataclass(frozen=True, slots=True)
class PlatformSettings:
    sync_interval: int
    reconcile_interval: int
    reconcile_window: int
    probe_interval: int
    watchdog_silence: int
    timezone: str
    mass_delete_share: float
    incremental_lookback: int
    max_deliveries: int
    stale_run_after: int
    lane_wait_max: int  # seconds a run waits queued for a held lane before it fails (issue 10)
    takeover_grace: int  # seconds after stale_run_after before a run is taken over (issue 11)
    webhook_dedupe_ttl: int
    search_include_drafts: bool
    completeness_tolerance: float
    rate_limit_patience: int
    fetch_fanout: int  # requests of one listing page a connector sends at once (connectors.fanout)
    directory_ttl: int  # seconds a directory read whole serves later by-id runs (connectors.directories); 0 = off
    # Seconds a run's statement waits for a lock another session holds before the run fails (decision 159).
    lock_wait_max: int
    # One source answer's bounds (decision 162): MiB of its decoded body, seconds from request to last byte.
    response_max_mib: int
    response_max_seconds: int
    version: int

    @property
    def response_max_bytes(self) -> int:
        return self.response_max_mib * 1024 * 1024


def load_settings(conn: psycopg.Connection[Any]) -> PlatformSettings:
    values = {r.key: r.value for r in q.list_settings(conn)}
    version = q.get_settings_version(conn) or 0
    return PlatformSettings(
        sync_interval=int(values["sync_interval"]),
        reconcile_interval=int(values["reconcile_interval"]),
        reconcile_window=int(values["reconcile_window"]),
        probe_interval=int(values["probe_interval"]),
        watchdog_silence=int(values["watchdog_silence"]),
        timezone=str(values["timezone"]),
        mass_delete_share=float(values["mass_delete_share"]),
        incremental_lookback=int(values["incremental_lookback"]),
        max_deliveries=int(values["max_deliveries"]),
        stale_run_after=int(values["stale_run_after"]),
        lane_wait_max=int(values["lane_wait_max"]),
        takeover_grace=int(values["takeover_grace"]),
        webhook_dedupe_ttl=int(values["webhook_dedupe_ttl"]),
        search_include_drafts=bool(values["search_include_drafts"]),
        completeness_tolerance=float(values.get("completeness_tolerance", 0.01)),
        rate_limit_patience=int(values.get("rate_limit_patience", 600)),
        fetch_fanout=int(values.get("fetch_fanout", DEFAULT_FANOUT)),
        directory_ttl=int(values.get("directory_ttl", DEFAULT_DIRECTORY_TTL)),
        lock_wait_max=int(values.get("lock_wait_max", DEFAULT_LOCK_WAIT_MAX)),
        # What migration 45 seeds, the HTTP client's own defaults.
        response_max_mib=int(values.get("response_max_mib", DEFAULT_RESPONSE_MAX_BYTES // (1024 * 1024))),
        response_max_seconds=int(values.get("response_max_seconds", DEFAULT_RESPONSE_MAX_SECONDS)),
        version=version,
    )
