"""Platform settings read from platform_settings (seed 001 schedule defaults; per-source NULL inherits)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from app.queries import settings as q


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
    takeover_grace: int  # seconds after stale_run_after before a run is taken over (issue 11)
    webhook_dedupe_ttl: int
    search_include_drafts: bool
    version: int


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
        takeover_grace=int(values["takeover_grace"]),
        webhook_dedupe_ttl=int(values["webhook_dedupe_ttl"]),
        search_include_drafts=bool(values["search_include_drafts"]),
        version=version,
    )
