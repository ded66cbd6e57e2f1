"""Audit sinks (issue 10 §5, "Bad input"): an HTTP receiver that is down gets the event once it is back
(bounded retries); one that stays down is logged once and counted; a file sink appends one line."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.audit import SINK_FAILURES, AuditEvent, FileSink, HttpSink
from tests.api.conftest import free_port


class Receiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.bodies: list[bytes] = []
        self.server: ThreadingHTTPServer | None = None

    def up(self) -> None:
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.down()


def event(action: str) -> str:
    return AuditEvent("token:t", action, "source:1", "ok", 200, "rid-1", "api").as_json()


def failures() -> float:
    return float(SINK_FAILURES._value.get())


def test_http_sink_delivers_once_the_receiver_is_back(receiver: Receiver) -> None:
    sink = HttpSink(f"http://127.0.0.1:{receiver.port}/audit", attempts=6, backoff=0.2)
    sink.write(event("runs.start"))  # nothing listens yet: the first attempts fail
    time.sleep(0.5)
    receiver.up()
    assert sink.flush(15)
    assert [json.loads(b)["action"] for b in receiver.bodies] == ["runs.start"]


def test_http_sink_down_for_good_is_logged_once_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="app.audit")
    sink = HttpSink(f"http://127.0.0.1:{free_port()}/audit", attempts=2, backoff=0.05)
    before = failures()
    for action in ("sources.create", "sources.update", "sources.delete"):
        sink.write(event(action))
    assert sink.flush(15)
    assert failures() - before == 3
    assert len([r for r in caplog.records if "cannot be written" in r.getMessage()]) == 1


def test_file_sink_appends_one_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    sink = FileSink(str(path))
    sink.write(event("settings.update"))
    sink.write(event("notes.update"))
    assert [json.loads(line)["action"] for line in path.read_text().splitlines()] == ["settings.update", "notes.update"]
    assert path.stat().st_mode & 0o777 == 0o600
