"""Secrets out of log lines: every secret this process decrypts is registered, log records are scrubbed.

Registration happens where a secret is decrypted for use (``app.services.connectors.source_config``), so a
worker or a CLI sync knows exactly the credentials it holds. :func:`install_log_redaction` adds a filter
to the root handlers that rewrites the message, its arguments and the formatted traceback of every
record, covering each rendering of a secret (raw, repr/bytes, JSON, URL-encoded, base64;
:mod:`connectors.redaction`).
"""

from __future__ import annotations

import logging
import threading

from connectors.redaction import Redactor

_lock = threading.Lock()
_registry = Redactor()


def register_secret(secret: str | None) -> None:
    """From now on, every rendering of ``secret`` is redacted from this process's log lines."""
    if secret:
        with _lock:
            _registry.add(secret)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced."""
    return _registry(text)


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
