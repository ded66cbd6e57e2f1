"""What the Jira connector declares to the platform (scope kinds, filters, errors, webhooks).

Scope (``sources.scope_list`` when ``scope_mode = 'selected'``), each item one of:

- ``"PROJ"`` — a project key (``^[A-Z][A-Z0-9_]+$``), or ``{"kind": "project", "key": "PROJ"}``;
- any other string — a JQL filter, or ``{"kind": "jql", "jql": "..."}``.

Items are OR-ed: ``project in (A, B) OR (jql1) OR (jql2)``. ``scope_mode = 'all'``: every issue
the credential can browse.

Credential: ``email:api_token`` -> HTTP Basic (Jira Cloud); anything else -> ``Bearer`` (Data
Center personal access token).

API version: ``/rest/api/2/serverInfo`` is probed once per connector; ``deploymentType == "Cloud"``
-> REST v3 (``/search/jql`` + ``nextPageToken``, ADF), otherwise REST v2 (``/search`` + ``startAt``,
wiki markup). The ``force_api_v2`` filter pins v2 (useful against Cloud for debugging).
"""

from __future__ import annotations

import re

from connectors.atlassian import WEBHOOK
from connectors.base import ContentFilter, ErrorClassification, Manifest

PROJECT_KEY_RE = re.compile(r"^[A-Z][A-Z0-9_]+$")

MANIFEST = Manifest(
    connector_type="jira",
    display_name="Jira",
    source_types=("ticket",),
    scope_kinds=("project", "jql"),
    content_filters=(
        ContentFilter("comments", "Index issue comments as text sections", True),
        ContentFilter("attachments_text", "Inline text attachments (text/*, <= 256 KiB); others as links", True),
        ContentFilter("neighbours", "Fetch issues linked from the scope but outside it, one hop (flagged)", True),
        ContentFilter("force_api_v2", "Use REST v2 even when the server is Jira Cloud", False),
    ),
    default_authority="normal",
    auth_methods=("static_token",),
    errors=ErrorClassification(),
    # Jira Cloud admin webhooks with a secret sign the body as "X-Hub-Signature: sha256=<hex>".
    webhook=WEBHOOK,
)
