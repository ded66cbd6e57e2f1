"""Opening a source's connector, probing it, asking it for a delta (seed 001: probe, watchdog).

No commits here: the job, request handler or CLI command that calls these owns the transaction.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import psycopg

from app.queries import sources as sq
from app.redact import register_secret
from app.registry import get_spec
from app.secrets import Keyring
from connectors.base import CallStats, Connector, SourceConfig, SourceError
from connectors.http import HttpError

log = logging.getLogger(__name__)


def source_config(row: sq.GetSourceRow, keyring: Keyring) -> SourceConfig:
    """The connector's view of a source row, with its credential decrypted."""
    credential = keyring.decrypt(row.credential_enc, context=f"source:{row.id}") if row.credential_enc else None
    register_secret(credential)  # this process now holds it: keep it out of its log lines
    return SourceConfig(
        source_id=row.id,
        base_url=row.base_url or "",
        credential=credential,
        scope_mode="selected" if row.scope_mode == "selected" else "all",
        scope_list=tuple(row.scope_list or ()),
        content_filters=dict(row.content_filters or {}),
    )


def open_connector(source: sq.GetSourceRow, keyring: Keyring, stats: CallStats | None = None) -> Connector:
    """The source's connector; the caller closes it. Raises KeyError for an unknown connector type."""
    return get_spec(source.connector_type).create(source_config(source, keyring), stats or CallStats())


def probe(conn: psycopg.Connection[Any], source: sq.GetSourceRow, keyring: Keyring) -> str:
    """Probe the source and record the result on its row (in the caller's transaction)."""
    status = "unreachable"
    try:
        connector = open_connector(source, keyring)
        try:
            status = connector.probe()
        finally:
            connector.close()
    except (SourceError, KeyError):
        status = "unreachable"
    sq.set_probe_result(conn, id=source.id, status=status)
    return status


def has_delta(source: sq.GetSourceRow, keyring: Keyring) -> bool:
    """Watchdog's cheap check (seed 001): only a found delta starts a run. A check that cannot tell (the
    source unreachable, an answer that is not a search page) counts as a delta (decision 164): the
    watchdog's one run of the silence episode then finds out, and if it fails it fails in the journal with
    its reason. Read as "nothing new", the failure kept a silent source silent and said nothing."""
    cursor = source.incremental_cursor or {}
    if not cursor.get("updated"):
        return True
    since = datetime.fromisoformat(cursor["updated"])
    try:
        connector = open_connector(source, keyring)
        try:
            return bool(connector.has_delta(since))
        finally:
            connector.close()
    except (SourceError, HttpError) as exc:
        log.warning("source %s: the watchdog's delta check could not tell (%s); its run will find out", source.id, exc)
        return True
