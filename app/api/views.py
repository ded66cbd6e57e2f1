"""Rows -> response structs. Secrets leave as masks; free text that came from a source (error details) is
scrubbed of the source's own secrets in case a connector ever echoed one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

from app.api import schemas as s
from app.errors import HarvesterError
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec
from app.secrets import Keyring, mask
from app.services.run_status import progress
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
    """Redacts every rendering (raw, repr, JSON, URL, base64) of the source's secrets from a text."""
    row = sq.get_source(conn, id=source_id)
    redactor = Redactor(
        p
        for p in (
            _plain(keyring, row.credential_enc, source_id) if row else None,
            _plain(keyring, row.webhook_secret_enc, source_id) if row else None,
        )
        if p
    )

    def scrub(text: str | None) -> str | None:
        if text is None or not redactor:
            return text
        return redactor(text)

    return scrub


def source_out(keyring: Keyring, r: Any) -> s.SourceOut:
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
        reconcile_window=r.reconcile_window,
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
        progress=s.ProgressOut(p.done, p.total, p.percent, p.elapsed_seconds, p.rate_per_second, p.eta_seconds),
    )
