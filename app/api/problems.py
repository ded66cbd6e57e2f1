"""RFC 9457 problem documents: every error names its type, status and, when one is at fault, the field.

Nothing from an exception's text reaches a client: SQL, parameters and secrets stay on the server. The
server log gets the exception's class and message (registered secrets are masked by app/logs.py) with
the request id that the problem document and its ``X-Request-Id`` header also carry, so an operator can
find the line a client reports.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

import msgspec
import psycopg
from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec

from app.errors import HarvesterError
from app.logs import request_id_var
from app.services.sources import InvalidField, NameTaken, RunConflict

log = logging.getLogger("harvester.api")

PROBLEM_JSON = "application/problem+json"
_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    500: "Internal server error",
    503: "Service unavailable",
}


class Problem(msgspec.Struct, omit_defaults=True):
    """An error (RFC 9457): ``type`` is a stable URN, ``field`` names the request field at fault."""

    type: str
    title: str
    status: int
    detail: str | None = None
    field: str | None = None
    active_run_id: int | None = None
    request_id: str | None = None


class ProblemError(Exception):
    """Raised by handlers and services' adapters; rendered as problem+json."""

    def __init__(
        self, status: int, slug: str, detail: str, *, field: str | None = None, active_run_id: int | None = None
    ) -> None:
        super().__init__(detail)
        self.problem = Problem(
            type=f"urn:harvester:problem:{slug}",
            title=_TITLES.get(status, "Error"),
            status=status,
            detail=detail,
            field=field,
            active_run_id=active_run_id,
        )


API_PREFIX = "/api/v1"


def located(content: Any, path: str, status: int = 201) -> Response[Any]:
    """A 201/202 answer with ``Location`` naming what it created or started (``path`` under /api/v1)."""
    return Response(content=content, status_code=status, headers={"Location": f"{API_PREFIX}{path}"})


def created(content: Any, path: str) -> Response[Any]:
    return located(content, path, 201)


def accepted(content: Any, path: str) -> Response[Any]:
    return located(content, path, 202)


def not_found(what: str) -> ProblemError:
    return ProblemError(404, "not-found", f"{what} does not exist")


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the problem documents an operation can answer with."""
    return {
        s: ResponseSpec(data_container=Problem, description=_TITLES.get(s, "Error"), media_type=PROBLEM_JSON)
        for s in statuses
    }


def _request_id(request: Request[Any, Any, Any]) -> str:
    """The id the audit middleware gave this request; a fresh one for a request no route matched."""
    state = request.scope.get("state")
    rid = state.get("request_id") if isinstance(state, dict) else None
    if not rid:
        rid = request_id_var.get() or uuid.uuid4().hex
    return str(rid)


def _render(request: Request[Any, Any, Any], problem: Problem, headers: dict[str, str] | None = None) -> Response[Any]:
    rid = _request_id(request)
    problem = msgspec.structs.replace(problem, request_id=rid)
    return Response(
        content=msgspec.json.encode(problem),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers={**(headers or {}), "X-Request-Id": rid},
    )


_AT_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`")
_UNKNOWN = re.compile(r"(?:unknown|missing required) field `(?P<name>[^`]+)`")


def _validation_field(extra: Any) -> tuple[str | None, str]:
    """The field a Litestar/msgspec validation error points at, and a message without request data."""
    items = extra if isinstance(extra, list) else []
    for item in items:
        if not isinstance(item, dict):
            continue
        message = str(item.get("message") or "invalid value")
        unknown = _UNKNOWN.search(message)
        at = _AT_PATH.search(message)
        base = _AT_PATH.sub("", message)
        if unknown:
            prefix = at.group("path") if at else ""
            return (f"{prefix}.{unknown.group('name')}" if prefix else unknown.group("name")), base
        if at and at.group("path"):
            return at.group("path"), base
        key = item.get("key")
        # No path in the message: the body as a whole has the wrong type (an array for an object).
        return (str(key) if key and key != "data" else "body"), base
    return None, "the request is invalid"


def _public_name(request: Request[Any, Any, Any], field: str | None) -> str | None:
    """The name a client sent for ``field``: a handler parameter read under an alias (``run_state`` is
    the query parameter ``state``) is named as the client knows it."""
    handler = request.scope.get("route_handler")
    if field is None or not isinstance(handler, HTTPRouteHandler):
        return field
    definition = handler.parsed_fn_signature.parameters.get(field)
    kwarg = getattr(definition, "kwarg_definition", None)
    alias = getattr(kwarg, "name", None) or getattr(kwarg, "query", None)
    return str(alias) if alias else field


def handle_problem(request: Request[Any, Any, Any], exc: ProblemError) -> Response[Any]:
    return _render(request, exc.problem)


def handle_invalid_field(request: Request[Any, Any, Any], exc: InvalidField) -> Response[Any]:
    return _render(request, Problem("urn:harvester:problem:invalid-field", _TITLES[422], 422, exc.message, exc.field))


def handle_name_taken(request: Request[Any, Any, Any], exc: NameTaken) -> Response[Any]:
    return _render(request, Problem("urn:harvester:problem:name-taken", _TITLES[409], 409, exc.message, exc.field))


def handle_run_conflict(request: Request[Any, Any, Any], exc: RunConflict) -> Response[Any]:
    return _render(
        request,
        Problem(
            "urn:harvester:problem:run-active",
            _TITLES[409],
            409,
            f"the source already has an active run (#{exc.active_run_id})",
            active_run_id=exc.active_run_id,
        ),
    )


def handle_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    status = exc.status_code
    if isinstance(exc, ValidationException):
        detail = str(exc.detail or "")
        if "malformed" in detail.lower() or "decode" in detail.lower():
            return _render(
                request,
                Problem(
                    "urn:harvester:problem:malformed-body",
                    _TITLES[400],
                    400,
                    "the body is not valid JSON",
                    field="body",
                ),
            )
        field, message = _validation_field(exc.extra)
        field = _public_name(request, field)
        return _render(request, Problem("urn:harvester:problem:invalid-field", _TITLES[422], 422, message, field))
    if isinstance(exc, NotAuthorizedException):
        return _render(
            request,
            Problem(
                "urn:harvester:problem:unauthorized", _TITLES[401], 401, str(exc.detail or "a bearer token is required")
            ),
            headers={"WWW-Authenticate": 'Bearer realm="harvester"'},
        )
    if status == 413:
        handler = request.scope.get("route_handler")
        limit = handler.resolve_request_max_body_size() if isinstance(handler, HTTPRouteHandler) else None
        detail = f"the request body exceeds the limit of {limit} bytes" if limit else "the request body is too large"
        problem = Problem("urn:harvester:problem:payload-too-large", _TITLES[413], 413, detail, field="body")
        return _render(request, problem)
    if isinstance(exc, PermissionDeniedException):
        return _render(
            request, Problem("urn:harvester:problem:forbidden", _TITLES[403], 403, str(exc.detail or "forbidden"))
        )
    if isinstance(exc, NotFoundException):
        return _render(request, Problem("urn:harvester:problem:not-found", _TITLES[404], 404, "no such resource"))
    title = _TITLES.get(status, "Error")
    slug = title.lower().replace(" ", "-")
    # Litestar's own details for 4xx are generic (method not allowed, media type); 5xx details are hidden.
    detail = str(exc.detail) if status < 500 and exc.detail else title
    headers = dict(exc.headers) if exc.headers and status == 405 else None
    return _render(request, Problem(f"urn:harvester:problem:{slug}", title, status, detail), headers=headers)


def handle_data_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A value PostgreSQL refused (NUL byte, out of range) or text that cannot be encoded: the client's fault."""
    sqlstate = getattr(getattr(exc, "diag", None), "sqlstate", None)
    log.info(
        "refused value on %s %s: %s: %s",
        request.method,
        request.url.path,
        type(exc).__name__,
        exc,
        extra={"sqlstate": sqlstate, "request_id": _request_id(request)},
    )
    return _render(
        request,
        Problem("urn:harvester:problem:invalid-value", _TITLES[422], 422, "a value in the request is not acceptable"),
    )


