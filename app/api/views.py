"""Rows -> response structs. Secrets leave as masks; free text that came from a source (error details) is
scrubbed of the source's own secrets in case a connector ever echoed one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from app.api import schemas as s
from app.errors import HarvesterError
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec
from app.schedule import effective_schedule, next_poll_at, next_reconciliation_at
from app.secrets import Keyring, mask
from app.services.run_status import progress
from app.services.settings import minutes_to_window
from app.settings import load_settings
from connectors.redaction import Redactor

Scrub = Callable[[str | None], str | None]


def _plain(keyring: Keyring, envelope: str | None, source_id: int) -> str | None:
    if not envelope:
        return None
    try:
        return keyring.decrypt(envelope, context=f"source:{source_id}")
    except HarvesterError:
        return None  # encrypted with a key no longer configured: still "set", no tail to show


def secret_mask(keyring: Keyring, envelope: str | None, source_id: int) -> s.SecretMask:
    if not envelope:
        return s.SecretMask(set=False)
    return s.SecretMask(set=True, mask=mask(_plain(keyring, envelope, source_id)) or "••••")


def scrubber(conn: psycopg.Connection[Any], keyring: Keyring, source_id: int) -> Scrub:
    """Redacts every rendering (raw, repr, JSON, URL, base64) of the source's secrets from a text.

    Built on the first text there is to scrub: a page of runs without error details reads no source row and
    decrypts nothing (issue 15 §2). ``conn`` must still be open then (callers scrub inside their block)."""
    built: list[Redactor] = []

    def redactor() -> Redactor:
        if not built:
            row = sq.get_source(conn, id=source_id)
            secrets = (
                (_plain(keyring, row.credential_enc, source_id), _plain(keyring, row.webhook_secret_enc, source_id))
                if row
                else ()
            )
            built.append(Redactor(p for p in secrets if p))
        return built[0]

    def scrub(text: str | None) -> str | None:
        if not text:
            return text
        redact = redactor()
        return redact(text) if redact else text

    return scrub


ScheduleOf = Callable[[Any], s.ScheduleOut]


def window_out(minute_of_week: int) -> s.WindowOut:
    """The one place a stored minute of week becomes the API's ``{day, time}`` (settings and sources)."""
    return s.WindowOut(**minutes_to_window(minute_of_week))


def schedules(conn: psycopg.Connection[Any], now: datetime | None = None) -> ScheduleOf:
    """Builds each source's effective schedule and next due times from the platform settings and the
    history the schedule tick reads (ListScheduleState), with the tick's own functions (app/schedule.py)."""
    settings = load_settings(conn)
    states = {row.id: row for row in sq.list_schedule_state(conn)}
    at = now or datetime.now(UTC)

    def build(r: Any) -> s.ScheduleOut:
        plan = effective_schedule(r.sync_interval, r.reconcile_interval, r.reconcile_window, settings)
        state = states.get(r.id)  # only active sources are scheduled
        poll = reconcile = None
        if state is not None:
            poll = next_poll_at(at, state.created_at, state.first_full, state.last_poll, plan.sync_interval.value)
            reconcile = next_reconciliation_at(
                at,
                state.last_reconciliation,
                plan.reconcile_window.value,
                plan.reconcile_interval.value,
                settings.timezone,
                anchor=state.first_full,
                last_attempt=state.last_reconciliation_attempt,
            )
        return s.ScheduleOut(
            sync_interval=s.EffectiveSeconds(plan.sync_interval.value, plan.sync_interval.inherited),
            reconcile_interval=s.EffectiveSeconds(plan.reconcile_interval.value, plan.reconcile_interval.inherited),
            reconcile_window=s.EffectiveWindow(
                window_out(plan.reconcile_window.value), plan.reconcile_window.inherited
            ),
            timezone=settings.timezone,
            next_poll_at=poll,
            next_poll_mode=None if state is None else ("incremental" if state.first_full else "full"),
            next_reconciliation_at=reconcile,
        )

    return build


def source_out(keyring: Keyring, r: Any, schedule_of: ScheduleOf) -> s.SourceOut:
    last = (
        s.LastRunOut(r.last_run_id, r.last_run_state, r.last_run_finished_at, r.last_run_error_count)
        if r.last_run_id is not None
        else None
    )
    return s.SourceOut(
        id=r.id,
        name=r.name,
        connector_type=r.connector_type,
        base_url=r.base_url,
        auth_account=r.auth_account,
        auth_method=r.auth_method,
        credential=secret_mask(keyring, r.credential_enc, r.id),
        state=r.state,
        health=r.health or "idle",
        scope_mode=r.scope_mode,
        scope_list=list(r.scope_list or []),
        content_filters=dict(r.content_filters or {}),
        sync_interval=r.sync_interval,
        reconcile_interval=r.reconcile_interval,
        reconcile_window=window_out(r.reconcile_window) if r.reconcile_window is not None else None,
        authority_tier=r.authority_tier or default_authority(r.connector_type),
        authority_tier_inherited=r.authority_tier is None,
        webhook_enabled=r.webhook_enabled,
        webhook_secret=secret_mask(keyring, r.webhook_secret_enc, r.id),
        incremental_cursor=r.incremental_cursor,
        last_probe_at=r.last_probe_at,
        last_probe_status=r.last_probe_status,
        created_at=r.created_at,
        updated_at=r.updated_at,
        entity_count=int(r.entity_count or 0),
        dlq_depth=int(r.dlq_depth or 0),
        last_run=last,
        schedule=schedule_of(r),
    )


def default_authority(connector_type: str) -> str | None:
    """The manifest's default_authority a NULL ``sources.authority_tier`` means (seed 000)."""
    try:
        return get_spec(connector_type).manifest.default_authority
    except KeyError:
        return None  # a connector this build does not know: nothing to resolve against


def seconds(interval: timedelta | None) -> float | None:
    """An interval as the API renders every duration: seconds, to the millisecond."""
    return round(interval.total_seconds(), 3) if interval is not None else None


def run_out(r: rq.GetRunRow | rq.SyncRunHistoryRow, scrub: Scrub) -> s.RunOut:
    p = progress(r.state, r.entities_done, r.entities_total, r.started_at, r.finished_at)
    return s.RunOut(
        id=r.id,
        source_id=r.source_id,
        mode=r.mode,
        trigger=r.trigger,
        state=r.state,
        run_type=r.run_type,
        scope=r.scope,
        entities_done=r.entities_done,
        entities_total=r.entities_total,
        error_count=r.error_count,
        error_detail=scrub(r.error_detail),
        api_calls=r.api_calls,
        rate_limited=r.rate_limited,
        deliveries=r.deliveries,
        created_at=r.created_at,
        started_at=r.started_at,
        finished_at=r.finished_at,
        heartbeat_at=r.heartbeat_at,
        duration_seconds=seconds(r.duration),
        progress=s.ProgressOut(*p),  # RunProgress has ProgressOut's fields, in its order
    )
