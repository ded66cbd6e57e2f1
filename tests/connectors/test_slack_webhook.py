"""Slack Events API parsing and v0 signatures; Confluence webhook parsing and X-Hub-Signature."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.base import WebhookEvent
from connectors.confluence import webhook as confluence_webhook
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.kit import EmulatorApp, Request, Response, RunningEmulator, serve
from connectors.emulators.slack import SlackEmulator
from connectors.slack.webhook import parse_webhook, verify_signature
from connectors.webhook_sig import slack_signature

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPSDROID = FIXTURES / "opsdroid" / "opsdroid" / "connector" / "slack" / "tests" / "responses"
SDK = FIXTURES / "java-slack-sdk" / "json-logs" / "samples" / "events"


def body(path: Path) -> bytes:
    return path.read_bytes()


def test_url_verification_answers_the_challenge() -> None:
    event = parse_webhook({}, body(OPSDROID / "payload_url_verification.json"))
    assert event == WebhookEvent(delivery_id=None, challenge="here-comes-a-challenge")


def test_message_events_upsert_and_replies_refetch_their_thread() -> None:
    assert parse_webhook({}, body(OPSDROID / "payload_message.json")) == WebhookEvent(
        delivery_id="Ev01NA3KCXSR", upserts=(("message", "C01N9PM1D53:1613563664.001200"),)
    )
    edited = parse_webhook({}, body(OPSDROID / "payload_message_message_changed.json"))
    assert edited.upserts == (("message", "C01N9PM1D53:1613632675.006300"),)
    reply = parse_webhook({}, body(OPSDROID / "payload_message_bot_message.json"))
    assert reply.upserts == (
        ("message", "C01N9PM1D53:1614540106.001400"),  # the parent: its fetch brings the whole thread
        ("message", "C01N9PM1D53:1614540108.001500"),
    )


def test_message_deleted_and_channel_events() -> None:
    data = json.loads(body(SDK / "MessageDeletedPayload.json"))
    data["event"].update(channel="C1", deleted_ts="1700000000.000100")
    data["event"]["previous_message"]["thread_ts"] = "1690000000.000100"
    event = parse_webhook({}, json.dumps(data).encode())
    assert event.deletes == (("message", "C1:1700000000.000100"),)
    assert event.upserts == (("message", "C1:1690000000.000100"),)
    rename = parse_webhook({}, body(OPSDROID / "payload_channel_rename.json"))
    assert rename.upserts and rename.upserts[0][1].endswith(":*")
    assert parse_webhook({}, body(OPSDROID / "payload_pin_added.json")).upserts == ()


@pytest.mark.parametrize("name", sorted(p.name for p in SDK.glob("*.json")) if SDK.is_dir() else [])
def test_every_field_event_samples_parse(name: str) -> None:
    assert isinstance(parse_webhook({}, body(SDK / name)), WebhookEvent)


def test_signature_v0_scheme_with_replay_window() -> None:
    raw = b'{"type":"event_callback"}'
    headers = {"X-Slack-Request-Timestamp": "1700000000", "X-Slack-Signature": slack_signature("s3", "1700000000", raw)}
    assert verify_signature(headers, raw, "s3", now=1700000100)
    assert not verify_signature(headers, raw, "other", now=1700000100)
    assert not verify_signature(headers, raw + b" ", "s3", now=1700000100)
    assert not verify_signature(headers, raw, "s3", now=1700000000 + 301)  # replayed too late
    assert not verify_signature({}, raw, "s3")


class Receiver:
    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        app = EmulatorApp()
        app.route("POST", r"/hook")(self.handle)
        self.running = serve(app)

    def handle(self, req: Request) -> Response:
        with self.lock:
            self.got.append((req.headers, req.body))
        return Response(200, {"ok": True})


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.running.stop()


def post(emu: RunningEmulator, spec: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(emu.base_url + "/_emulator/webhooks/send", json=spec)
    resp.raise_for_status()
    out: dict[str, Any] = resp.json()
    return out


def test_slack_emulator_delivers_signed_events(receiver: Receiver) -> None:
    with serve(SlackEmulator(messages=10)) as emu:
        url = receiver.running.base_url + "/hook"
        out = post(emu, {"url": url, "secret": "sek", "type": "message", "channel": "C0GENERAL",
                         "ts": "1700000000.000100"})  # fmt: skip
        assert out["status"] == 200
        post(emu, {"url": url, "secret": "sek", "type": "message_deleted", "channel": "C0GENERAL", "ts": "1.000100"})
    (h1, b1), (h2, b2) = receiver.got
    assert verify_signature(h1, b1, "sek") and verify_signature(h2, b2, "sek")
    first, second = parse_webhook(h1, b1), parse_webhook(h2, b2)
    assert first.upserts == (("message", "C0GENERAL:1700000000.000100"),)
    assert second.deletes == (("message", "C0GENERAL:1.000100"),)
    assert first.delivery_id and first.delivery_id != second.delivery_id


def test_confluence_emulator_delivers_signed_webhooks(receiver: Receiver) -> None:
    with serve(ConfluenceEmulator(pages=10)) as emu:
        url = receiver.running.base_url + "/hook"
        post(emu, {"url": url, "secret": "k", "event": "page_updated", "page_id": "100003"})
        post(emu, {"url": url, "secret": "k", "event": "page_removed", "page_id": "100004"})
    (h1, b1), (h2, b2) = receiver.got
    assert confluence_webhook.verify_signature(h1, b1, "k") and not confluence_webhook.verify_signature(h1, b1, "x")
    first = confluence_webhook.parse_webhook(h1, b1)
    second = confluence_webhook.parse_webhook(h2, b2)
    assert first.upserts == (("page", "100003"),) and second.deletes == (("page", "100004"),)
    assert first.delivery_id and first.delivery_id != second.delivery_id
