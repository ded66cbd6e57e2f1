"""Bearer tokens with scopes (issue 4 "Security"): ``read`` may GET, ``admin`` may do everything,
``search`` may only search, as the principals bound to it (issue 14 §4; POST /search checks them).

Only the SHA-256 of a token is stored (``harvester token create`` prints the token once). The scope an
operation needs follows from its method (GET/HEAD: read, anything else: admin) unless the handler says
otherwise in ``opt={"auth": "public" | "read" | "admin" | "search"}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from litestar.connection import ASGIConnection
from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.types import ASGIApp, Receive, Scope, Send

from app.api.db import Database
from app.api.token_cache import CachedToken, TokenCache
from app.queries import tokens as tq
from app.redact import register_secret
from app.services.tokens import SCOPES as SCOPES
from app.services.tokens import new_token as new_token
from app.services.tokens import token_hash as token_hash


@dataclass(frozen=True, slots=True)
class Principal:
    token_id: int
    name: str
    scope: str
    principals: tuple[str, ...] = ()  # a search token's bound ACL tokens; empty for admin and read


# Which token scopes an operation's required scope admits: read operations are not open to search tokens,
# and search is not open to read tokens (a read token could otherwise search as anyone it names).
ADMITS = {"read": ("read", "admin"), "admin": ("admin",), "search": ("search", "admin")}


def _required_scope(scope: Scope, handler: BaseRouteHandler) -> str:
    explicit = handler.opt.get("auth")
    if explicit:
        return str(explicit)
    return "read" if scope.get("method", "GET") in ("GET", "HEAD") else "admin"


def _bearer(scope: Scope) -> str | None:
    """The bearer token of the request's first ``Authorization`` header, read from the raw ASGI headers
    (building Litestar's ``Headers`` for it cost ~4 % of a ``GET runs`` request, issue 15 §2)."""
    for name, raw in scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _, token = raw.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return None
            return token.strip()
    return None


def token_middleware(app: ASGIApp) -> ASGIApp:
    """The bearer-token check on every route of the routers that list it: 401 without a valid token, 403
    when its scope is too narrow; the token's principal lands in the request state.

    A middleware rather than a Litestar guard: Litestar hands every guard a ``copy()`` of the route
    handler, which cost ~6 % of a ``GET runs`` request (py-spy, issue 15 §2). It runs where the guard
    ran: after routing (``scope["route_handler"]`` is the handler, its ``opt`` says the scope), before
    the input guard and the handler; its exceptions become problem documents like any other."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            await _authorize(scope, scope["route_handler"])
        await app(scope, receive, send)

    return middleware


async def _authorize(scope: Scope, handler: BaseRouteHandler) -> None:
    needed = _required_scope(scope, handler)
    if needed == "public":
        return
    token = _bearer(scope)
    if token is None:
        raise NotAuthorizedException("a bearer token is required (Authorization: Bearer <token>)")
    digest = token_hash(token)
    app_state = scope["litestar_app"].state
    cache: TokenCache | None = app_state.get("token_cache")
    found = cache.get(digest) if cache is not None else None
    if found is None:
        found = await _look_up(app_state.db, token, digest, cache)
    admitted = ADMITS.get(needed, ("admin",))
    if found.scope not in admitted:
        raise PermissionDeniedException(
            f"this operation needs {' or '.join(f'an {s}' if s == 'admin' else f'a {s}' for s in admitted)} token;"
            f" token {found.name!r} has scope {found.scope}"
        )
    scope.setdefault("state", {})["principal"] = Principal(found.token_id, found.name, found.scope, found.principals)


async def _look_up(db: Database, token: str, digest: str, cache: TokenCache | None) -> CachedToken:
    """The token from the database (401 when unknown, revoked or expired), remembered in ``cache``."""
    generation = cache.generation() if cache is not None else 0

    def lookup() -> tq.AuthenticateTokenRow | None:
        with db.tx() as conn:
            return tq.authenticate_token(conn, token_hash=digest)

    row = await anyio.to_thread.run_sync(lookup)
    if row is None:
        raise NotAuthorizedException("the bearer token is unknown, revoked or expired")
    register_secret(token)  # a valid token is a credential: masked in every later log line
    found = CachedToken(row.id, row.name, row.scope, tuple(row.principals or ()))
    if cache is not None:
        cache.put(digest, found, row.expires_at, generation)
    return found


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    found: Principal | None = connection.state.get("principal")
    if found is None:  # a handler that needs a principal always sits behind token_middleware
        raise NotAuthorizedException("a bearer token is required")
    return found
