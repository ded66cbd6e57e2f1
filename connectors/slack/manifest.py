"""What the Slack connector declares to the platform (scope kinds, filters, errors, webhooks)."""

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
    # Slack signs "v0:{X-Slack-Request-Timestamp}:{raw body}" (not the body alone), so the pipeline must
    # call connectors.slack.webhook.verify_signature(headers, body, secret); deliveries older than
    # 5 minutes are refused (replay). The delivery id is the body's "event_id" (no header carries it).
    webhook=WebhookSpec(
        signature_header="X-Slack-Signature",
        scheme="v0=<hex hmac-sha256 of 'v0:' + X-Slack-Request-Timestamp + ':' + raw body>",
        delivery_id_header=None,
    ),
)
