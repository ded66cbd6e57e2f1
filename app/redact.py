"""Secrets never reach a log line or an audit event (issue 10 §3): every registered secret is replaced in
whatever text is about to be written, in each form it commonly takes on the way there.

A secret is registered where it becomes plaintext (``Keyring.decrypt``, API tokens, alert-channel keys).
The forms covered: raw, ``repr`` of the str and of its bytes (``b'...'`` escapes), JSON-escaped, base64
(standard and url-safe, with and without padding: HTTP Basic and our envelopes) and URL-encoded
(``quote`` and ``quote_plus``). Values shorter than :data:`MIN_LENGTH` are not registered: redacting
"abc" everywhere would shred ordinary text and protect nothing.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from urllib.parse import quote, quote_plus

MASK = "[REDACTED]"
MIN_LENGTH = 6
_MAX_SECRETS = 10_000  # a runaway registration must not grow the pattern without bound

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def _forms(value: str) -> set[str]:
    raw = value.encode()
    forms = {
        value,
        repr(value)[1:-1],
        repr(raw)[2:-1],
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
    }
    for b64 in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms.add(b64)
        forms.add(b64.rstrip("="))
    return {f for f in forms if len(f) >= MIN_LENGTH}


def register_secret(value: str | bytes | None) -> None:
    """Redact ``value`` (and its encoded forms) from every later log line and audit event."""
    global _pattern
    if value is None:
        return
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    if len(text) < MIN_LENGTH:
        return
    forms = _forms(text)
    # "user:token" credentials: the token alone also turns up (HTTP Basic pieces, error echoes).
    _, sep, tail = text.rpartition(":")
    if sep and len(tail) >= MIN_LENGTH:
        forms |= _forms(tail)
    with _lock:
        if forms <= _secrets or len(_secrets) >= _MAX_SECRETS:
            return
        _secrets.update(forms)
        # Longest first, so a secret's base64 is not half-replaced by a shorter form inside it.
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str) -> str:
    """``text`` with every registered secret form replaced by :data:`MASK`."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def registered() -> int:
    """How many secret forms are registered (a test sees its registration took)."""
    with _lock:
        return len(_secrets)
