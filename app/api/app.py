"""The Litestar application: routers, guard, problem handlers, and a lifespan that owns the pool.

``create_app`` is what ``harvester serve`` runs. The lifespan opens one psycopg pool (every connection
``SET ROLE harvester_api``) and a Procrastinate app on that same pool, so deferring a job is just another
statement in the request's transaction.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from litestar import Litestar, Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from app.api.auth import require_token
from app.api.connectors import ConnectorsController
from app.api.db import Database, open_pool
from app.api.dead_letters import DeadLettersController
from app.api.deps import DEPENDENCIES
from app.api.input_guard import MAX_BODY_BYTES, check_request
from app.api.notes import NotesController
from app.api.ops import health, metrics_handler
from app.api.problems import EXCEPTION_HANDLERS
from app.api.runs import RunsController
from app.api.search import SearchController
from app.api.settings import SettingsController
from app.api.sources import SourcesController
from app.api.webhooks import WebhooksController
from app.api.workers import WorkersController
from app.jobs import build_app
from app.secrets import Keyring

API_PREFIX = "/api/v1"


def metrics_public_from_env() -> bool:
    return os.environ.get("HARVESTER_METRICS_PUBLIC", "1").strip().lower() not in ("0", "false", "no")


def create_app(
    url: str,
    keyring: Keyring,
    *,
    metrics_public: bool | None = None,
    pool_size: int = 10,
    extra_routes: list[Router] | None = None,
) -> Litestar:
    """The admin API on database ``url`` with secrets under ``keyring``."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        pool = await anyio.to_thread.run_sync(lambda: open_pool(url, max_size=pool_size))
        jobs = build_app(url)
        jobs.open(pool)  # Procrastinate's sync connector on our pool: jobs defer as harvester_api
        app.state.db = Database(pool)
        app.state.keyring = keyring
        app.state.jobs = jobs
        try:
            yield
        finally:
            jobs.close()
            await anyio.to_thread.run_sync(pool.close)

    api = Router(
        path=API_PREFIX,
        guards=[require_token],
        route_handlers=[
            ConnectorsController,
            SourcesController,
            RunsController,
            SearchController,
            DeadLettersController,
            SettingsController,
            WorkersController,
            NotesController,
            WebhooksController,
        ],
        security=[{"bearer": []}],
    )
    public = metrics_public if metrics_public is not None else metrics_public_from_env()
    ops = Router(path="/", guards=[require_token], route_handlers=[health, metrics_handler(public)])
    return Litestar(
        route_handlers=[api, ops, *(extra_routes or [])],
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS,
        # Hostile input (size, nesting, content type, path ids, NUL) answered before any handler reads it.
        before_request=check_request,
        request_max_body_size=MAX_BODY_BYTES,
        lifespan=[lifespan],
        openapi_config=OpenAPIConfig(
            title="Harvester Admin API",
            version="1",
            description="Sources, runs, dead letters, settings, webhooks, workers. Errors are RFC 9457 "
            "problem documents. Bearer tokens: `harvester token create --name X [--scope admin|read]`.",
            components=Components(
                security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer", description="API token")}
            ),
            path="/schema",
        ),
        debug=False,
    )