def handle_harvester_error(request: Request[Any, Any, Any], exc: HarvesterError) -> Response[Any]:
    # HarvesterError texts are written for operators and carry no secrets (app/errors.py), but they may
    # name server paths; the client gets a generic line, the log the class.
    log.warning(
        "request %s %s failed: %s: %s",
        request.method,
        request.url.path,
        type(exc).__name__,
        exc,
        extra={"request_id": _request_id(request), "status": 503},
    )
    return _render(
        request,
        Problem("urn:harvester:problem:unavailable", _TITLES[503], 503, "the service cannot complete this request now"),
    )


LOCK_RETRY_AFTER = "5"  # seconds a client is asked to wait after a request outwaited another session's lock


def handle_lock_wait(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A statement waited longer than ``HARVESTER_API_LOCK_WAIT`` for a lock another session holds (a DBA's
    ALTER TABLE, VACUUM FULL, LOCK TABLE; decision 161): the database is busy, not broken, and the request
    wrote nothing (its transaction rolled back). The client may try again; the log says which request."""
    log.warning(
        "request %s %s waited too long for a lock another session holds (HARVESTER_API_LOCK_WAIT); "
        "see pg_locks for its holder",
        request.method,
        request.url.path,
        extra={"request_id": _request_id(request), "status": 503},
    )
    return _render(
        request,
        Problem(
            "urn:harvester:problem:busy",
            _TITLES[503],
            503,
            "the database is busy with another session's lock; try again shortly",
        ),
        headers={"Retry-After": LOCK_RETRY_AFTER},
    )


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    sqlstate = getattr(getattr(exc, "diag", None), "sqlstate", None)
    log.error(
        "unhandled %s on %s %s: %s",
        type(exc).__name__,
        request.method,
        request.url.path,
        exc,
        exc_info=exc,
        extra={"sqlstate": sqlstate, "request_id": _request_id(request), "status": 500},
    )
    return _render(
        request, Problem("urn:harvester:problem:internal", _TITLES[500], 500, "internal error; see the server log")
    )


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    ProblemError: handle_problem,
    NameTaken: handle_name_taken,  # before InvalidField, its base: a 409, not a 422
    InvalidField: handle_invalid_field,
    RunConflict: handle_run_conflict,
    HTTPException: handle_http,
    psycopg.errors.DataError: handle_data_error,
    psycopg.errors.LockNotAvailable: handle_lock_wait,
    UnicodeEncodeError: handle_data_error,
    HarvesterError: handle_harvester_error,
    Exception: handle_unexpected,
}
