"""What the Jira and Confluence connectors share as Atlassian products: auth and webhook shape.

- Credentials: ``email:api_token`` is an Atlassian Cloud API token, sent as HTTP Basic; anything else
  is a Server/Data Center personal access token, sent as ``Bearer``.
- Webhooks: both sign the raw body ``X-Hub-Signature: sha256=<hex>`` (Jira Cloud admin webhooks,
  Confluence Server/DC webhooks with a secret) and carry a unique ``X-Atlassian-Webhook-Identifier``.
"""

from __future__ import annotations

import base64

from connectors.base import WebhookSpec
from connectors.webhook_sig import HUB_HEADER

DELIVERY_ID_HEADER = "X-Atlassian-Webhook-Identifier"

WEBHOOK = WebhookSpec(
    signature_header=HUB_HEADER,
    scheme="sha256=<hex hmac-sha256 of the raw body>",
    delivery_id_header=DELIVERY_ID_HEADER,
)


def auth_headers(credential: str | None) -> dict[str, str]:
    """``email:api_token`` -> Basic (Cloud); anything else -> Bearer (Server/DC personal access token)."""
    if not credential:
        return {}
    if ":" in credential:
        return {"Authorization": "Basic " + base64.b64encode(credential.encode()).decode()}
    return {"Authorization": f"Bearer {credential}"}
