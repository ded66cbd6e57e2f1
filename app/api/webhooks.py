"""Webhook receiver: HMAC-verified, deduplicated by delivery id, enqueued; never syncs inline."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from litestar import Controller, Request, Response, post
from litestar.openapi.datastructures import ResponseSpec

from app.api import schemas as s
from app.api.db import Database
from app.api.input_guard import MAX_BODY_BYTES
from app.api.metrics import WEBHOOKS
from app.api.params import SourceId
from app.api.problems import ProblemError, problem_responses
from app.secrets import Keyring
from app.services.jobs import APPLY_WEBHOOK, defer_in
from app.services.webhooks import Intake, WebhookRefused, receive

MAX_BODY = MAX_BODY_BYTES
R = problem_responses


class WebhooksController(Controller):
    path = "/webhooks"
    tags = ("webhooks",)

    @post(
        "/{source_id:int}",
        operation_id="receiveWebhook",
        opt={"auth": "public", "query": "any"},
        request_max_body_size=MAX_BODY,
        responses={
            200: ResponseSpec(data_container=s.WebhookOut, description="a replay, or Slack's challenge answered"),
            **R(400, 401, 403, 404, 409, 413, 422),
        },
        status_code=202,
    )
    async def receive_webhook(
        self,
        source_id: SourceId,
        request: Request[Any, Any, Any],
        db: Database,
        keyring: Keyring,
    ) -> Response[s.WebhookOut]:
        """A source's webhook. Authenticated by the source's HMAC signature, not a bearer token.

        202: accepted and queued (or ignored: nothing to sync); 200: a replay of a delivery already taken,
        or Slack's url_verification challenge. Unknown or inactive source, webhooks off, bad signature:
        4xx and nothing stored.
        """
        body = await request.body()
        headers = dict(request.headers)

        def work() -> Intake:
            with db.tx() as conn:

                def defer(sid: int) -> None:
                    defer_in(conn, APPLY_WEBHOOK, source_id=sid)

                return receive(conn, keyring, source_id, headers, body, defer)

        try:
            intake = await anyio.to_thread.run_sync(work)
        except WebhookRefused as exc:
            WEBHOOKS.count("refused")
            raise ProblemError(exc.status, exc.slug, exc.detail) from None
        WEBHOOKS.count(intake.outcome)
        if intake.outcome == "challenge":
            return Response(s.WebhookOut(status="challenge", challenge=intake.challenge), status_code=200)
        status = 200 if intake.outcome == "duplicate" else 202
        return Response(
            s.WebhookOut(status=intake.outcome, delivery_id=intake.delivery_id, items=intake.items), status_code=status
        )
