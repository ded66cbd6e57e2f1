"""What the Confluence connector declares to the platform (scope kinds, filters, errors, webhooks)."""

from __future__ import annotations

from connectors.atlassian import WEBHOOK
from connectors.base import ContentFilter, ErrorClassification, Manifest

MANIFEST = Manifest(
    connector_type="confluence",
    display_name="Confluence (Cloud REST v2/v1, Server/Data Center v1)",
    source_types=("page",),
    # scope_mode=selected: the listed space keys only; scope_mode=all: every space except the listed ones.
    scope_kinds=("space",),
    content_filters=(
        ContentFilter("comments", "Include page comments as text sections", True),
        ContentFilter("attachments", "List attachments (binaries as links) in metadata", True),
        ContentFilter("archived", "Include archived pages (status archived)", True),
        ContentFilter("personal_spaces", "Include personal (~user) spaces when scope_mode is all", False),
    ),
    default_authority="normal",
    auth_methods=("static_token", "oauth"),
    errors=ErrorClassification(),
    # Confluence Server/DC webhooks with a secret sign the raw body: X-Hub-Signature: sha256=<hex>.
    # The emulator (and Atlassian's Cloud webhooks) send a unique X-Atlassian-Webhook-Identifier.
    webhook=WEBHOOK,
    # The listing parses each page's storage format and its PDF attachments' text (pypdf, pure Python): most
    # of a fast source's run. Apart, it no longer shares the run's interpreter lock with the mapping and the
    # writes (decision 153).
    listing_apart=True,
)
