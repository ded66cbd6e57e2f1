"""Confluence webhooks -> :class:`WebhookEvent` (which pages to re-fetch or drop).

Accepted bodies: Confluence Server/DC and Cloud webhook JSON, ``{"event"|"webhookEvent": "page_created",
"page": {"id": ...}, "timestamp": ...}``. ``page_created|updated|restored|moved|archived|unarchived``
and ``content_permissions_updated`` re-fetch the page (the fetch recomputes its inherited ACL);
``page_removed|trashed`` drop it. Comment and attachment events carry the page as ``comment.container``
/ ``attachment.container``: the page is re-fetched. Anything else is acknowledged with no work.

Signature: ``X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>`` (see the manifest); the
delivery id is the ``X-Atlassian-Webhook-Identifier`` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.base import SourceType, WebhookEvent
from connectors.payload import json_object
from connectors.webhook_sig import header, verify_hub_signature

_UPSERT = {
    "page_created",
    "page_updated",
    "page_restored",
    "page_moved",
    "page_archived",
    "page_unarchived",
    "content_permissions_updated",
    "comment_created",
    "comment_updated",
    "comment_removed",
    "attachment_created",
    "attachment_updated",
    "attachment_removed",
}
_DELETE = {"page_removed", "page_trashed"}
# Restrictions are inherited (a restricted parent hides its children): these change the ACL of every
# descendant, so the whole subtree is re-read ("<page id>:*", expanded by the client's fetch).
_SUBTREE = {"content_permissions_updated", "page_moved"}


def verify_signature(headers: Mapping[str, str], body: bytes, secret: str) -> bool:
    """``X-Hub-Signature: sha256=<hex>`` over the raw body (what ``CONNECTOR.verify_webhook`` calls)."""
    return verify_hub_signature(headers, body, secret)


def parse_webhook(headers: Mapping[str, str], body: bytes) -> WebhookEvent:
    data = json_object(body, "confluence webhook body")
    delivery = header(headers, "x-atlassian-webhook-identifier")
    event = str(data.get("event") or data.get("webhookEvent") or "")
    page_id = _page_id(data)
    if page_id is None:
        return WebhookEvent(delivery_id=delivery)
    ids: tuple[tuple[SourceType, str], ...] = (("page", page_id),)
    if event in _DELETE:
        return WebhookEvent(delivery_id=delivery, deletes=ids)
    if event in _SUBTREE:
        return WebhookEvent(delivery_id=delivery, upserts=(*ids, ("page", f"{page_id}:*")))
    if event in _UPSERT or not event:
        return WebhookEvent(delivery_id=delivery, upserts=ids)
    return WebhookEvent(delivery_id=delivery)


def _page_id(data: Mapping[str, Any]) -> str | None:
    for path in (
        ("page", "id"),
        ("comment", "container", "id"),
        ("attachment", "container", "id"),
        ("content", "id"),
    ):
        node: Any = data
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, str | int) and str(node):
            return str(node)
    return None
