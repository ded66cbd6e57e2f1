"""Helpers for the Confluence and Slack end-to-end sync tests (the Jira ones live in conftest.py).

Emulators are served on 127.0.0.1 and driven through their ``/_emulator/`` control API; webhooks are
delivered by the emulator over real HTTP to a :class:`Receiver` and go through the connector's own
``verify_webhook`` and ``parse_webhook`` before they become an items-scoped run, as the API will do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from app.registry import get_spec
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from connectors.base import WebhookEvent
from connectors.emulators.kit import EmulatorApp, Request, Response, RunningEmulator, serve

TOKEN = "emulator-token-0001"
WEBHOOK_SECRET = "webhook-secret-0001"


@dataclass
class Emulator:
    """A served emulator app plus a client for its control API."""

    running: RunningEmulator
    app: Any
    control: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.control = httpx.Client(base_url=self.running.base_url, timeout=30)

    @property
    def base_url(self) -> str:
        return self.running.base_url

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self.control.request(method, path, **kwargs)
        resp.raise_for_status()
        return resp.json() if resp.content else None

    def fault(self, **spec: Any) -> None:
        self.call("POST", "/_emulator/faults", json=spec)

    def clear_faults(self) -> None:
        self.call("DELETE", "/_emulator/faults")

    def stats(self) -> dict[str, Any]:
        return dict(self.call("GET", "/_emulator/stats"))

    def reset_stats(self) -> None:
        self.call("DELETE", "/_emulator/stats")

    def close(self) -> None:
        self.control.close()
        self.running.stop()


@contextmanager
def served(app: EmulatorApp) -> Iterator[Emulator]:
    emulator = Emulator(serve(app, "127.0.0.1", 0), app)
    try:
        yield emulator
    finally:
        emulator.close()


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


class Receiver:
    """A webhook endpoint on 127.0.0.1 that keeps every delivery (what the API's endpoint will get)."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        app = EmulatorApp()
        app.route("POST", r"/hook")(self._take)
        self._running = serve(app, "127.0.0.1", 0)
        self.url = f"{self._running.base_url}/hook"

    def _take(self, req: Request) -> Response:
        with self._lock:
            self.deliveries.append(Delivery(dict(req.headers), req.body))
        return Response(200, {"ok": True})

    def take_all(self) -> list[Delivery]:
        with self._lock:
            out, self.deliveries = self.deliveries, []
        return out

    def close(self) -> None:
        self._running.stop()


def add_source(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    connector_type: str,
    base_url: str,
    *,
    scope: Sequence[Any] = (),
    filters: dict[str, bool] | None = None,
    name: str | None = None,
) -> int:
    source_id = create_source(
        conn,
        keyring,
        NewSource(
            name=name or connector_type,
            connector_type=connector_type,
            base_url=base_url,
            credential=TOKEN,
            webhook_secret=WEBHOOK_SECRET,
            webhook_enabled=True,
            scope_mode="selected" if scope else "all",
            scope_list=scope,
            content_filters=filters or {},
        ),
    )
    conn.commit()
    return source_id


def events_to_scope(connector_type: str, deliveries: list[Delivery]) -> dict[str, Any]:
    """Verify and parse deliveries with the connector's own code -> the ``items`` scope of one run.

    Upserts and deletes both become items: the run fetches each identity, and the connector answers
    ItemGone for what no longer exists, which soft-deletes it.
    """
    spec = get_spec(connector_type)
    items: list[dict[str, str]] = []
    for d in deliveries:
        assert spec.verify_webhook(d.headers, d.body, WEBHOOK_SECRET), "emulator signature must verify"
        assert not spec.verify_webhook(d.headers, d.body, "another-secret")
        event: WebhookEvent = spec.parse_webhook(d.headers, d.body)
        for source_type, sid in (*event.upserts, *event.deletes):
            item = {"source_type": source_type, "source_entity_id": sid}
            if item not in items:
                items.append(item)
    return {"kind": "items", "items": items}


def live_ids(conn: psycopg.Connection[Any], source_id: int) -> set[str]:
    rows = conn.execute("select source_entity_id from live_entities where source_id = %s", (source_id,)).fetchall()
    return {r[0] for r in rows}


def entity(conn: psycopg.Connection[Any], source_id: int, sid: str) -> dict[str, Any] | None:
    """One entities row (deleted or not) as a dict, or None."""
    cur = conn.execute(
        "select source_entity_id, title, body, acl_principals, deleted_at, status, metadata from entities "
        "where source_id = %s and source_entity_id = %s",
        (source_id, sid),
    )
    row = cur.fetchone()
    if row is None:
        return None
    names = [c.name for c in cur.description or []]
    return dict(zip(names, row, strict=True))


def dead_letters(conn: psycopg.Connection[Any], source_id: int) -> dict[str, tuple[str, int]]:
    rows = conn.execute(
        "select source_entity_id, reason, attempts from dead_letters where source_id = %s", (source_id,)
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def edges(conn: psycopg.Connection[Any], source_id: int, relation: str) -> set[tuple[str, str]]:
    rows = conn.execute(
        "select e.source_entity_id, x.target_source_entity_id from entity_edges x "
        "join entities e on e.id = x.from_entity_id where e.source_id = %s and x.relation = %s",
        (source_id, relation),
    ).fetchall()
    return {(r[0], r[1]) for r in rows}
