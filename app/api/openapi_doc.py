"""The finishing pass over the generated OpenAPI document, so a client generator and an Admin Panel can
rely on it (issue 14 §2, STYLE habit 7):

- every error response of every operation is the one problem schema (``application/problem+json``),
  including the 400 Litestar adds on its own for validation errors (our handler answers those as problem
  documents, app/api/problems.py); every operation documents 422, which the unknown-query-parameter guard
  (app/api/input_guard.py) can answer on any of them. ``/health``'s 503 stays a health report: load
  balancers read it, and it is not an error of the request;
- ``Location`` on every 201/202, and OpenAPI links from what a 201/202 created to what reads it, which
  Schemathesis' stateful phase follows;
- realistic examples on request and response schemas and on the problem schema;
- the webhook operation secured by the source's signature, not a bearer token; ``sync-all``'s body
  optional; ``connector_type`` of a new source an enum of the installed connectors.

Litestar builds the document lazily and caches the dict it serves; this pass edits that dict once, when
the app is created, so every render (JSON, YAML, Swagger UI) shows the same document.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin

from app.api.problems import _TITLES, PROBLEM_JSON
from app.registry import known_types

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}

_SOURCE_OUT: dict[str, Any] = {
    "id": 7,
    "name": "Jira — Platform team",
    "connector_type": "jira",
    "base_url": "https://acme.atlassian.net",
    "auth_account": "service",
    "auth_method": "static_token",
    "credential": {"set": True, "mask": "••••9f3c"},
    "state": "active",
    "health": "ok",
    "scope_mode": "selected",
    "scope_list": ["PLAT", "OPS"],
    "content_filters": {"comments": True, "attachments": False},
    "sync_interval": 600,
    "reconcile_interval": None,
    "reconcile_window": None,
    "authority_tier": "normal",
    "authority_tier_inherited": True,
    "webhook_enabled": True,
    "webhook_secret": {"set": True, "mask": "••••a1b2"},
    "incremental_cursor": {"updated": "2026-11-30T09:45:00+00:00"},
    "last_probe_at": "2026-11-30T08:00:02Z",
    "last_probe_status": "ok",
    "created_at": "2026-11-02T10:15:00Z",
    "updated_at": "2026-11-28T16:20:11Z",
    "entity_count": 18432,
    "dlq_depth": 3,
    "last_run": {"id": 1284, "state": "succeeded", "finished_at": "2026-11-30T09:50:41Z", "error_count": 3},
    "schedule": {
        "sync_interval": {"value": 600, "inherited": False},
        "reconcile_interval": {"value": 604800, "inherited": True},
        "reconcile_window": {"value": {"day": "sunday", "time": "03:00"}, "inherited": True},
        "timezone": "Europe/Berlin",
        "next_poll_at": "2026-11-30T10:00:41Z",
        "next_poll_mode": "incremental",
        "next_reconciliation_at": "2026-12-06T02:00:00Z",
    },
}
_RUN_OUT: dict[str, Any] = {
    "id": 1285,
    "source_id": 7,
    "mode": "incremental",
    "trigger": "manual",
    "state": "running",
    "run_type": "incremental",
    "scope": None,
    "entities_done": 420,
    "entities_total": 1200,
    "error_count": 0,
    "error_detail": None,
    "api_calls": 14,
    "rate_limited": 1,
    "deliveries": 1,
    "created_at": "2026-11-30T10:02:00Z",
    "started_at": "2026-11-30T10:02:01Z",
    "finished_at": None,
    "heartbeat_at": "2026-11-30T10:02:31Z",
    "duration_seconds": None,
    "progress": {
        "done": 420,
        "total": 1200,
        "percent": 35.0,
        "elapsed_seconds": 30.2,
        "rate_per_second": 13.9,
        "eta_seconds": 56.1,
    },
}
_TOKEN_OUT: dict[str, Any] = {
    "id": 4,
    "name": "admin-panel",
    "scope": "read",
    "state": "active",
    "created_at": "2026-11-30T09:00:00Z",
    "expires_at": "2027-03-01T00:00:00Z",
    "last_used_at": "2026-11-30T09:58:00Z",
    "revoked_at": None,
}
_CURSOR = "c291cmNlczo3OjQxYjZmMzFmZTk1Mw"

# Component schema -> one realistic example (OpenAPI 3.1 ``examples`` on the schema object).
EXAMPLES: dict[str, Any] = {
    "Problem": {
        "type": "urn:harvester:problem:name-taken",
        "title": "Conflict",
        "status": 409,
        "detail": "a source named 'Jira — Platform team' already exists",
        "field": "name",
        "request_id": "5f0c2a9be3d14c47a1e0c7d2b6a4f901",
    },
    "SourceCreate": {
        "name": "Jira — Platform team",
        "connector_type": "jira",
        "base_url": "https://acme.atlassian.net",
        "credential": "ATATT3xFfGF0-example-token",
        "webhook_secret": "whsec-7d1f0c2e9b4a4e6f",
        "scope_mode": "selected",
        "scope_list": ["PLAT", "OPS"],
        "sync_interval": 600,
        "reconcile_window": {"day": "sunday", "time": "03:00"},
        "webhook_enabled": True,
    },
    "SourcePatch": {"state": "paused", "sync_interval": None, "reconcile_window": {"day": "saturday", "time": "22:30"}},
    "SourceOut": _SOURCE_OUT,
    "SourcePage": {"items": [_SOURCE_OUT], "next_cursor": _CURSOR},
    "WindowIn": {"day": "sunday", "time": "03:00"},
    "WindowOut": {"day": "sunday", "time": "03:00"},
    "RunCreate": {"mode": "incremental", "scope": {"kind": "window", "since": "2026-11-29T00:00:00Z"}},
    "RunOut": _RUN_OUT,
    "RunPage": {"items": [_RUN_OUT], "next_cursor": None},
    "SyncAllCreate": {"mode": "incremental"},
    "TokenCreate": {"name": "admin-panel", "scope": "read", "expires_at": "2027-03-01T00:00:00Z"},
    "TokenOut": _TOKEN_OUT,
    "TokenCreated": {**_TOKEN_OUT, "token": "hv_3Jq9Xw2LkP0mZr8TbY5nV1cE7sA4dF6g"},
    "TokenPage": {"items": [_TOKEN_OUT], "next_cursor": None},
    "NotesIn": {
        "fact_status": "in progress",
        "work_kind": "migration",
        "done_text": "Schema moved to v2; readers switched.",
        "rest_text": "Drop the v1 tables after the December release.",
        "owner_note": "Ask Dana before closing.",
    },
    "SettingsUpdate": {"version": 12, "sync_interval": 900, "reconcile_window": {"day": "sunday", "time": "03:00"}},
    "DeadLetterOut": {
        "id": 311,
        "source_id": 7,
        "run_id": 1284,
        "source_type": "issue",
        "source_entity_id": "PLAT-1042",
        "reason": "permission",
        "error_detail": "403 Forbidden: the service account cannot browse project PLAT",
        "attempts": 2,
        "created_at": "2026-11-29T03:12:09Z",
        "updated_at": "2026-11-30T09:50:40Z",
    },
}

# Operation id -> its 201/202 response's links (what reads the thing just created or started).
LINKS: dict[str, dict[str, Any]] = {
    "createSource": {
        "GetSource": {"operationId": "getSource", "parameters": {"source_id": "$response.body#/id"}},
        "ListSourceRuns": {"operationId": "listRuns", "parameters": {"source_id": "$response.body#/id"}},
        "UpdateSource": {"operationId": "updateSource", "parameters": {"source_id": "$response.body#/id"}},
        "StartRun": {"operationId": "startRun", "parameters": {"source_id": "$response.body#/id"}},
    },
    "startRun": {
        "GetRun": {"operationId": "getRun", "parameters": {"run_id": "$response.body#/id"}},
        "CancelRun": {"operationId": "cancelRun", "parameters": {"run_id": "$response.body#/id"}},
    },
    "retryDeadLetters": {
        "GetRun": {"operationId": "getRun", "parameters": {"run_id": "$response.body#/id"}},
    },
    "createToken": {
        "GetToken": {"operationId": "getToken", "parameters": {"token_id": "$response.body#/id"}},
        "RevokeToken": {"operationId": "revokeToken", "parameters": {"token_id": "$response.body#/id"}},
    },
}
LOCATION_HEADER = {
    "description": "the created resource, or the started run (sync-all: the group's status)",
    "schema": {"type": "string", "examples": ["/api/v1/runs/1285"]},
}
SIGNATURE_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "X-Hub-Signature",
    "description": "HMAC of the raw body with the source's webhook secret. The header and scheme are the "
    "connector's (GET /api/v1/connectors/{type} -> webhook.signature_header); no bearer token is sent.",
}
WEBHOOK_OPERATIONS = {"receiveWebhook"}
OPTIONAL_BODIES = {"syncAll"}


def _problem_response(status: int) -> dict[str, Any]:
    return {
        "description": _TITLES.get(status, "Error"),
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    }


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional query parameter's schema without its ``null`` branch: absent means "no filter", and
    a query string cannot carry a null (generated clients otherwise grow a type per branch)."""
    variants = schema.get("oneOf")
    if isinstance(variants, list):
        rest = [v for v in variants if v != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(variants):
            merged = {k: v for k, v in schema.items() if k != "oneOf"}
            return {**rest[0], **merged}
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        schema = {**schema, "type": next(k for k in kinds if k != "null") if len(kinds) == 2 else kinds}
        if isinstance(schema.get("enum"), list):
            schema["enum"] = [v for v in schema["enum"] if v is not None]
    return schema


def _finish_operation(op: dict[str, Any]) -> None:
    for parameter in op.get("parameters", []):
        if parameter.get("in") == "query" and not parameter.get("required") and "schema" in parameter:
            parameter["schema"] = _without_null(parameter["schema"])
    responses: dict[str, Any] = op.setdefault("responses", {})
    for code in list(responses):
        if int(code) >= 400 and op.get("operationId") != "health":
            responses[code] = _problem_response(int(code))
    responses.setdefault("422", _problem_response(422))
    operation_id = op.get("operationId", "")
    for code in ("201", "202"):
        # A webhook's 202 acknowledges a delivery: nothing addressable was created.
        if code in responses and operation_id not in WEBHOOK_OPERATIONS:
            responses[code].setdefault("headers", {})["Location"] = LOCATION_HEADER
            if operation_id in LINKS:
                responses[code]["links"] = LINKS[operation_id]
    if operation_id in WEBHOOK_OPERATIONS:
        op["security"] = [{"webhookSignature": []}]
    if operation_id in OPTIONAL_BODIES and "requestBody" in op:
        op["requestBody"]["required"] = False


def finish_document(app: Litestar) -> None:
    """Apply the pass above to the document ``app`` serves (call once, after the routes are final)."""
    doc = app.plugins.get(OpenAPIPlugin).provide_openapi_schema()
    for item in doc.get("paths", {}).values():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                _finish_operation(item[method])
    components = doc.setdefault("components", {})
    components.setdefault("securitySchemes", {})["webhookSignature"] = SIGNATURE_SCHEME
    schemas = components.get("schemas", {})
    # The installed connectors, as an enum: a form can offer them and a client can type them.
    connector_type = schemas.get("SourceCreate", {}).get("properties", {}).get("connector_type")
    if connector_type is not None:
        connector_type["enum"] = sorted(known_types())
    for name, example in EXAMPLES.items():
        if name in schemas:
            schemas[name]["examples"] = [example]
