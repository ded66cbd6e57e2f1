"""Jira webhooks -> :class:`WebhookEvent` (which issues to re-fetch or drop).

The API layer checks the signature with :func:`verify_signature` (``CONNECTOR.verify_webhook``:
``X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>``) and dedups by delivery id
(``X-Atlassian-Webhook-Identifier``); the parser only reads the verified body. Events:

- ``jira:issue_created`` / ``jira:issue_updated`` -> upsert ``("ticket", issue.id)``;
- ``jira:issue_deleted`` -> delete ``("ticket", issue.id)``;
- ``comment_created|updated|deleted`` -> upsert of the commented issue (comments are part of it);
- ``issuelink_created|deleted`` -> upsert of the link's source issue, the side that declares the edge.

Anything else (project, sprint, board events) yields an empty event. The pipeline always re-fetches
the issue rather than trusting the webhook body, so out-of-order deliveries converge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connectors.base import MalformedPayload, SourceType, WebhookEvent
from connectors.payload import json_object
from connectors.payload import obj as _obj
from connectors.webhook_sig import header, verify_hub_signature

DELIVERY_HEADER = "x-atlassian-webhook-identifier"
_COMMENT_ISSUE_RE = re.compile(r"/issue/([^/]+)/comment/")


def verify_signature(headers: Mapping[str, str], body: bytes, secret: str) -> bool:
    """``X-Hub-Signature: sha256=<hex>`` over the raw body, as Jira Cloud admin webhooks sign it."""
    return verify_hub_signature(headers, body, secret)


def parse_webhook(headers: Mapping[str, str], body: bytes) -> WebhookEvent:
    delivery = header(headers, DELIVERY_HEADER)
    data = json_object(body, "jira webhook body")
    event = str(data.get("webhookEvent") or "")
    issue_id = _issue_id(data)
    upserts: tuple[tuple[SourceType, str], ...] = ()
    deletes: tuple[tuple[SourceType, str], ...] = ()
    if event in ("jira:issue_created", "jira:issue_updated"):
        upserts = _one(issue_id, event)
    elif event == "jira:issue_deleted":
        deletes = _one(issue_id, event)
    elif event.startswith("comment_"):
        if issue_id is None:
            match = _COMMENT_ISSUE_RE.search(str(_obj(data.get("comment")).get("self") or ""))
            issue_id = match.group(1) if match else None
        upserts = _one(issue_id, event)
    elif event.startswith("issuelink_"):
        source = _obj(data.get("issueLink")).get("sourceIssueId")
        upserts = _one(str(source) if source is not None else None, event)
    return WebhookEvent(delivery_id=delivery, upserts=upserts, deletes=deletes)


def _issue_id(data: Mapping[str, Any]) -> str | None:
    issue = _obj(data.get("issue"))
    value = issue.get("id")
    return str(value) if value not in (None, "") else None


def _one(issue_id: str | None, event: str) -> tuple[tuple[SourceType, str], ...]:
    if issue_id is None:
        raise MalformedPayload(f"{event} webhook without an issue id")
    return (("ticket", issue_id),)
