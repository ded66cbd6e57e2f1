"""Webhook signatures and header lookup, shared by the connectors (verify) and emulators (sign).

Two schemes are in use (seed 000 "webhooks are verified (HMAC)"):

- **hub**: ``X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>`` — Jira Cloud admin webhooks
  and Confluence Server/DC webhooks with a secret;
- **Slack v0**: ``X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{X-Slack-Request-Timestamp}:{raw body}">``;
  a timestamp more than :data:`SLACK_MAX_AGE_SECONDS` away from now is refused (replay).

Every comparison is constant-time (``hmac.compare_digest``) on bytes: a header may carry any byte
(decoded as latin-1 by the server), and ``compare_digest`` raises ``TypeError`` on a non-ASCII str. No
check raises on any header value; an unreadable one is simply "does not match". Header names are matched
case-insensitively, as HTTP defines them.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

HUB_HEADER = "X-Hub-Signature"
HUB_PREFIX = "sha256="
SLACK_SIGNATURE_HEADER = "X-Slack-Signature"
SLACK_TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SLACK_MAX_AGE_SECONDS = 300
# A Unix time in seconds has 10 digits until the year 2286; a longer "timestamp" is refused before
# int() (which raises past 4,300 digits) ever sees it.
_MAX_STAMP_DIGITS = 12


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` whatever its case in ``headers``; None when absent."""
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def _same(sent: str, expected: str) -> bool:
    """Constant-time equality of a received header value and the expected signature, never raising."""
    return hmac.compare_digest(sent.strip().encode("utf-8", "replace"), expected.encode("ascii"))


def hmac_hex(secret: str, message: bytes) -> str:
    """Hex HMAC-SHA256 of ``message`` keyed by ``secret``."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def hub_signature(body: bytes, secret: str) -> str:
    """The ``X-Hub-Signature`` value for ``body``: ``sha256=<hex>``."""
    return HUB_PREFIX + hmac_hex(secret, body)


def verify_hub_signature(headers: Mapping[str, str], body: bytes, secret: str) -> bool:
    """True when ``X-Hub-Signature`` is ``sha256=`` + the body's HMAC under ``secret``."""
    sent = header(headers, HUB_HEADER) or ""
    return _same(sent, hub_signature(body, secret))


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` value: ``v0=`` + HMAC of ``v0:{timestamp}:{body}``."""
    return "v0=" + hmac_hex(secret, b"v0:" + timestamp.encode() + b":" + body)


def verify_slack_signature(headers: Mapping[str, str], body: bytes, secret: str, *, now: float | None = None) -> bool:
    """True when the v0 signature matches and the request timestamp is within five minutes of ``now``."""
    sent = header(headers, SLACK_SIGNATURE_HEADER)
    stamp = (header(headers, SLACK_TIMESTAMP_HEADER) or "").strip()
    if not sent or not (stamp.isascii() and stamp.isdigit()) or len(stamp) > _MAX_STAMP_DIGITS:
        return False
    if abs((now if now is not None else time.time()) - int(stamp)) > SLACK_MAX_AGE_SECONDS:
        return False
    return _same(sent, slack_signature(secret, stamp, body))
