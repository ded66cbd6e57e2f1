"""Webhook intake (seed 000 "Реал-тайм"): verify the HMAC, dedupe on the signed body, enqueue; never sync inline.

The request path only reads the source, checks the signature with the connector's own verifier, records
the delivery's key in the unlogged ``webhook_deliveries`` table (TTL from settings) and defers the job
``apply_webhook`` (app/jobs/webhooks.py), which starts an items-scoped incremental run. The delivery row
and the job commit together or not at all from the sender's point of view: the job is deferred before
the delivery row commits, so a failure answers 5xx and the sender's retry is not mistaken for a replay.

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
Defer = Callable[[int, list[list[str]], list[list[str]]], None]


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
    defer(source_id, [list(k) for k in event.upserts], [list(k) for k in event.deletes])
    return Intake("accepted", delivery, items=len(event.upserts) + len(event.deletes))
