"""One audit event per mutating admin request, and a request id on every request (issue 10 §3, §5).

One ASGI middleware around every route does both, so no handler can forget either:

- the request id is the client's ``X-Request-Id`` when it is sane (1-128 of ``[A-Za-z0-9._:-]``), else a
  fresh one; it is echoed in the ``X-Request-Id`` response header, stamped on every log line written
  while serving the request (app/logs.py) and carried by problem documents (app/api/problems.py);
- an operation listed in :data:`AUDITED` emits exactly one event when its response starts, or when it
  raises (the exception handler outside this middleware then renders it), with the token's name as
  actor and ok/error by status.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from litestar.enums import ScopeType
from litestar.exceptions import HTTPException
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app import audit
from app.logs import request_id_var

REQUEST_ID_HEADER = "x-request-id"
_SANE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")

# operation_id -> (action, target kind, path parameter naming the target)
AUDITED: dict[str, tuple[str, str, str | None]] = {
    "createSource": ("sources.create", "source", None),
    "updateSource": ("sources.update", "source", "source_id"),
    "deleteSource": ("sources.delete", "source", "source_id"),
    "connectSource": ("sources.connect", "source", "source_id"),
    "startRun": ("runs.start", "source", "source_id"),
    "cancelRun": ("runs.cancel", "run", "run_id"),
    "syncAll": ("runs.sync_all", "sources", None),
    "retryDeadLetters": ("dead_letters.retry", "source", "source_id"),
    "putSettings": ("settings.update", "settings", None),
    "putNotes": ("notes.update", "entity", "entity_id"),
    "createToken": ("tokens.create", "token", None),
    "revokeToken": ("tokens.revoke", "token", "token_id"),
}
# Actions whose target id is read from the created resource in the response body (the body is parsed
# for its "id" only and never kept: a created token's value is in it).
_CREATES = frozenset({"sources.create", "tokens.create"})


def request_id_of(scope: Scope) -> str | None:
    state = scope.get("state")
    rid = state.get("request_id") if isinstance(state, dict) else None
    return str(rid) if rid else None


def _incoming_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"x-request-id":
            text = value.decode("latin-1").strip()
            if _SANE_ID.match(text):
                return text
    return uuid.uuid4().hex


def _status_of(exc: BaseException) -> int:
    from app.api.problems import ProblemError
    from app.services.sources import InvalidField, RunConflict

    if isinstance(exc, ProblemError):
        return exc.problem.status
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, InvalidField):
        return 422
    if isinstance(exc, RunConflict):
        return 409
    return 500


def _actor(scope: Scope) -> str:
    state = scope.get("state")
    principal = state.get("principal") if isinstance(state, dict) else None
    name = getattr(principal, "name", None)
    return f"token:{name}" if name else "anonymous"


def _target(scope: Scope, kind: str, param: str | None, created_id: Any) -> str:
    if param:
        value = (scope.get("path_params") or {}).get(param)
        return f"{kind}:{value}" if value is not None else kind
    if created_id is not None:
        return f"{kind}:{created_id}"
    return kind


def audit_middleware(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        rid = _incoming_id(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = rid
        token = request_id_var.set(rid)
        handler = scope.get("route_handler")
        operation = getattr(handler, "operation_id", None)
        audited = AUDITED.get(operation) if isinstance(operation, str) else None
        status: list[int] = []
        body = bytearray()
        emitted: list[bool] = []

        def record(code: int) -> None:
            if audited and not emitted:
                emitted.append(True)
                _emit(scope, audited, code, rid, _created_id(body) if code < 300 else None)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"x-request-id" for k, _ in headers):
                    headers.append((b"x-request-id", rid.encode()))
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                if audited and audited[0] in _CREATES:
                    body.extend(message.get("body", b"")[: 65536 - len(body)])
                if not message.get("more_body", False):
                    # Before the last byte leaves: a client that got its answer finds the event written.
                    record(status[0] if status else 500)
            await send(message)

        try:
            await app(scope, receive, send_with_id)
        except BaseException as exc:
            record(_status_of(exc))
            raise
        else:
            record(status[0] if status else 500)
        finally:
            request_id_var.reset(token)

    return middleware


def _created_id(body: bytes | bytearray) -> Any:
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        return None
    return doc.get("id") if isinstance(doc, dict) else None


def _emit(scope: Scope, audited: tuple[str, str, str | None], status: int, rid: str, created: Any) -> None:
    action, kind, param = audited
    audit.emit(
        actor=_actor(scope),
        action=action,
        target=_target(scope, kind, param, created),
        result="ok" if status < 400 else "error",
        status=status,
        request_id=rid,
        via="api",
    )
