"""The API docs pages, offline: Swagger UI from an installed package, and operation summaries for clients.

The OpenAPI UIs Litestar renders load their scripts from public CDNs by default and show a blank page
without internet (issue 14 item 1). Swagger UI 5's files come from the ``swagger-ui-bundle-v2`` wheel
(import name ``swagger_ui_bundle``) instead and are served under ``/schema/static/swagger-ui/``; no PyPI
package ships ReDoc, Scalar or Stoplight Elements, so those pages are not served at all rather than blank.
"""

from __future__ import annotations

import re
from pathlib import Path

from litestar import Litestar, Router
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin, YamlRenderPlugin
from litestar.static_files import create_static_files_router
from swagger_ui_bundle import swagger_ui_path

SCHEMA_PATH = "/schema"
ASSETS = f"{SCHEMA_PATH}/static/swagger-ui"
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def render_plugins() -> list[SwaggerRenderPlugin | JsonRenderPlugin | YamlRenderPlugin]:
    """Swagger UI at ``/schema`` and ``/schema/swagger`` with local assets; the document as JSON and YAML."""
    swagger = SwaggerRenderPlugin(
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>",
        path=["/", "/swagger"],
    )
    return [swagger, JsonRenderPlugin(), YamlRenderPlugin()]


def assets_router() -> Router:
    """Swagger UI's JS, CSS and icons from the installed ``swagger-ui-bundle-v2`` package (no token: docs)."""
    return create_static_files_router(
        path=ASSETS,
        directories=[Path(str(swagger_ui_path))],
        include_in_schema=False,
        name="swagger-ui-assets",
    )


def summary_of(operation_id: str) -> str:
    """``retryDeadLetters`` -> ``Retry dead letters``: one readable, unique summary per operation."""
    words = [w.lower() for w in _WORD.findall(operation_id)]
    return " ".join(words).capitalize()


def document_operations(app: Litestar) -> None:
    """Give every operation a summary from its operation id (its docstring is its description).

    Litestar's default summary is the handler's name (``Retry``, ``Summary``), which says nothing once
    two controllers have one; the operation id is unique by construction.
    """
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            operation_id = getattr(handler, "operation_id", None)
            if isinstance(handler, HTTPRouteHandler) and handler.summary is None and isinstance(operation_id, str):
                handler.summary = summary_of(operation_id)
