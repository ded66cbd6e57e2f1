"""Vector-projection fixtures: the sync suite's emulator/database fixtures plus run and load helpers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from app.pipeline.load import Batch, load_batch
from app.pipeline.run import RunOutcome, execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from app.vector.stage import VectorStage
from connectors.base import Acl, Entity
from tests.sync.conftest import add_source, conn, jira, jira_factory, keyring, probe

__all__ = ["add_source", "conn", "jira", "jira_factory", "keyring", "probe"]


def sync_with(
    conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, mode: str, stage: VectorStage
) -> tuple[RunOutcome, rq.GetRunRow]:
    """One run through the real pipeline with the vector stage plugged in, as the worker does it."""
    run_id = start_run(conn, source_id, mode=mode, trigger="manual")
    conn.commit()
    outcome = execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, chunks=stage)
    run = rq.get_run(conn, id=run_id)
    conn.commit()
    assert run is not None
    return outcome, run


def plain_source(conn: psycopg.Connection[Any], keyring: Keyring, name: str = "corpus") -> int:
    """A source row for entities loaded directly through ``load_batch`` (no connector runs)."""
    source_id = create_source(
        conn, keyring,
        NewSource(name=name, connector_type="jira", base_url="http://127.0.0.1:9", credential="unused"),
    )
    conn.commit()
    return source_id


def entity(
    n: int,
    text: str,
    principals: Sequence[str] | None,
    *,
    status: str = "final",
    title: str | None = None,
    source_type: str = "ticket",
) -> Entity:
    return Entity(
        source_type=source_type,  # type: ignore[arg-type]
        source_entity_id=str(n),
        status=status,  # type: ignore[arg-type]
        title=title if title is not None else f"Item {n}",
        text=text,
        url=f"https://example.test/{n}",
        author=None,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        updated_at=datetime(2024, 1, 1, tzinfo=UTC),
        acl=Acl(tuple(principals) if principals is not None else None),
        natural_key=f"IT-{n}",
    )


def load_entities(
    conn: psycopg.Connection[Any], source_id: int, entities: Sequence[Entity], stage: VectorStage, page: int = 500
) -> None:
    """Load through the pipeline's own page loader (UpsertEntities + the vector stage), page by page."""
    for start in range(0, len(entities), page):
        load_batch(
            conn, source_id=source_id, run_id=0, batch=Batch(entities=list(entities[start : start + page])),
            record_seen=False, chunks=stage,
        )
        conn.commit()
