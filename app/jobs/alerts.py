"""The ``send_alert`` job: one notification of one incident to one channel (issue 10 §4).

Channels are platform settings (``alert_channels``): ``webhook`` gets a JSON document signed with
HMAC-SHA256 of the body under the channel's key (``X-Harvester-Signature: sha256=<hex>``); ``slack`` gets
Slack's incoming-webhook format (``{"text": ...}``). A receiver that is down or slow fails the attempt:
Procrastinate retries with exponential backoff, bounded (:data:`ATTEMPTS`, about 35 minutes in all);
the first failure of a delivery is logged, the later ones are only counted (``send_failures``, metric
``harvester_alert_delivery_failures_total``) until it is delivered or given up. Sync runs never wait on
this: the job runs in its own queue (``alerts``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import UTC, datetime
from typing import Any

import httpx
import procrastinate
from procrastinate import JobContext, RetryStrategy

from app.config import load_config
from app.db.connect import connect, database_url
from app.http_answer import BoundedClient, post_bounded
from app.jobs.common import ALERTS_QUEUE
from app.queries import alerts as aq
from app.redact import register_secret
from app.secrets import load_keyring
from app.services.alerts import alert_settings

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()
QUEUE = ALERTS_QUEUE
ATTEMPTS = 10
TIMEOUT = 10.0
# A receiver's answer in all, however its bytes trickle, and its size (only its status is read; decision 162).
ANSWER_SECONDS = 3 * TIMEOUT
ANSWER_MAX_BYTES = 1024 * 1024
SIGNATURE_HEADER = "X-Harvester-Signature"

_TITLES = {
    "run_failed": "sync run failed",
    "source_health_error": "source health is error",
    "mass_delete_held": "reconciliation held by the mass-deletion guard",
    "dead_letters_over_threshold": "dead-letter queue over threshold",
    "worker_gone": "worker gone",
}


class AlertNotDelivered(Exception):
    """The channel did not take the notification; Procrastinate retries the job."""


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def render(incident: aq.GetIncidentRow, event: str, source: aq.ListSourceNamesRow | None) -> dict[str, Any]:
    """The notification document (also the basis of the Slack text)."""
    title = _TITLES.get(incident.kind, incident.kind)
    about = f"source {source.name!r} ({source.connector_type})" if source else incident.subject
    if event == "resolved":
        text = f"[Harvester] RESOLVED: {title} — {about}"
    else:
        text = f"[Harvester] {title} — {about}: {incident.detail or ''}".rstrip(": ")
    return {
        "event": event,
        "kind": incident.kind,
        "subject": incident.subject,
        "source": {"id": source.id, "name": source.name, "connector": source.connector_type} if source else None,
        "detail": incident.detail,
        "incident_id": incident.id,
        "opened_at": incident.opened_at.isoformat(),
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        "sent_at": datetime.now(UTC).isoformat(),
        "text": text,
    }


def deliver(
    channel: dict[str, Any], document: dict[str, Any], secret: str | None, answer_seconds: float = ANSWER_SECONDS
) -> None:
    """POST ``document`` in the channel's format; raises AlertNotDelivered on anything but 2xx, and on an
    answer that has not ended ``answer_seconds`` after the request."""
    if channel.get("kind") == "slack":
        body = json.dumps({"text": document["text"]}).encode()
    else:
        body = json.dumps(document, separators=(",", ":")).encode()
    headers = {"content-type": "application/json", "user-agent": "harvester-alerts"}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    try:
        with BoundedClient(timeout=TIMEOUT) as client:
            response = post_bounded(
                client,
                str(channel["url"]),
                max_bytes=ANSWER_MAX_BYTES,
                max_seconds=answer_seconds,
                content=body,
                headers=headers,
            )
    except httpx.HTTPError as exc:
        raise AlertNotDelivered(f"{type(exc).__name__} from the receiver") from None
    if response.status_code >= 300:
        raise AlertNotDelivered(f"the receiver answered HTTP {response.status_code}")


@blueprint.task(
    name="send_alert",
    queue=QUEUE,
    pass_context=True,
    # 1 + 2^(n+1) s between attempts: 3 s, 5 s, 9 s, ... ~17 min; bounded so a dead channel ends.
    retry=RetryStrategy(max_attempts=ATTEMPTS, wait=1, exponential_wait=2, retry_exceptions={AlertNotDelivered}),
)
def send_alert(context: JobContext, incident_id: int, event: str, channel: int) -> str:
    config = load_config()
    attempt = int(context.job.attempts or 0)
    with connect(database_url(config)) as conn:
        incident = aq.get_incident(conn, id=incident_id)
        settings = alert_settings(conn)
        conn.commit()
        if incident is None or channel >= len(settings.channels):
            return "dropped"  # the incident or the channel was removed meanwhile
        target = settings.channels[channel]
        if target.get("kind") == "slack":
            register_secret(str(target.get("url", "")))  # a Slack webhook URL is its own credential
        source = None
        if incident.subject.startswith("source:"):
            wanted = int(incident.subject.split(":", 1)[1])
            source = next((s for s in aq.list_source_names(conn) if s.id == wanted), None)
        secret = None
        if target.get("secret_enc"):
            secret = load_keyring(config).decrypt(str(target["secret_enc"]), context="alert_channel")
        document = render(incident, event, source)
        where = {"incident_id": incident_id, "alert_event": event, "channel": channel, "attempt": attempt + 1}
        try:
            deliver(target, document, secret)
        except AlertNotDelivered as exc:
            aq.count_incident_send_failure(conn, id=incident_id)
            conn.commit()
            if attempt == 0:
                log.error("alert not delivered, retrying with backoff: %s", exc, extra=where)
            elif attempt + 1 >= ATTEMPTS:
                log.error("alert given up after %s attempts: %s", ATTEMPTS, exc, extra=where)
            raise
        aq.mark_incident_sent(conn, id=incident_id)
        conn.commit()
    if attempt:
        log.warning("alert delivered after %s failed attempt(s)", attempt, extra=where)
    else:
        log.info("alert delivered", extra=where)
    return "sent"
