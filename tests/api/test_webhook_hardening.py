"""Webhooks under attack (issue 11, Deliver 5), through the real server process: unauthenticated bytes in
the signature headers, absurd timestamps and deeply nested signed bodies give 4xx, never 500; a signed
body replayed with fresh unsigned delivery ids is processed once."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import httpx
import psycopg
import pytest

from tests.api.conftest import Server, SourceFactory, job_count

SECRET = "hook-secret-hardening-0042"


def _hub(raw: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def _slack(raw: bytes, stamp: str, secret: str = SECRET) -> str:
    return "v0=" + hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + raw, hashlib.sha256).hexdigest()


def _issue_event(issue_id: str) -> bytes:
    return json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": issue_id, "fields": {}}}).encode()


def _stored(api: Server, source_id: int) -> tuple[int, int]:
    with psycopg.connect(api.db_url) as conn:
        row = conn.execute("select count(*) from webhook_deliveries where source_id = %s", (source_id,)).fetchone()
    assert row is not None
    return int(row[0]), job_count(api.db_url, "harvester:apply_webhook", source_id)


def _pending(api: Server, source_id: int) -> list[str]:
    with psycopg.connect(api.db_url) as conn:
        rows = conn.execute(
            "select source_entity_id from webhook_pending where source_id = %s order by 1", (source_id,)
        ).fetchall()
    return [r[0] for r in rows]


@pytest.fixture()
def jira_hook(make_source: SourceFactory) -> dict[str, Any]:
    return make_source(webhook_enabled=True, webhook_secret=SECRET)


@pytest.fixture()
def slack_hook(make_source: SourceFactory) -> dict[str, Any]:
    return make_source(connector_type="slack", webhook_enabled=True, webhook_secret=SECRET)


def _post(api: Server, source_id: int, body: bytes, headers: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{api.base_url}/api/v1/webhooks/{source_id}",
        content=body,
        headers={"content-type": "application/json", **headers},
        timeout=60,
    )


HUB_GARBAGE: list[bytes] = [
    b"sha256=\xff\xfe\xfd",
    "sha256=é".encode("latin-1"),
    b"sha256=" + "€".encode() * 20,
    b"sha256=zz" + b"g" * 62,
    b"sha256=" + b"0" * 10_000,
    b"\x80",
    b"sha256=",
    b"md5=abc",
]


@pytest.mark.parametrize("value", HUB_GARBAGE)
def test_any_bytes_in_x_hub_signature_are_401(api: Server, jira_hook: dict[str, Any], value: bytes) -> None:
    r = _post(api, jira_hook["id"], _issue_event("10001"), {"X-Hub-Signature": value})
    assert r.status_code == 401, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert _stored(api, jira_hook["id"]) == (0, 0)


SLACK_GARBAGE: list[tuple[bytes, bytes | None]] = [
    (b"v0=\xff\xfe", None),
    ("v0=é".encode("latin-1"), None),
    (b"v0=" + b"z" * 64, None),
    (b"v0=" + b"0" * 64, b"9" * 5_000),  # int() refuses more than 4,300 digits
    (b"v0=" + b"0" * 64, "١٧٠٠٠٠٠٠٠٠".encode()),  # non-ASCII digits that int() would read
    (b"v0=" + b"0" * 64, b"-1"),
    (b"v0=" + b"0" * 64, b"\xff"),
]


@pytest.mark.parametrize(("signature", "stamp"), SLACK_GARBAGE)
def test_any_bytes_in_slack_signature_headers_are_401(
    api: Server, slack_hook: dict[str, Any], signature: bytes, stamp: bytes | None
) -> None:
    body = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}).encode()
    headers = {
        "X-Slack-Signature": signature,
        "X-Slack-Request-Timestamp": stamp if stamp is not None else str(int(time.time())).encode(),
    }
    r = _post(api, slack_hook["id"], body, headers)
    assert r.status_code == 401, r.text
    assert _stored(api, slack_hook["id"]) == (0, 0)


def test_a_correct_signature_with_a_5000_digit_timestamp_is_401(api: Server, slack_hook: dict[str, Any]) -> None:
    body = b'{"type":"event_callback","event_id":"Ev2","event":{}}'
    stamp = "1" + "0" * 4_999
    r = _post(
        api, slack_hook["id"], body, {"X-Slack-Signature": _slack(body, stamp), "X-Slack-Request-Timestamp": stamp}
    )
    assert r.status_code == 401, r.text


@pytest.mark.parametrize("levels", [2_000, 100_000])
def test_a_signed_body_nested_deep_is_422(
    api: Server, jira_hook: dict[str, Any], slack_hook: dict[str, Any], levels: int
) -> None:
    body = b'{"webhookEvent":"jira:issue_updated","issue":' + b"[" * levels + b"]" * levels + b"}"
    r = _post(api, jira_hook["id"], body, {"X-Hub-Signature": _hub(body)})
    assert r.status_code == 422, r.text
    stamp = str(int(time.time()))
    r = _post(
        api, slack_hook["id"], body, {"X-Slack-Signature": _slack(body, stamp), "X-Slack-Request-Timestamp": stamp}
    )
    assert r.status_code == 422, r.text
    assert _stored(api, jira_hook["id"]) == (0, 0) and _stored(api, slack_hook["id"]) == (0, 0)


def test_a_replay_with_20_fresh_unsigned_ids_is_processed_once(api: Server, jira_hook: dict[str, Any]) -> None:
    body = _issue_event("10003")
    statuses = [
        _post(
            api, jira_hook["id"], body, {"X-Hub-Signature": _hub(body), "X-Atlassian-Webhook-Identifier": f"fresh-{i}"}
        ).status_code
        for i in range(20)
    ]
    assert statuses == [202] + [200] * 19
    assert _stored(api, jira_hook["id"]) == (1, 1)
    # A genuinely new event (another signed body) is still taken: its item joins the pending set, which the
    # job already waiting takes whole (decision 145), so no second job.
    other = _issue_event("10004")
    assert _post(api, jira_hook["id"], other, {"X-Hub-Signature": _hub(other)}).status_code == 202
    assert _stored(api, jira_hook["id"]) == (2, 1)
    assert _pending(api, jira_hook["id"]) == ["10003", "10004"]


def test_a_slack_retry_with_a_fresh_timestamp_is_processed_once(api: Server, slack_hook: dict[str, Any]) -> None:
    body = json.dumps(
        {
            "type": "event_callback",
            "event_id": "Ev0RETRY",
            "event": {"type": "message", "channel": "C0123", "ts": "1700000000.000100", "text": "hi"},
        }
    ).encode()
    statuses = []
    for delta in (0, 1, 2):
        stamp = str(int(time.time()) - delta)
        headers = {"X-Slack-Signature": _slack(body, stamp), "X-Slack-Request-Timestamp": stamp}
        statuses.append(_post(api, slack_hook["id"], body, headers).status_code)
    assert statuses == [202, 200, 200]
    assert _stored(api, slack_hook["id"]) == (1, 1)


def test_no_webhook_request_left_an_unhandled_error(api: Server) -> None:
    logs = api.logs()
    assert "unhandled" not in logs and "Traceback" not in logs, logs[-3000:]
