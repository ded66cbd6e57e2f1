"""Testing a draft source's connection without saving it (issue 14 §6): ``POST /api/v1/sources/test``.

The body is the one ``POST /sources`` takes; only the connection fields matter. Nothing is written, and
the answer never carries the credential or the webhook secret (``detail`` names URLs and scope units).
"""

from __future__ import annotations

from typing import Literal

import msgspec
from litestar import Controller, post

from app.api import schemas as s
from app.api.problems import problem_responses
from app.services.connection_test import DraftSource, check_connection
from app.services.sources import InvalidField, check_base_url, check_credential, validate_against_manifest

R = problem_responses


class ConnectionTestOut(msgspec.Struct, kw_only=True):
    """``ok`` with ``reason: ok``, or why not: ``auth_failed``, ``unreachable``, ``scope_not_visible``."""

    ok: bool
    reason: Literal["ok", "auth_failed", "unreachable", "scope_not_visible"]
    detail: str


class ConnectionTestController(Controller):
    path = "/sources/test"
    tags = ("sources",)

    @post(
        "/",
        operation_id="testSourceConnection",
        sync_to_thread=True,
        status_code=200,
        responses=R(400, 401, 403, 413, 415, 422),
    )
    def test_connection(self, data: s.SourceCreate) -> ConnectionTestOut:
        """Probe a source that is not saved: the same body as ``POST /sources``, nothing stored.

        200 answers ``ok`` or the reason the connection fails: ``auth_failed`` (the source refused the
        credential), ``unreachable`` (no answer from ``base_url``, or not that connector's API) or
        ``scope_not_visible`` (an allow-listed project, space or channel the credential cannot see; the
        detail names them). 422 names an invalid field. Secrets are never echoed.
        """
        if not data.base_url:
            raise InvalidField("base_url", "is required to test a connection")
        check_credential(data.credential)
        check_base_url(data.base_url)
        validate_against_manifest(data.connector_type, data.scope_list, data.content_filters, data.auth_method)
        result = check_connection(
            DraftSource(
                connector_type=data.connector_type,
                base_url=data.base_url,
                credential=data.credential,
                scope_mode=data.scope_mode,
                scope_list=list(data.scope_list),
                content_filters=data.content_filters,
            )
        )
        return ConnectionTestOut(ok=result.ok, reason=result.reason, detail=result.detail)
