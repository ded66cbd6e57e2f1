"""What the Slack connector declares to the platform (scope kinds, filters, errors, webhooks).

Identities: a message is ``source_entity_id = "<channel id>:<ts>"`` (``C0123ABC:1712345678.000200``).

The pseudo-id ``"<channel id>:*"`` means "every message of that channel" and is never an entity:

- the client emits ``ItemError("message", "C0123ABC:*", ...)`` when a whole channel cannot be read
  (``not_in_channel``, ``channel_not_found``, retries exhausted), so the dead-letter queue holds one row
  per broken channel rather than nothing (its messages were never listed, so they have no ids);
- channel-wide webhook events (rename, archive, membership changes) ask the pipeline to upsert
  ``("message", "C0123ABC:*")``;
- ``fetch([("message", "C0123ABC:*")])`` (an items-scoped run: DLQ retry or webhook) re-reads the
  channel, yields a RawItem per real message, then ``ItemGone("message", "C0123ABC:*")`` to remove the
  channel's dead letter. No RawItem, and so no ``entities`` row, ever has a ``*`` id: the mapping
  refuses a ``ts`` that is not Slack digits-dot-digits.
"""

from __future__ import annotations

from connectors.base import ContentFilter, ErrorClassification, Manifest, WebhookSpec

MANIFEST = Manifest(
    connector_type="slack",
    display_name="Slack (Web API + Events API)",
    source_types=("message",),
    # scope_list names channel ids (C0123...) or names (#general / general);
    # scope_mode=selected: only those; scope_mode=all: every channel the token sees except those.
    scope_kinds=("channel",),
    content_filters=(
        ContentFilter("private_channels", "Include private channels the app is a member of", True),
        ContentFilter("direct_messages", "Include DMs and group DMs", False),
        ContentFilter("bot_messages", "Include messages posted by bots and apps", True),
        ContentFilter("archived_channels", "Include archived channels", True),
    ),
    default_authority="normal",
    auth_methods=("static_token", "oauth"),
    # HTTP errors use the default table; Slack's HTTP 200 {"ok": false, "error"} bodies are classified
    # by connectors.slack.client.classify_slack_error (invalid_auth -> auth, channel_not_found -> not_found,
    # missing_scope/not_in_channel -> permission, ratelimited -> transient).
    errors=ErrorClassification(),
    # Slack signs "v0:{X-Slack-Request-Timestamp}:{raw body}" (not the body alone), so the API must call
    # CONNECTOR.verify_webhook(headers, body, secret) (connectors.webhook_sig); deliveries older than
    # 5 minutes are refused (replay). The delivery id is the body's "event_id" (no header carries it).
    webhook=WebhookSpec(
        signature_header="X-Slack-Signature",
        scheme="v0=<hex hmac-sha256 of 'v0:' + X-Slack-Request-Timestamp + ':' + raw body>",
        delivery_id_header=None,
    ),
)
