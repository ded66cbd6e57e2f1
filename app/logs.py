"""Process logging (issue 10 §3): JSON lines when stderr is not a terminal, readable text when it is.

One level for every process: ``--log-level`` on the command line, else ``HARVESTER_LOG_LEVEL``, else
``info`` (``-v`` is ``debug``). Structured fields travel as ``extra={...}`` and become JSON keys (or
``key=value`` on a terminal). Every record passes :class:`RedactFilter` and every rendered line passes
:func:`app.redact.redact` once more, so a registered secret is masked in the message, its arguments,
the traceback and the fields alike.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from pythonjsonlogger.json import JsonFormatter

from app.errors import HarvesterError
from app.redact import redact

LEVELS = ("debug", "info", "warning", "error", "critical")
ENV_LEVEL = "HARVESTER_LOG_LEVEL"

# The request being served (API) — every log line written while serving it carries its id.
request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("harvester_request_id", default=None)

# LogRecord attributes that are not structured fields (everything else given as extra=... is one).
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(repr(value))
    return value


class RedactFilter(logging.Filter):
    """Renders the message with its arguments and masks registered secrets in it, in the traceback and
    in string fields, before any formatter sees the record; also stamps the current request id."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the line
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None  # the formatters use the masked text, never the live exception
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for key, value in list(vars(record).items()):
            if key not in _STANDARD:
                setattr(record, key, _clean(value))
        if getattr(record, "request_id", None) is None:
            rid = request_id_var.get()
            if rid is not None:
                record.request_id = rid
        return True


def _iso_time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class _Json(JsonFormatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _iso_time(record)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))

    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_record, record, message_dict)
        if record.exc_text and "exc_info" not in log_record:
            log_record["exc_info"] = record.exc_text


class _Text(logging.Formatter):
    """``time LEVEL logger: message key=value ...`` for a person at a terminal."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _iso_time(record)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if fields:
            head, sep, tail = line.partition("\n")
            line = head + " " + " ".join(f"{k}={v}" for k, v in fields.items()) + sep + tail
        return redact(line)


def parse_level(value: str, *, where: str = "--log-level") -> int:
    name = value.strip().lower()
    if name not in LEVELS:
        raise HarvesterError(f"{where}: {value!r} is not a log level; use one of {', '.join(LEVELS)}")
    level: int = getattr(logging, name.upper())
    return level


def configure_logging(level: str, *, json: bool | None = None, stream: TextIO | None = None) -> None:
    """Route every logger (ours, Procrastinate's, uvicorn's) to one handler on stderr (or ``stream``)."""
    numeric = parse_level(level)
    out = stream if stream is not None else sys.stderr
    as_json = (not out.isatty()) if json is None else json
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactFilter())
    if as_json:
        handler.setFormatter(
            _Json(
                "%(asctime)s %(levelname)s %(name)s %(message)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                timestamp=False,
            )
        )
    else:
        handler.setFormatter(_Text("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    # uvicorn and Procrastinate bring their own handlers when left alone; ours is the one place lines go.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "procrastinate"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    # Procrastinate logs every poll at INFO; keep its routine chatter out unless debugging.
    logging.getLogger("procrastinate").setLevel(max(numeric, logging.WARNING) if numeric > logging.DEBUG else numeric)
    # httpx logs every request at INFO: one line per source API call drowns what the run says.
    logging.getLogger("httpx").setLevel(max(numeric, logging.WARNING) if numeric > logging.DEBUG else numeric)


def json_logging() -> bool:
    """Whether the root logger writes JSON lines: a child process (app.pipeline.source_process) logs the same way."""
    return any(isinstance(h.formatter, _Json) for h in logging.getLogger().handlers)
