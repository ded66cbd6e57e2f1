"""Connector manifests: what the Admin Panel needs to build a source form."""

from __future__ import annotations

from litestar import Controller, get

from app.api import schemas as s
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

    @get("/", operation_id="listConnectors", sync_to_thread=False, responses=R(401))
    def list_connectors(self) -> list[s.ConnectorOut]:
        """Every installed connector's manifest: scope kinds, filters with defaults, authority, errors, auth."""
        return [manifest_out(get_spec(t).manifest) for t in known_types()]

    @get("/{connector_type:str}", operation_id="getConnector", sync_to_thread=False, responses=R(401, 404))
    def get_connector(self, connector_type: str) -> s.ConnectorOut:
        """One connector's manifest."""
        if connector_type not in known_types():
            raise not_found(f"connector {connector_type[:50]!r}")
        return manifest_out(get_spec(connector_type).manifest)
