"""Admin audit events (seed 000: "who started a manual run or changed a source's configuration is written
by the platform's append-only admin log (actor, action, result) — Harvester does not duplicate it in its
own tables").

Every mutating admin action, through the API or the CLI, emits exactly one event::

    {"time", "actor", "action", "target", "result": "ok"|"error", "status", "request_id", "via"}

to the sink named by ``HARVESTER_AUDIT_SINK``:

- unset (default): a long-running process (``serve``) writes one JSON line per event on standard
  output; a one-shot CLI command appends to ``<data_dir>/audit.jsonl``, so its terminal output stays its
  answer (one line on a usage error, the id of ``sources add``);
- ``stdout``: standard output (a one-shot CLI command's on stderr: its stdout is its answer);
- ``file:/path/events.jsonl``: appended, one line per event (0600, ``O_APPEND``: lines never interleave);
- ``http://...`` / ``https://...``: POSTed as JSON by a background sender with bounded retries and
  backoff, so a slow or down receiver never holds a request; events wait in memory meanwhile.

A sink that cannot be written never fails the action: the failure is logged once per outage and counted
(``harvester_audit_sink_failures_total``). Events hold names and ids only, never request bodies, and pass
:func:`app.redact.redact` as a last guard.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import getpass
import json
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import httpx
from prometheus_client import Counter

from app.errors import HarvesterError
from app.http_answer import BoundedClient, post_bounded
from app.redact import redact

log = logging.getLogger(__name__)

ENV_SINK = "HARVESTER_AUDIT_SINK"
HTTP_ATTEMPTS = 6  # ~31 s of backoff (1, 2, 4, 8, 16 s) before an event is given up and counted lost
HTTP_TIMEOUT = 5.0
# The sink's answer in all, however its bytes trickle, and its size (only its status is read; decision 162).
HTTP_ANSWER_SECONDS = 3 * HTTP_TIMEOUT
HTTP_ANSWER_MAX_BYTES = 1024 * 1024
QUEUE_LIMIT = 10_000

SINK_FAILURES = Counter(
    "harvester_audit_sink_failures",
    "Audit events this process could not write to its sink (after retries for an HTTP sink).",
)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    actor: str
    action: str
    target: str
    result: str  # ok | error
    status: int | None  # HTTP status (API) or exit code (CLI)
    request_id: str | None
    via: str  # api | cli
    time: str = ""

    def as_json(self) -> str:
        body = {
            "time": self.time or datetime.now(UTC).isoformat(timespec="milliseconds"),
            "actor": self.actor,
            "action": self.action,
            "target": self.target,
            "result": self.result,
            "status": self.status,
            "request_id": self.request_id,
            "via": self.via,
        }
        return redact(json.dumps(body, ensure_ascii=False, separators=(",", ":")))


class Sink(Protocol):
    def write(self, line: str) -> None: ...


class _Outage:
    """Logs a sink's failure once, and its recovery once, however many events fail in between."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.down = False
        self.lock = threading.Lock()

    def failed(self, reason: str) -> None:
        SINK_FAILURES.inc()
        with self.lock:
            first, self.down = not self.down, True
        if first:
            log.error("audit sink %s cannot be written: %s", self.what, reason, extra={"sink": self.what})

    def ok(self) -> None:
        with self.lock:
            was, self.down = self.down, False
        if was:
            log.warning("audit sink %s works again", self.what, extra={"sink": self.what})


class StdoutSink:
    """Standard output; a CLI command's events go to stderr instead, because its stdout is its answer
    (``id=$(harvester sources add ...)`` must keep reading one id)."""

    def __init__(self) -> None:
        self.outage = _Outage("stdout")
        self.command_output = False

    def write(self, line: str) -> None:
        stream = sys.stderr if self.command_output else sys.stdout
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError) as exc:
            self.outage.failed(type(exc).__name__)


