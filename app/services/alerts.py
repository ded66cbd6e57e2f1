"""Failure alerts (seed 000: "a failed run raises a notification through the same channel as the
platform's other alerts"; issue 10 §4): which incidents are open, and queueing their notifications.

An incident is one row of ``alert_incidents`` per (kind, subject) while its condition holds; opening one
queues a ``send_alert`` job per interested channel, and so does resolving it (the recovery message). The
conditions are read in one query (``ListAlertConditions``), so ``evaluate_alerts`` is idempotent: the
periodic tick calls it every minute and only changes send anything. ``notify_run_failed`` is the fast
path at the end of a failed run. Neither commits: the caller's transaction holds the incident and its
jobs together, so a crash never leaves an incident without its notification.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from app.queries import alerts as aq
from app.queries import settings as sq

log = logging.getLogger(__name__)

WORKER_GONE_AFTER = 300  # seconds without a heartbeat: the same "online" rule as GET /workers


@dataclass(frozen=True, slots=True)
class AlertSettings:
    channels: list[dict[str, Any]]
    dlq_threshold: int


def alert_settings(conn: psycopg.Connection[Any]) -> AlertSettings:
    values = {r.key: r.value for r in sq.list_settings(conn)}
    channels = values.get("alert_channels") or []
    return AlertSettings(
        channels=[c for c in channels if isinstance(c, dict)],
        dlq_threshold=int(values.get("alert_dlq_threshold") or 100),
    )


def _queue(conn: psycopg.Connection[Any], settings: AlertSettings, incident_id: int, kind: str, event: str) -> int:
    queued = 0
    for index, channel in enumerate(settings.channels):
        wanted = channel.get("events")
        if wanted and kind not in wanted:
            continue
        aq.defer_alert(conn, args={"incident_id": incident_id, "event": event, "channel": index})
        queued += 1
    return queued


def open_incident(
    conn: psycopg.Connection[Any], settings: AlertSettings, kind: str, subject: str, detail: str | None
) -> int | None:
    """Opens (kind, subject) and queues its alert; None when it was open already (no second alert)."""
    with conn.transaction():
        incident_id = aq.open_incident(conn, kind=kind, subject=subject, detail=(detail or "")[:1000] or None)
        if incident_id is None:
            return None
        queued = _queue(conn, settings, incident_id, kind, "opened")
    log.warning(
        "alert opened: %s on %s: %s",
        kind,
        subject,
        detail,
        extra={"incident_id": incident_id, "alert_kind": kind, "subject": subject, "channels": queued},
    )
    return incident_id


def resolve_incident(conn: psycopg.Connection[Any], settings: AlertSettings, incident_id: int, kind: str) -> bool:
    with conn.transaction():
        if aq.resolve_incident(conn, id=incident_id) is None:
            return False
        queued = _queue(conn, settings, incident_id, kind, "resolved")
    log.info("alert resolved: %s", kind, extra={"incident_id": incident_id, "alert_kind": kind, "channels": queued})
    return True


def notify_run_failed(conn: psycopg.Connection[Any], run_id: int) -> int | None:
    """At the end of a failed run: open the source's run_failed incident (one alert per incident)."""
    run = aq.get_run_for_alert(conn, id=run_id)
    if run is None or run.state != "failed":
        return None
    detail = f"run {run.id} failed: {run.error_detail or 'no reason recorded'}"
    return open_incident(conn, alert_settings(conn), "run_failed", f"source:{run.source_id}", detail)


def evaluate_alerts(conn: psycopg.Connection[Any], now: datetime) -> dict[str, int]:
    """Open incidents for conditions true now, resolve those that cleared; returns the counts."""
    settings = alert_settings(conn)
    current = {
        (c.kind, str(c.subject)): c.detail
        for c in aq.list_alert_conditions(
            conn, dlq_threshold=settings.dlq_threshold, now=now, worker_silence=WORKER_GONE_AFTER
        )
    }
    counts = {"opened": 0, "resolved": 0}
    open_now = {(i.kind, i.subject): i.id for i in aq.list_open_incidents(conn)}
    for (kind, subject), incident_id in open_now.items():
        if (kind, subject) not in current and resolve_incident(conn, settings, incident_id, kind):
            counts["resolved"] += 1
    for (kind, subject), detail in current.items():
        if (kind, subject) not in open_now and open_incident(conn, settings, kind, subject, detail) is not None:
            counts["opened"] += 1
    return counts
