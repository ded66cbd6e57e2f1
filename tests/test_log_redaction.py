"""Registered secrets never reach a log line, in any rendering, in messages, arguments or tracebacks."""

from __future__ import annotations

import base64
import io
import logging
import urllib.parse

from app.redact import install_log_redaction, redact, register_secret

CANARY = 'LogCanary/+7Q2w9"x'


def test_log_lines_are_redacted_in_every_rendering() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("harvester.test.redaction")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    try:
        install_log_redaction(logger)
        register_secret(CANARY)
        logger.warning("raw %s", CANARY)
        logger.warning("bytes %r", f"Bearer {CANARY}\n".encode())
        logger.warning("url %s", urllib.parse.quote(CANARY, safe=""))
        logger.warning("basic %s", base64.b64encode(f"ops@example.com:{CANARY}".encode()).decode())
        try:
            raise RuntimeError(f"Illegal header value {f'Bearer {CANARY}'.encode()!r}")
        except RuntimeError:
            logger.exception("request failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert text.count("***") >= 5, text
    assert "7Q2w9" not in text, text
    assert base64.b64encode(f"ops@example.com:{CANARY}".encode()).decode()[16:32] not in text
    assert "Traceback" in text and "RuntimeError" in text  # the traceback is kept, redacted
    assert redact(f"x{CANARY}x") == "x***x"