class FileSink:
    def __init__(self, path: str) -> None:
        self.path = path
        self.outage = _Outage(f"file:{path}")

    def write(self, line: str) -> None:
        data = (line + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # several processes (API, CLI) append to one file
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            self.outage.failed(f"{type(exc).__name__}: {exc.strerror}")
        else:
            self.outage.ok()


class HttpSink:
    """POSTs each event from a background thread; retries with backoff, bounded by :data:`HTTP_ATTEMPTS`."""

    def __init__(
        self,
        url: str,
        *,
        attempts: int = HTTP_ATTEMPTS,
        backoff: float = 1.0,
        answer_seconds: float = HTTP_ANSWER_SECONDS,
    ) -> None:
        self.url = url
        self.attempts = attempts
        self.backoff = backoff
        self.answer_seconds = answer_seconds
        self.outage = _Outage(url.split("?", 1)[0])
        self.pending: queue.Queue[str] = queue.Queue(QUEUE_LIMIT)
        self.thread = threading.Thread(target=self._run, name="audit-sink", daemon=True)
        self.thread.start()
        atexit.register(self.flush, 10.0)

    def write(self, line: str) -> None:
        try:
            self.pending.put_nowait(line)
        except queue.Full:
            self.outage.failed("the in-memory queue is full")

    def flush(self, timeout: float) -> bool:
        """Wait until every queued event was sent or given up (a CLI process calls this before exit)."""
        deadline = time.monotonic() + timeout
        while self.pending.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.pending.unfinished_tasks

    def _run(self) -> None:
        with BoundedClient(timeout=HTTP_TIMEOUT) as client:
            while True:
                line = self.pending.get()
                try:
                    self._send(client, line)
                finally:
                    self.pending.task_done()

    def _send(self, client: httpx.Client, line: str) -> None:
        reason = ""
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = post_bounded(
                    client,
                    self.url,
                    max_bytes=HTTP_ANSWER_MAX_BYTES,
                    max_seconds=self.answer_seconds,
                    content=line,
                    headers={"content-type": "application/json"},
                )
            except httpx.HTTPError as exc:
                reason = type(exc).__name__
                continue
            if response.status_code < 300:
                self.outage.ok()
                return
            reason = f"HTTP {response.status_code}"
            if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
                break  # the receiver refuses this event; retrying will not change its mind
        self.outage.failed(f"{reason} after {attempt + 1} attempt(s)")


def sink_from(spec: str) -> Sink:
    spec = spec.strip()
    if spec in ("", "stdout"):
        return StdoutSink()
    if spec.startswith("file:"):
        path = spec[len("file:") :]
        if not path:
            raise HarvesterError(f"{ENV_SINK}: file: needs a path, e.g. file:/var/log/harvester/audit.jsonl")
        return FileSink(path)
    if spec.startswith(("http://", "https://")):
        return HttpSink(spec)
    raise HarvesterError(f"{ENV_SINK}: {spec[:40]!r} is not stdout, file:/path or an http(s):// URL")


_sink_lock = threading.Lock()
_sink: tuple[str, Sink] | None = None
# A one-shot CLI command with HARVESTER_AUDIT_SINK unset writes to <data_dir>/audit.jsonl (set by cli_action).
_cli_default: Sink | None = None


def current_sink() -> Sink:
    """The sink of ``HARVESTER_AUDIT_SINK`` (built once per value, so an HTTP sender thread is shared)."""
    global _sink
    from app.config import load_config

    configured = load_config().audit_sink
    if configured is None and _cli_default is not None:
        return _cli_default
    spec = configured or "stdout"
    with _sink_lock:
        if _sink is None or _sink[0] != spec:
            _sink = (spec, sink_from(spec))
        return _sink[1]


def emit(
    *,
    actor: str,
    action: str,
    target: str,
    result: str,
    status: int | None = None,
    request_id: str | None = None,
    via: str = "api",
) -> AuditEvent:
    """Write one audit event; never raises (the action it records already happened)."""
    event = AuditEvent(actor, action, target, result, status, request_id, via)
    try:
        current_sink().write(event.as_json())
    except HarvesterError as exc:  # a misconfigured sink: say so, the action stands
        SINK_FAILURES.inc()
        log.error("audit event not written: %s", exc)
    return event


# ---------------------------------------------------------------- CLI


@dataclass(frozen=True, slots=True)
class CliAction:
    action: str
    target_arg: str | None  # the parsed option naming the target; "a|b": the first one given
    kind: str


# The CLI's mutating commands, by command path (the same names the API's actions use).
CLI_ACTIONS: dict[tuple[str, ...], CliAction] = {
    ("sources", "add"): CliAction("sources.create", "name", "source"),
    ("sources", "update"): CliAction("sources.update", "source", "source"),
    ("sources", "remove"): CliAction("sources.delete", "source", "source"),
    ("runs", "cancel"): CliAction("runs.cancel", "run_id", "run"),
    ("dlq", "retry"): CliAction("dead_letters.retry", "source", "source"),
    ("settings", "set"): CliAction("settings.update", "key", "settings"),
    ("sync",): CliAction("runs.start", "source", "source"),
    ("token", "create"): CliAction("tokens.create", "name", "token"),
    ("token", "revoke"): CliAction("tokens.revoke", "token|id|name", "token"),
}


def command_path(args: object) -> tuple[str, ...]:
    command = getattr(args, "command", None)
    path: list[str] = [str(command)] if command else []
    if path:
        sub = getattr(args, f"{path[0]}_command", None)
        if sub:
            path.append(str(sub))
    return tuple(path)


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


@dataclass(slots=True)
class Outcome:
    code: int = 1


def _use_cli_default() -> None:
    """Unset sink, one-shot command: events go to ``<data_dir>/audit.jsonl`` (0600 in the 0700 data dir),
    not to the terminal, so a usage error stays one line and ``id=$(harvester sources add ...)`` one id."""
    global _cli_default
    from app.config import load_config

    with contextlib.suppress(HarvesterError):
        config = load_config()
        if config.audit_sink is None:
            with contextlib.suppress(OSError):
                config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            _cli_default = FileSink(str(config.data_dir / "audit.jsonl"))


@contextlib.contextmanager
def cli_action(args: object) -> Iterator[Outcome]:
    """Around a CLI command: one event when it is a mutating one, with its exit code as the result."""
    outcome = Outcome()
    spec = CLI_ACTIONS.get(command_path(args))
    if spec is not None:
        _use_cli_default()
        with contextlib.suppress(HarvesterError):  # a misconfigured sink is reported by emit() below
            sink = current_sink()
            if isinstance(sink, StdoutSink):
                sink.command_output = True
    failed = False
    try:
        yield outcome
    except BaseException:
        failed = True
        raise
    finally:
        if spec is not None:
            given = (getattr(args, a, None) for a in (spec.target_arg or "").split("|") if a)
            value = next((v for v in given if v is not None), None)
            code = 1 if failed else outcome.code
            emit(
                actor=os_user(),
                action=spec.action,
                target=f"{spec.kind}:{value}" if value is not None else spec.kind,
                result="ok" if code == 0 else "error",
                status=code,
                via="cli",
            )
            with contextlib.suppress(HarvesterError):
                sink = current_sink()
                if isinstance(sink, HttpSink):
                    sink.flush(HTTP_TIMEOUT * 2)
