"""The Litestar application: routers, the token middleware, problem handlers, and a lifespan that owns the pool.

``create_app`` is what ``harvester serve`` runs. The lifespan opens one psycopg pool (every connection
``SET ROLE harvester_api``); deferring a job is just another statement in the request's transaction
(app.services.jobs), so the API needs no Procrastinate app of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from litestar import Litestar, Router
from litestar.config.cors import CORSConfig
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from app.api.audit import audit_middleware
from app.api.auth import token_middleware
from app.api.change_listener import ChangeListener, Subscription
from app.api.connection_test import ConnectionTestController
from app.api.connectors import ConnectorsController
from app.api.db import Database, open_pool
from app.api.dead_letters import DeadLettersController
from app.api.deps import Opened, dependencies
from app.api.docs import SCHEMA_PATH, assets_router, document_operations, render_plugins
from app.api.input_guard import MAX_BODY_BYTES, check_request
from app.api.notes import NotesController
from app.api.openapi_doc import finish_document
from app.api.ops import health, metrics_handler
from app.api.principals import PrincipalsController
from app.api.problems import EXCEPTION_HANDLERS
from app.api.runs import RunsController
from app.api.runs_cache import RUNS_CHANNEL, RunsCache, writes_clear_middleware
from app.api.search import SearchController
from app.api.settings import SettingsController
from app.api.sources import SourcesController
from app.api.token_cache import TOKENS_CHANNEL, TokenCache
from app.api.tokens import TokensController
from app.api.webhooks import WebhooksController
from app.api.workers import WorkersController
from app.config import DEFAULT_API_LOCK_WAIT, EmbedderConfig
from app.queries import runs as rq
from app.queries import tokens as tq
from app.secrets import Keyring

API_PREFIX = "/api/v1"


def create_app(
    url: str,
    keyring: Keyring,
    *,
    metrics_public: bool = True,
    embedder: EmbedderConfig | None = None,
    pool_size: int = 10,
    extra_routes: list[Router] | None = None,
    cors_origins: tuple[str, ...] = (),
    lock_wait_s: int = DEFAULT_API_LOCK_WAIT,
) -> Litestar:
    """The admin API on database ``url`` with secrets under ``keyring``.

    ``embedder``: what search embeds queries with (``None``: loaded from the environment on first search).
    ``cors_origins``: browser origins allowed to call the API (``HARVESTER_CORS_ORIGINS``); empty: none.
    ``lock_wait_s``: how long a request's statement waits for another session's lock (``HARVESTER_API_LOCK_WAIT``).
    """

    opened = Opened()  # the providers' view of what the lifespan opens (app/api/deps.py)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        pool = await anyio.to_thread.run_sync(lambda: open_pool(url, max_size=pool_size, lock_wait_s=lock_wait_s))
        app.state.db = opened.db = Database(pool)
        # Token look-ups answered in process, dropped on any token change (app/api/token_cache.py);
        # encoded runs responses, dropped on any runs change (app/api/runs_cache.py, decision 65). One
        # LISTEN connection keeps both honest (app/api/change_listener.py).
        token_cache = app.state.token_cache = TokenCache()
        runs_cache = app.state.runs_cache = RunsCache()
        listener = ChangeListener(
            url,
            [
                Subscription(TOKENS_CHANNEL, tq.listen_token_changes, token_cache),
                Subscription(RUNS_CHANNEL, rq.listen_run_changes, runs_cache),
            ],
        )
        await anyio.to_thread.run_sync(listener.start)
        app.state.keyring = keyring
        app.state.embedder_config = embedder
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(listener.stop)
            opened.db = None
            await anyio.to_thread.run_sync(pool.close)

    api = Router(
        path=API_PREFIX,
        middleware=[token_middleware],
        route_handlers=[
            ConnectorsController,
            SourcesController,
            ConnectionTestController,
            RunsController,
            SearchController,
            PrincipalsController,
            DeadLettersController,
            SettingsController,
            WorkersController,
            NotesController,
            TokensController,
        ],
        security=[{"bearer": []}],
    )
    # Webhooks are authenticated by the source's HMAC signature, not a bearer token: a router of their
    # own keeps the bearer requirement out of their OpenAPI operation (a client must not send one).
    hooks = Router(path=API_PREFIX, middleware=[token_middleware], route_handlers=[WebhooksController])
    ops = Router(path="/", middleware=[token_middleware], route_handlers=[health, metrics_handler(metrics_public)])
    app = Litestar(
        route_handlers=[api, hooks, ops, assets_router(), *(extra_routes or [])],
        dependencies=dependencies(opened, keyring),
        exception_handlers=EXCEPTION_HANDLERS,
        # request id on every request; one audit event per admin action; a write clears the runs cache
        middleware=[audit_middleware, writes_clear_middleware],
        logging_config=None,  # the process's logging is app/logs.py's (JSON lines, redaction, --log-level)
        # Hostile input (size, nesting, content type, path ids, NUL) answered before any handler reads it.
        before_request=check_request,
        request_max_body_size=MAX_BODY_BYTES,
        lifespan=[lifespan],
        cors_config=_cors(cors_origins),
        openapi_config=OpenAPIConfig(
            title="Harvester Admin API",
            version="1",
            description="Sources, runs, dead letters, settings, webhooks, workers. Errors are RFC 9457 "
            "problem documents. Bearer tokens: `harvester token create --name X [--scope admin|read|search]`; "
            "a search token only searches, as its bound principals.",
            components=Components(
                security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer", description="API token")}
            ),
            path=SCHEMA_PATH,
            render_plugins=render_plugins(),  # Swagger UI from a packaged copy: renders offline
            use_handler_docstrings=True,  # each operation's description is its handler's docstring
        ),
        debug=False,
    )
    document_operations(app)
    finish_document(app)  # one problem schema, Location, links, examples (issue 14 §2)
    return app


def _cors(origins: tuple[str, ...]) -> CORSConfig | None:
    """CORS for a browser Admin Panel on another origin (issue 14 item 5).

    Litestar's CORS middleware sits outside the router, so a preflight (OPTIONS with Origin) is answered
    before the token middleware runs: it needs no token, and carries none from a browser. Tokens travel in the
    Authorization header, never in cookies, so credentials mode stays off.
    """
    if not origins:
        return None
    return CORSConfig(
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
        expose_headers=["X-Request-Id", "Location"],
        allow_credentials=False,
        max_age=600,
    )
