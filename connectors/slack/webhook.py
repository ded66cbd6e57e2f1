"""Slack Events API -> :class:`WebhookEvent`, and Slack's request signature check.

- ``url_verification``: answer ``challenge``, enqueue nothing;
- ``message`` (plain, ``bot_message``, ``file_share``, ``thread_broadcast``...): upsert it; a thread reply
  also upserts its parent, whose fetch brings the whole thread (so a missed reply is picked up too);
- ``message_changed``: upsert the edited message (and its thread parent);
- ``message_deleted``: delete it (and re-fetch the parent of a deleted reply: its reply count changed);
- ``message_replied``: upsert the parent (whole thread);
- channel changes that touch every message's title, status or ACL (``channel_rename``,
  ``channel_archive``/``unarchive``, ``member_joined_channel``/``member_left_channel``, ``group_*``):
  upsert ``<channel>:*``, which the client's ``fetch`` expands to the whole channel.

Delivery id: the body's ``event_id``. Signature (Slack's v0 scheme): ``X-Slack-Signature:
v0=<hex HMAC-SHA256 of "v0:{X-Slack-Request-Timestamp}:{raw body}">``; requests older than five
minutes are refused to stop replays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.base import SourceType, WebhookEvent
from connectors.payload import json_object
from connectors.webhook_sig import SLACK_MAX_AGE_SECONDS, verify_slack_signature

MAX_AGE_SECONDS = SLACK_MAX_AGE_SECONDS
_CHANNEL_WIDE = {
    "channel_rename",
    "channel_archive",
    "channel_unarchive",
    "member_joined_channel",
    "member_left_channel",
    "group_rename",
    "group_archive",
    "group_unarchive",
}

Key = tuple[SourceType, str]


def verify_signature(headers: Mapping[str, str], body: bytes, secret: str, *, now: float | None = None) -> bool:
    """Slack's v0 signature plus the five-minute replay window (what ``CONNECTOR.verify_webhook`` calls)."""
    return verify_slack_signature(headers, body, secret, now=now)


def parse_webhook(headers: Mapping[str, str], body: bytes) -> WebhookEvent:
    data = json_object(body, "slack event body")
    if data.get("type") == "url_verification":
        return WebhookEvent(delivery_id=None, challenge=str(data.get("challenge") or ""))
    delivery = _str(data.get("event_id"))
    event = data.get("event")
    if not isinstance(event, Mapping):
        return WebhookEvent(delivery_id=delivery)
    kind = _str(event.get("type"))
    channel = _channel(event)
    if kind in _CHANNEL_WIDE and channel:
        return WebhookEvent(delivery_id=delivery, upserts=(("message", f"{channel}:*"),))
    if kind != "message" or not channel:
        return WebhookEvent(delivery_id=delivery)
    subtype = _str(event.get("subtype"))
    upserts: list[Key] = []
    deletes: list[Key] = []
    if subtype == "message_deleted":
        ts = _str(event.get("deleted_ts"))
        if ts:
            deletes.append(("message", f"{channel}:{ts}"))
        parent = _parent(event.get("previous_message"), ts)
        if parent:
            upserts.append(("message", f"{channel}:{parent}"))
    elif subtype in ("message_changed", "message_replied"):
        msg = event.get("message")
        ts = _str(msg.get("ts")) if isinstance(msg, Mapping) else None
        if ts:
            parent = _parent(msg, ts)
            upserts.append(("message", f"{channel}:{parent or ts}"))
            if parent and subtype == "message_changed":
                upserts.append(("message", f"{channel}:{ts}"))
    else:
        ts = _str(event.get("ts"))
        if ts:
            parent = _parent(event, ts)
            if parent:
                upserts.append(("message", f"{channel}:{parent}"))
            upserts.append(("message", f"{channel}:{ts}"))
    return WebhookEvent(delivery_id=delivery, upserts=tuple(dict.fromkeys(upserts)), deletes=tuple(deletes))


def _parent(msg: Any, ts: str | None) -> str | None:
    """The thread parent's ts of a reply; None for top-level messages."""
    if not isinstance(msg, Mapping):
        return None
    thread = _str(msg.get("thread_ts"))
    return thread if thread and thread != ts else None


def _channel(event: Mapping[str, Any]) -> str | None:
    ch = event.get("channel")
    if isinstance(ch, Mapping):
        return _str(ch.get("id"))
    return _str(ch)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None
