"""What the Jira and Confluence connectors share as Atlassian products: auth and webhook shape.

- Credentials: ``email:api_token`` is an Atlassian Cloud API token, sent as HTTP Basic; anything else
  is a Server/Data Center personal access token, sent as ``Bearer``.
- Identities: a person is ``<email, lower-case>`` when the site shows the e-mail, else
  ``accountid:<Atlassian account id>`` (the same id on a Cloud site's Jira and Confluence, so both
  connectors' ACL tokens name the same person), else the Server user key / name.
- Webhooks: both sign the raw body ``X-Hub-Signature: sha256=<hex>`` (Jira Cloud admin webhooks,
  Confluence Server/DC webhooks with a secret) and carry a unique ``X-Atlassian-Webhook-Identifier``.
"""

from __future__ import annotations

import base64
from typing import Any

from connectors.base import WebhookSpec
from connectors.payload import JSON_OBJECT
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


def user_identity(user: Any) -> str | None:
    """The identity an ACL token ``user:<identity>`` carries for an Atlassian user object (see above)."""
    if not isinstance(user, JSON_OBJECT):
        return None
    for key in ("email", "emailAddress"):
        if isinstance(user.get(key), str) and "@" in user[key]:
            return str(user[key]).lower()
    if isinstance(user.get("accountId"), str) and user["accountId"]:
        return f"accountid:{user['accountId']}"
    for key in ("userKey", "username", "name", "key"):
        if isinstance(user.get(key), str) and user[key]:
            return str(user[key])
    return None
