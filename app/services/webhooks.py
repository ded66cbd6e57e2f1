"""Webhook intake (seed 000 "Реал-тайм"): verify the HMAC, dedupe on the signed body, enqueue; never sync inline.

The request path only reads the source, checks the signature with the connector's own verifier, records
the delivery's key in the unlogged ``webhook_deliveries`` table (TTL from settings), adds the delivery's
items to the source's pending set (``webhook_pending``) and defers the job ``apply_webhook``
(app/jobs/webhooks.py) unless one is already waiting for the source; that job takes the whole pending set
into one items-scoped incremental run (decision 145: a burst of deliveries during a run becomes one run
after it, not one run each). The delivery row, its items and the job commit together or not at all from
the sender's point of view, so a failure answers 5xx and the sender's retry is not mistaken for a replay.

The de-duplication key is the SHA-256 of the verified body, never a header the signature does not cover
(issue 11): an ``X-Atlassian-Webhook-Identifier`` can be changed by anyone replaying a captured signed
body, so keyed on it one capture would be processed once per fresh id. A source's genuine retry resends
the same body (Slack's ``event_id``, Atlassian's ``timestamp`` are inside it), so it is still a replay.
The sender's own id is only echoed back in the answer.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from app.queries import sources as sq
from app.queries import webhooks as wq
from app.registry import get_spec
from app.secrets import Keyring
from connectors.base import ConnectorSpec, MalformedPayload, WebhookEvent

Verifier = Callable[[Mapping[str, str], bytes, str], bool]
Defer = Callable[[int], None]  # queue apply_webhook(source_id) in the caller's transaction

# Advisory lock class of a source's pending set (the two-int form, beside the lanes' "HVST").
PENDING_LOCK_CLASS = 0x48565750  # "HVWP"
# Items one webhook run takes at most; what is left waits for the next run (a job is deferred for it).
MAX_RUN_ITEMS = 1000


class WebhookRefused(Exception):
    """The delivery is refused; nothing was stored. ``status`` is the HTTP answer."""

    def __init__(self, status: int, slug: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Intake:
    outcome: Literal["accepted", "duplicate", "ignored", "challenge"]
    delivery_id: str | None = None
    challenge: str | None = None
    items: int = 0


def verifier_of(spec: ConnectorSpec) -> Verifier | None:
    """The connector's signature check: ``CONNECTOR.verify_webhook``, else its webhook module's function."""
    found = getattr(spec, "verify_webhook", None)
    if found is None:
        module = importlib.import_module(spec.parse_webhook.__module__)
        found = getattr(module, "verify_signature", None)
    return found if callable(found) else None


def dedupe_key(body: bytes) -> str:
    """What ``webhook_deliveries`` remembers: a hash of the signed content only."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _sender_id(spec: ConnectorSpec, event: WebhookEvent, headers: Mapping[str, str], body: bytes) -> str:
    """The delivery id the sender gave (body or header), echoed back for its logs; the key otherwise."""
    if event.delivery_id:
        return event.delivery_id[:200]
    hook = spec.manifest.webhook
    if hook is not None and hook.delivery_id_header:
        wanted = hook.delivery_id_header.lower()
        for key, value in headers.items():
            if key.lower() == wanted and value:
                return value[:200]
    return dedupe_key(body)


def receive(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    source_id: int,
    headers: Mapping[str, str],
    body: bytes,
    defer: Defer,
) -> Intake:
    """Verify, dedupe and enqueue one delivery in the caller's transaction (commit after this returns)."""
    source = sq.get_source(conn, id=source_id)
    if source is None:
        raise WebhookRefused(404, "not-found", "source does not exist")
    if source.state != "active":
        raise WebhookRefused(409, "source-not-active", f"the source is {source.state}; its webhooks are refused")
    if not source.webhook_enabled or not source.webhook_secret_enc:
        raise WebhookRefused(403, "webhooks-disabled", "webhooks are not enabled for this source")
    try:
        spec = get_spec(source.connector_type)
    except KeyError:
        raise WebhookRefused(404, "not-found", "the source's connector is not installed") from None
    verify = verifier_of(spec)
    secret = keyring.decrypt(source.webhook_secret_enc, context=f"source:{source_id}")
    if verify is None or not verify(headers, body, secret):
        raise WebhookRefused(401, "bad-signature", "the webhook signature is missing or does not match")
    try:
        event: WebhookEvent = spec.parse_webhook(headers, body)
    except MalformedPayload:
        raise WebhookRefused(
            422, "malformed-webhook", "the webhook body is not a delivery this connector reads"
        ) from None
    if event.challenge is not None:
        return Intake("challenge", challenge=event.challenge)
    delivery = _sender_id(spec, event, headers, body)
    if wq.record_delivery(conn, source_id=source_id, delivery_id=dedupe_key(body)) is None:
        return Intake("duplicate", delivery)
    if not event.upserts and not event.deletes:
        return Intake("ignored", delivery)
    items = scope_items([list(k) for k in event.upserts], [list(k) for k in event.deletes])
    announce(conn, source_id, items, defer)
    return Intake("accepted", delivery, items=len(event.upserts) + len(event.deletes))


def scope_items(upserts: list[list[str]], deletes: list[list[str]]) -> list[dict[str, str]]:
    """A delivery's items in a run scope's shape, each once, in order. Deleted items are fetched like the
    others: the connector answers ItemGone and the loader soft-deletes them."""
    seen: dict[tuple[str, str], None] = {}
    for source_type, source_entity_id in [*upserts, *deletes]:
        seen[(str(source_type), str(source_entity_id))] = None
    return [{"source_type": t, "source_entity_id": i} for t, i in seen]


def announce(conn: psycopg.Connection[Any], source_id: int, items: list[dict[str, str]], defer: Defer) -> None:
    """Add ``items`` to the source's pending set and defer apply_webhook unless a job already waits to take
    it, in the caller's transaction. Under the set's lock until commit: a job that starts meanwhile takes
    the set only after these items are in it."""
    wq.lock_webhook_pending(conn, lock_class=PENDING_LOCK_CLASS, source_id=source_id)
    wq.add_webhook_pending(conn, source_id=source_id, items=items)
    if not wq.webhook_job_waiting(conn, source_id=source_id):
        defer(source_id)


def take_pending(conn: psycopg.Connection[Any], source_id: int) -> list[dict[str, str]]:
    """Remove and return the source's pending items (oldest first, at most MAX_RUN_ITEMS) in the caller's
    transaction; rolled back, they are pending again. Holds the set's lock until the transaction ends."""
    wq.lock_webhook_pending(conn, lock_class=PENDING_LOCK_CLASS, source_id=source_id)
    rows = wq.take_webhook_pending(conn, source_id=source_id, max_items=MAX_RUN_ITEMS)
    return [{"source_type": r.source_type, "source_entity_id": r.source_entity_id} for r in rows]
