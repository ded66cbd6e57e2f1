"""Secrets never reach a log line, an audit event or a stored error (issues 10 §3, 11 §4).

A secret is registered where it becomes plaintext (``Keyring.decrypt``, ``app.services.connectors.source_config``,
API tokens, alert-channel keys, the embedder's API key). Every rendering of it is then replaced in whatever
text is about to be written: raw, ``repr`` of the str and of its bytes (``b'...'`` escapes), JSON-escaped,
URL-encoded, hex, base64 at any byte alignment (HTTP Basic ``user:token`` included) and the password of a
``user:token`` pair on its own — the forms are :mod:`connectors.redaction`'s, shared with the connectors'
error texts. Values shorter than :data:`MIN_LENGTH` are not registered: redacting "abc" everywhere would
shred ordinary text and protect nothing.

:func:`install_log_redaction` adds :class:`RedactingFilter` to a logger's handlers for processes that do not
use :mod:`app.logs` (whose handler redacts already).
"""

from __future__ import annotations

import logging
import threading

from connectors.redaction import REDACTED, Redactor

MASK = REDACTED
MIN_LENGTH = 6
_MAX_SECRETS = 10_000  # a runaway registration must not grow the set without bound

_lock = threading.Lock()
_registry = Redactor()
_count = 0


def register_secret(value: str | bytes | None) -> None:
    """Redact ``value`` (and every rendering of it) from every later log line, event and stored error."""
    global _count
    if value is None:
        return
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    if len(text) < MIN_LENGTH:
        return
    with _lock:
        if _count >= _MAX_SECRETS:
            return
        before = len(_registry.forms)
        _registry.add(text)
        if len(_registry.forms) != before:
            _count += 1


def redact(text: str) -> str:
    """``text`` with every registered secret's renderings replaced by :data:`MASK`."""
    if not text or not _registry:
        return text
    return _registry(text)


def registered() -> int:
    """How many secrets are registered (a test sees its registration took)."""
    with _lock:
        return _count


class RedactingFilter(logging.Filter):
    """Formats the record's message and traceback now, redacted, so no handler sees the raw text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _registry:
            return True
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Adds :class:`RedactingFilter` to every handler of ``logger`` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
