"""The tick follows seed 001 "Расписание": first run is a full sync on connect, reconciliation only in
its window, webhook runs never reset the polling clock, failed reconciliations are owed (issue 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from app.jobs.periodic import tick_once
from app.schedule import last_window
from app.secrets import Keyring
from tests.conftest import as_worker
from tests.sync.conftest import Jira, add_source

SUNDAY_0300 = 6 * 1440 + 180


@pytest.fixture()
def worker_env(monkeypatch: pytest.MonkeyPatch, fresh_db_url: str, keyring: Keyring, tmp_path: Path) -> None:
    as_worker(monkeypatch, fresh_db_url, keyring.current.hex(), tmp_path / "data")


def _runs(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[str, str]]:
    rows = probe.execute("select mode, trigger from sync_runs where source_id = %s order by id", (source_id,))
    return [(r[0], r[1]) for r in rows]


def _insert_run(
    probe: psycopg.Connection[Any], source_id: int, mode: str, trigger: str, state: str, at: datetime, scope: Any = None
) -> None:
    probe.execute(
        "insert into sync_runs (source_id, mode, trigger, state, created_at, finished_at, scope) "
        "values (%s, %s, %s, %s, %s, %s, %s)",
        (source_id, mode, trigger, state, at, at + timedelta(minutes=1), Jsonb(scope) if scope else None),
    )


def _tick(now: datetime) -> dict[str, int]:
    return tick_once(now, defer=lambda conn, run_id: None)


def test_a_new_source_gets_no_scheduled_reconciliation_and_waits_for_connect(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    now = datetime.now(UTC)

    counts = _tick(now)

    assert counts["reconciliation"] == 0 and counts["incremental"] == 0 and counts["full"] == 0
    assert _runs(probe, source_id) == []
    # Nobody connected it within a polling interval: the schedule starts the first full sync itself.
    assert _tick(now + timedelta(minutes=16))["full"] == 1
    assert _runs(probe, source_id) == [("full", "schedule")]


def test_the_first_reconciliation_waits_for_the_window_after_the_first_full_sync(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '\"UTC\"' where key = 'timezone'")
    wednesday = datetime(2026, 11, 25, 10, tzinfo=UTC)
    _insert_run(probe, source_id, "full", "connect", "succeeded", wednesday)

    assert _tick(wednesday + timedelta(hours=1))["reconciliation"] == 0
    probe.execute(
        "update sync_runs set state = 'succeeded', started_at = created_at, finished_at = created_at "
        "where source_id = %s and state = 'queued'",
        (source_id,),
    )
    assert _tick(datetime(2026, 11, 29, 3, 5, tzinfo=UTC))["reconciliation"] == 1  # Sunday 03:05


def test_webhook_runs_do_not_reset_the_polling_clock(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    now = datetime.now(UTC)
    _insert_run(probe, source_id, "reconciliation", "schedule", "succeeded", now - timedelta(hours=1))
    _insert_run(probe, source_id, "incremental", "schedule", "succeeded", now - timedelta(minutes=20))
    # Webhook deliveries keep arriving: an items-scoped incremental run a minute ago.
    items = {"kind": "items", "items": [{"source_type": "ticket", "source_entity_id": "10001"}]}
    _insert_run(probe, source_id, "incremental", "webhook", "succeeded", now - timedelta(minutes=1), items)

    assert _tick(now)["incremental"] == 1
    assert _runs(probe, source_id)[-1] == ("incremental", "schedule")


def test_a_failed_scheduled_reconciliation_does_not_count_for_its_window(
    worker_env: None, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '\"UTC\"' where key = 'timezone'")
    now = datetime(2026, 11, 29, 5, tzinfo=UTC)
    slot = last_window(now, SUNDAY_0300, 604800, "UTC")
    _insert_run(probe, source_id, "full", "connect", "succeeded", slot - timedelta(days=20))
    _insert_run(probe, source_id, "reconciliation", "schedule", "succeeded", slot - timedelta(days=7))
    _insert_run(probe, source_id, "reconciliation", "schedule", "failed", slot + timedelta(minutes=1))

    assert _tick(now)["reconciliation"] == 1
    assert _runs(probe, source_id)[-1] == ("reconciliation", "schedule")
