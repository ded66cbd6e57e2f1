"""Failure alerts end to end (issue 10 §4): a failed run -> incident -> send_alert job executed by a real
Procrastinate worker (in-process, queue ``alerts``) -> a local HTTP receiver on 127.0.0.1; a receiver
that is down; de-duplication and the recovery message."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import procrastinate
import psycopg
import pytest

from app.jobs import alerts as alert_jobs
from app.queries import alerts as aq
from app.secrets import Keyring
from app.services.alerts import evaluate_alerts
from app.services.settings import update_settings
from app.services.sources import NewSource, create_source, update_source
from tests.api.conftest import free_port
from tests.conftest import as_worker
from tests.sync.conftest import TOKEN, JiraFactory, scalar, sync

SECRET = "alert-hmac-key-0123456789"
# Only the alerts blueprint (a blueprint joins one app; each test's worker copies it onto its database).
ALERTS_APP = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=""))
ALERTS_APP.add_tasks_from(alert_jobs.blueprint, namespace="harvester")


class Receiver:
    """A notification receiver on a fixed port that can be down (not listening) and come back."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.posts: list[tuple[float, str, dict[str, str], bytes]] = []
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                posts.append((time.monotonic(), self.path, dict(self.headers), body))
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
            self.server = None


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver(free_port())
    try:
        yield r
    finally:
        r.down()


