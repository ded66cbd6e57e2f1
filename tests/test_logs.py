"""Logs that help (issue 10 §3) and CLI audit events (§5): JSON lines off a terminal, one --log-level,
run start/end/failure with their fields, secrets masked in every rendering, one audit event per command."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from app.logs import configure_logging
from app.redact import MASK, redact, register_secret
from tests.api.conftest import free_port
from tests.conftest import REPO
from tests.test_heap import STARTED_UP

SECRET = "s3cr3t-Value/with+odd=chars"


@pytest.fixture()
def captured() -> Iterator[io.StringIO]:
    """A buffer for configure_logging(stream=...); the root logger's handlers are restored afterwards."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    buffer = io.StringIO()
    yield buffer
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in saved:
        root.addHandler(h)
    root.setLevel(level)


def test_every_rendering_of_a_secret_is_masked(captured: io.StringIO) -> None:
    register_secret(SECRET)
    configure_logging("info", json=True, stream=captured)
    log = logging.getLogger("harvester.test")
    raw = SECRET.encode()
    log.info("raw %s", SECRET)
    log.info("repr %r bytes %r", SECRET, raw)
    log.info("base64 %s urlsafe %s", base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode())
    log.info("url-encoded %s", quote(SECRET, safe=""))
    log.info("as a field", extra={"credential": SECRET})
    try:
        raise RuntimeError(f"failed with {SECRET}")
    except RuntimeError:
        log.exception("traceback")
    text = captured.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 6 and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    for form in (SECRET, repr(raw)[2:-1], base64.b64encode(raw).decode(), quote(SECRET, safe="")):
        assert form not in text
    assert text.count(MASK) >= 8
    assert MASK in lines[4]["credential"] and MASK in lines[5]["exc_info"]
    assert redact("nothing secret here") == "nothing secret here"


def test_text_on_a_terminal_and_one_line_for_a_bad_level(captured: io.StringIO) -> None:
    configure_logging("warning", json=False, stream=captured)
    logging.getLogger("harvester.test").warning("readable", extra={"run_id": 7})
    logging.getLogger("harvester.test").info("below the level")
    line = captured.getvalue().strip()
    assert "WARNING harvester.test: readable run_id=7" in line and "below the level" not in line
    bad = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "status"],
        cwd=REPO,
        env={**os.environ, "HARVESTER_LOG_LEVEL": "loud"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harvester: error: HARVESTER_LOG_LEVEL: "), bad.stderr


def test_cli_run_failure_is_logged_with_its_fields_and_audited_once(fresh_db_url: str, tmp_path: Path) -> None:
    sink = tmp_path / "audit.jsonl"
    credential = "cli-credential-0123456789"
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": fresh_db_url,
        "HARVESTER_SECRET_KEY": os.urandom(32).hex(),
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_AUDIT_SINK": f"file:{sink}",
        "HARVESTER_EMBEDDER": "none",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )

    dead = f"http://127.0.0.1:{free_port()}"
    added = cli(
        "sources", "add", "--name", "cli-down", "--connector", "jira", "--base-url", dead, "--credential", credential,
        "--no-check",  # the source is down on purpose: the run's failure is what this test reads
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    synced = cli("sync", "cli-down", "--mode", "full", "--log-level", "info")
    assert synced.returncode == 1
    records = [json.loads(line) for line in synced.stderr.splitlines() if line.startswith("{")]
    started = next(r for r in records if r["message"].endswith("started"))
    failed = next(r for r in records if "failed" in r["message"] and r.get("run_id"))
    # The process froze its start-up objects before the run began (decision 92).
    settled = next(i for i, r in enumerate(records) if "frozen_objects" in r)
    assert records[settled]["frozen_objects"] >= STARTED_UP and settled < records.index(started)
    for record in (started, failed):
        assert record["source_id"] == int(added.stdout.strip().splitlines()[0])
        assert record["connector"] == "jira" and record["mode"] == "full"
        assert {"entities_done", "error_count", "duration_s"} <= set(record)
    assert failed["level"] == "ERROR" and "unreachable" in failed["message"]
    assert credential not in synced.stderr + synced.stdout + sink.read_text()

    events = [json.loads(line) for line in sink.read_text().splitlines()]
    assert [(e["action"], e["result"], e["target"]) for e in events] == [
        ("sources.create", "ok", "source:cli-down"),
        ("runs.start", "error", "source:cli-down"),
    ]
    assert all(e["via"] == "cli" and e["actor"] and e["time"] for e in events)
    listed = cli("sources", "list")  # a read: no event
    assert listed.returncode == 0 and len(sink.read_text().splitlines()) == 2

    created = cli("token", "create", "--name", "ci-bot")
    token = created.stdout.splitlines()[0]
    assert created.returncode == 0 and token.startswith("hv_")
    assert cli("token", "revoke", "--name", "ci-bot").returncode == 0
    assert cli("token", "revoke", "--name", "ci-bot").returncode == 2  # nothing left to revoke
    events = [json.loads(line) for line in sink.read_text().splitlines()][2:]
    assert [(e["action"], e["result"], e["status"]) for e in events] == [
        ("tokens.create", "ok", 0),
        ("tokens.revoke", "ok", 0),
        ("tokens.revoke", "error", 2),
    ]
    assert token not in sink.read_text()
