"""Connector manifests: what the Admin Panel needs to build a source form."""

from __future__ import annotations

from litestar import Controller, get

from app.api import schemas as s
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from app.api.problems import not_found, problem_responses
from app.registry import get_spec, known_types
from connectors.base import Manifest

R = problem_responses


def manifest_out(m: Manifest) -> s.ConnectorOut:
    hook = m.webhook
    return s.ConnectorOut(
        connector_type=m.connector_type,
        display_name=m.display_name,
        source_types=list(m.source_types),
        scope_kinds=list(m.scope_kinds),
        content_filters=[s.ContentFilterOut(f.key, f.description, f.default) for f in m.content_filters],
        default_authority=m.default_authority,
        auth_methods=list(m.auth_methods),
        errors=s.ErrorClassesOut(
            transient=sorted(m.errors.transient),
            permanent={str(code): reason for code, reason in sorted(m.errors.permanent.items())},
        ),
        webhook=s.WebhookSpecOut(hook.signature_header, hook.scheme, hook.delivery_id_header) if hook else None,
    )


class ConnectorsController(Controller):
    path = "/connectors"
    tags = ("connectors",)

    @get("/", operation_id="listConnectors", sync_to_thread=False, responses=R(401, 422))
    def list_connectors(self, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> s.ConnectorPage:
        """Installed connectors' manifests by type: scope kinds, filters with defaults, authority, errors, auth.

        Paged like every list (the keyset is the position in the sorted list of types).
        """
        types = sorted(known_types())
        start = decode_cursor("connectors", cursor) or 0
        page = types[start : start + limit + 1]
        return s.ConnectorPage(
            items=[manifest_out(get_spec(t).manifest) for t in page[:limit]],
            next_cursor=next_cursor("connectors", list(range(start + 1, start + len(page) + 1)), limit),
        )

    @get("/{connector_type:str}", operation_id="getConnector", sync_to_thread=False, responses=R(400, 401, 404, 422))
    def get_connector(self, connector_type: str) -> s.ConnectorOut:
        """One connector's manifest."""
        if connector_type not in known_types():
            raise not_found(f"connector {connector_type[:50]!r}")
        return manifest_out(get_spec(connector_type).manifest)
