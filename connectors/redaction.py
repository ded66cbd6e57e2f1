"""Every rendering of a secret, so that redaction does not stop at the raw value (issue 11, Deliver 4).

A credential reaches text in more shapes than its plain form: ``repr`` of the header bytes in an httpx
or h11 error (``b'Bearer tok\\n'``), JSON escapes in an echoed error body, URL encoding in a logged
query string, base64 inside ``Authorization: Basic`` (``user:token``) at any byte alignment. Redaction
replaces all of them; a value shorter than :data:`MIN_SECRET` is too short to find safely and is skipped.

Pure functions (no registry, no logging): ``connectors.http`` redacts its own error texts with them and
the app layer (API responses, log records) builds on the same set.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import urllib.parse
from collections.abc import Iterable

MIN_SECRET = 4
REDACTED = "***"


def _base64_fragments(data: bytes) -> set[str]:
    """Base64 of ``data`` whatever the bytes before it: the characters that depend on ``data`` alone."""
    out: set[str] = set()
    for offset in range(3):
        padded = b"\0" * offset + data
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(padded).decode()
            first = 1 if offset else 0  # the first group mixes in the unknown prefix
            last = len(padded) // 3  # a trailing partial group mixes in the unknown suffix
            fragment = encoded[first * 4 : last * 4]
            if len(fragment) >= 2 * MIN_SECRET:
                out.add(fragment)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode()
        out.update({whole, whole.rstrip("=")})
    return out


def _forms(secret: str) -> set[str]:
    raw = secret.encode("utf-8", "surrogatepass")
    forms = {
        secret,
        repr(secret)[1:-1],
        repr(raw)[2:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
        urllib.parse.quote_plus(secret),
        raw.hex(),
    }
    with contextlib.suppress(UnicodeEncodeError):
        forms.add(repr(secret.encode("latin-1"))[2:-1])
    forms |= _base64_fragments(raw)
    return forms


def renderings(secret: str) -> frozenset[str]:
    """The shapes ``secret`` can take in text; for ``user:token`` also those of the token alone."""
    if len(secret) < MIN_SECRET:
        return frozenset()
    forms = _forms(secret)
    for prefix in ("Bearer ", "Basic ", "token "):
        if secret.startswith(prefix):
            forms |= renderings(secret[len(prefix) :])
    if secret.startswith("Basic "):
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            forms |= renderings(base64.b64decode(secret[6:], validate=True).decode())
    _, colon, password = secret.partition(":")
    if colon and len(password) >= MIN_SECRET:
        forms |= _forms(password)
    return frozenset(f for f in forms if len(f) >= MIN_SECRET)


class Redactor:
    """Replaces every rendering of the given secrets, longest first, in any text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._forms: set[str] = set()
        self._ordered: tuple[str, ...] = ()
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        for secret in secrets:
            if secret:
                self._forms |= renderings(secret)
        # Longest first so a value is redacted whole before one of its fragments is.
        self._ordered = tuple(sorted(self._forms, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for form in self._ordered:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._ordered)

    @property
    def forms(self) -> frozenset[str]:
        """Every rendering currently redacted."""
        return frozenset(self._forms)
