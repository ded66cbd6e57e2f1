"""Jira webhooks (jira-to-matrix captures) -> WebhookEvent; signed delivery from the emulator."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import pytest
from conftest import load_fixture

from connectors.base import MalformedPayload, WebhookEvent
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import EmulatorApp, Request, Response, serve
from connectors.jira import CONNECTOR
from connectors.jira.webhook import parse_webhook


def _hook(*parts: str) -> bytes:
    return json.dumps(load_fixture("jira-to-matrix", "test", "fixtures", "webhooks", *parts)).encode()


def test_issue_events_upsert_the_issue(fixtures_dir: object) -> None:
    headers = {"X-Atlassian-Webhook-Identifier": "d-1"}
    assert parse_webhook(headers, _hook("issue", "created.json")) == WebhookEvent("d-1", (("ticket", "30369"),))
    assert parse_webhook({}, _hook("issue", "updated", "move-issue.json")).upserts == (("ticket", "12490"),)


def test_deleted_issue_is_a_delete(fixtures_dir: object) -> None:
    # No captured jira:issue_deleted exists; Jira sends the same envelope as issue_updated.
    body = json.loads(_hook("issue", "updated", "generic.json"))
    body["webhookEvent"] = "jira:issue_deleted"
    event = parse_webhook({}, json.dumps(body).encode())
    assert event.deletes == (("ticket", "28661"),) and event.upserts == ()


def test_comment_and_link_events_refresh_the_owning_issue(fixtures_dir: object) -> None:
    assert parse_webhook({}, _hook("comment", "created.json")).upserts == (("ticket", "26313"),)
    assert parse_webhook({}, _hook("comment", "deleted.json")).upserts == (("ticket", "11961"),)
    assert parse_webhook({}, _hook("issuelink", "created.json")).upserts == (("ticket", "11442"),)
    assert parse_webhook({}, _hook("project", "created.json")) == WebhookEvent(None)


def test_garbage_is_malformed() -> None:
    with pytest.raises(MalformedPayload):
        parse_webhook({}, b"not json")
    with pytest.raises(MalformedPayload):
        parse_webhook({}, b'{"webhookEvent": "jira:issue_updated", "issue": {}}')


def test_emulator_sends_signed_webhooks_the_parser_accepts() -> None:
    received: list[Request] = []
    sink = EmulatorApp()

    @sink.route("POST", r"/hook")
    def hook(req: Request) -> Response:
        received.append(req)
        return Response(204)

    spec = CONNECTOR.manifest.webhook
    assert spec is not None
    with serve(sink) as target, serve(JiraEmulator(20, seed=1)) as jira:
        sent = httpx.post(
            f"{jira.base_url}/_emulator/webhooks/send",
            json={"url": f"{target.base_url}/hook", "secret": "s", "key": "ALPHA-2", "delivery_id": "d-9"},
        ).json()
    assert sent["status"] == 204
    req = received[0]
    expected = "sha256=" + hmac.new(b"s", req.body, hashlib.sha256).hexdigest()
    assert req.headers[spec.signature_header.lower()] == expected
    event = parse_webhook(req.headers, req.body)
    assert event == WebhookEvent("d-9", (("ticket", "10004"),))