@pytest.fixture()
def alert_env(fresh_db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Keyring:
    """The worker's job reads the database and the key from the environment, as `harvester worker` does."""
    key = os.urandom(32)
    as_worker(monkeypatch, fresh_db_url, key.hex(), tmp_path / "data")
    return Keyring(current=key)


def configure_channels(conn: psycopg.Connection[Any], keyring: Keyring, url: str) -> None:
    update_settings(
        conn,
        {
            "alert_channels": [
                {"kind": "webhook", "url": f"{url}/hook", "secret": SECRET},
                {"kind": "slack", "url": f"{url}/slack/T000/B000/XXXX", "events": ["run_failed"]},
            ]
        },
        keyring=keyring,
    )
    conn.commit()


def broken_source(conn: psycopg.Connection[Any], keyring: Keyring) -> int:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: the run fails at start
    source_id = create_source(
        conn, keyring, NewSource(name="jira-down", connector_type="jira", base_url=dead, credential=TOKEN)
    )
    conn.commit()
    return source_id


def work_until(url: str, done: Callable[[], bool], timeout: float = 60.0) -> float:
    """Run a real Procrastinate worker on queue ``alerts`` until ``done()``; returns seconds taken."""
    app = ALERTS_APP.with_connector(procrastinate.PsycopgConnector(conninfo=url))
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < timeout, "alert not delivered in time"
        app.run_worker(
            queues=[alert_jobs.QUEUE],
            wait=False,
            install_signal_handlers=False,
            concurrency=1,
            fetch_job_polling_interval=0.1,
        )
        time.sleep(0.2)
    return time.monotonic() - start


def test_failed_run_alerts_once_signed_and_recovery_follows(
    conn: psycopg.Connection[Any],
    fresh_db_url: str,
    alert_env: Keyring,
    receiver: Receiver,
    jira_factory: JiraFactory,
) -> None:
    keyring = alert_env
    receiver.up()
    configure_channels(conn, keyring, receiver.url)
    source_id = broken_source(conn, keyring)

    outcome, _ = sync(conn, keyring, source_id, "full")  # the client's own retries take a few seconds
    failed_at = time.monotonic()  # the failure is committed, its alert queued in the same transaction
    assert outcome.state == "failed"
    work_until(fresh_db_url, lambda: len(receiver.posts) >= 2)
    latency = max(p[0] for p in receiver.posts) - failed_at
    print(f"\nrun failed -> alert at the receiver: {latency:.2f} s")

    hook = next(p for p in receiver.posts if p[1] == "/hook")
    document = json.loads(hook[3])
    assert document["event"] == "opened" and document["kind"] == "run_failed"
    assert document["source"]["name"] == "jira-down" and document["source"]["connector"] == "jira"
    expected = "sha256=" + hmac.new(SECRET.encode(), hook[3], hashlib.sha256).hexdigest()
    assert hook[2]["X-Harvester-Signature"] == expected
    slack = next(p for p in receiver.posts if p[1].startswith("/slack/"))
    assert set(json.loads(slack[3])) == {"text"} and "sync run failed" in json.loads(slack[3])["text"]

    # A second failure of the same source is the same incident: no second alert.
    sync(conn, keyring, source_id, "full")
    evaluate_alerts(conn, datetime.now(UTC))
    conn.commit()
    work_until(fresh_db_url, lambda: True)
    assert len(receiver.posts) == 2
    assert scalar(conn, "select count(*) from alert_incidents") == 1

    # The source works again: the next evaluation resolves the incident and sends the recovery.
    jira = jira_factory(3)
    update_source(conn, keyring, source_id, {"base_url": jira.base_url})
    conn.commit()
    outcome, _ = sync(conn, keyring, source_id, "full")
    assert outcome.state == "succeeded"
    assert evaluate_alerts(conn, datetime.now(UTC))["resolved"] == 1
    conn.commit()
    work_until(fresh_db_url, lambda: len(receiver.posts) >= 4)
    recovered = [json.loads(p[3]) for p in receiver.posts[2:]]
    assert any(d.get("event") == "resolved" for d in recovered)
    assert any("RESOLVED" in d.get("text", "") for d in recovered)
    assert len(receiver.posts) == 4


def test_receiver_down_retries_logs_once_counts_and_delivers_later(
    conn: psycopg.Connection[Any],
    fresh_db_url: str,
    alert_env: Keyring,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    keyring = alert_env
    configure_channels(conn, keyring, receiver.url)  # the receiver is not listening yet
    source_id = broken_source(conn, keyring)
    caplog.set_level(logging.INFO)

    outcome, _ = sync(conn, keyring, source_id, "full")
    assert outcome.state == "failed"  # the sync itself is not held by the alert
    # First attempts fail (nothing listens); the jobs are retried later with backoff.
    work_until(fresh_db_url, lambda: scalar(conn, "select sum(send_failures) from alert_incidents") >= 2)
    conn.commit()
    receiver.up()
    waited = work_until(fresh_db_url, lambda: len(receiver.posts) >= 2)
    print(f"\ndelivered {waited:.1f} s after the receiver came back")
    assert sorted(p[1].split("/")[1] for p in receiver.posts) == ["hook", "slack"]
    not_delivered = [r for r in caplog.records if r.getMessage().startswith("alert not delivered")]
    assert len(not_delivered) == 2  # once per delivery (two channels), not once per attempt
    failures = aq.sum_alert_send_failures(conn)
    assert failures is not None and failures >= 2
    conn.commit()


def test_invalid_channel_url_names_the_field(conn: psycopg.Connection[Any], alert_env: Keyring) -> None:
    from app.services.sources import InvalidField

    with pytest.raises(InvalidField) as caught:
        update_settings(conn, {"alert_channels": [{"kind": "webhook", "url": "ftp://x"}]}, keyring=alert_env)
    assert caught.value.field == "alert_channels[0].url"
    conn.rollback()
    # The database refuses a channel with a clear-text secret even when Python is bypassed.
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "update platform_settings set value = %s::jsonb where key = 'alert_channels'",
            (json.dumps([{"kind": "webhook", "url": "http://x", "secret": "plain"}]),),
        )
    conn.rollback()


def test_tick_evaluation_opens_and_resolves_each_kind_once(
    conn: psycopg.Connection[Any], alert_env: Keyring, receiver: Receiver
) -> None:
    keyring = alert_env
    configure_channels(conn, keyring, receiver.url)  # webhook: every kind; slack: run_failed only
    update_settings(conn, {"alert_dlq_threshold": 2})
    source_id = broken_source(conn, keyring)
    for i in range(3):
        conn.execute(
            "insert into dead_letters (source_id, source_type, source_entity_id, reason) "
            "values (%s, 'ticket', %s, 'malformed')",
            (source_id, str(i)),
        )
    conn.execute(
        "update sources set last_probe_status = 'unreachable', last_probe_at = now() where id = %s", (source_id,)
    )
    gone = scalar(
        conn, "insert into procrastinate_workers (last_heartbeat) values (now() - interval '1 hour') returning id"
    )
    conn.commit()

    def jobs() -> int:
        return int(scalar(conn, "select count(*) from procrastinate_jobs where task_name = 'harvester:send_alert'"))

    assert evaluate_alerts(conn, datetime.now(UTC)) == {"opened": 3, "resolved": 0}
    conn.commit()
    kinds = {r[0] for r in conn.execute("select kind from alert_incidents where resolved_at is null")}
    assert kinds == {"dead_letters_over_threshold", "source_health_error", "worker_gone"}
    assert jobs() == 3  # the Slack channel only wants run_failed
    assert evaluate_alerts(conn, datetime.now(UTC)) == {"opened": 0, "resolved": 0}  # the next tick: nothing new
    conn.commit()

    conn.execute("delete from dead_letters where source_id = %s", (source_id,))
    conn.execute("update sources set last_probe_status = 'ok' where id = %s", (source_id,))
    conn.execute("delete from procrastinate_workers where id = %s", (gone,))
    conn.commit()
    assert evaluate_alerts(conn, datetime.now(UTC)) == {"opened": 0, "resolved": 3}
    conn.commit()
    assert jobs() == 6
