"""Bearer tokens through the API (issue 14 item 5): list, create (the value shown once), revoke by id.

Admin scope only, reads included: a token list names every automation that can reach the API.
"""

from __future__ import annotations

from typing import Annotated, Literal

from litestar import Controller, Response, delete, get, post
from litestar.params import QueryParameter

from app.api import schemas as s
from app.api.db import Database
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from app.api.params import TokenId
from app.api.problems import ProblemError, created, not_found, problem_responses
from app.queries import tokens as tq
from app.services import tokens as ts

R = problem_responses
ADMIN_ONLY = {"auth": "admin"}


def token_out(row: tq.ApiTokensRow) -> s.TokenOut:
    return s.TokenOut(
        id=row.id,
        name=row.name,
        scope=row.scope,
        state=ts.state_of(row),
        created_at=row.created_at,
        expires_at=row.expires_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
        principals=row.principals,
    )


class TokensController(Controller):
    path = "/tokens"
    tags = ("tokens",)

    @get("/", operation_id="listTokens", sync_to_thread=True, opt=ADMIN_ONLY, responses=R(401, 403, 422))
    def list_tokens(
        self,
        db: Database,
        # ``scope`` and ``state`` are names Litestar reserves (ASGI scope, app state): read under others.
        token_scope: Annotated[
            Literal["admin", "read", "search"] | None,
            QueryParameter(name="scope", description="only tokens of this scope"),
        ] = None,
        token_state: Annotated[
            Literal["active", "expired", "revoked"] | None,
            QueryParameter(name="state", description="only tokens in this state"),
        ] = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> s.TokenPage:
        """List tokens, oldest first, optionally of one scope or state.

        Each with its scope, `state` (active, expired or revoked), expiry and last use (to the minute);
        never the token value or its hash. Needs an admin token.
        """
        after_id = decode_cursor("tokens", cursor)
        with db.tx() as conn:
            rows = tq.list_tokens_page(conn, after_id=after_id, scope=token_scope, state=token_state, lim=limit + 1)
        return s.TokenPage(
            items=[token_out(r) for r in rows[:limit]], next_cursor=next_cursor("tokens", [r.id for r in rows], limit)
        )

    @get(
        "/{token_id:int}",
        operation_id="getToken",
        sync_to_thread=True,
        opt=ADMIN_ONLY,
        responses=R(400, 401, 403, 404, 422),
    )
    def get_token(self, token_id: TokenId, db: Database) -> s.TokenOut:
        """One token by id (never its value or hash). Needs an admin token."""
        with db.tx() as conn:
            row = tq.get_token(conn, id=token_id)
        if row is None:
            raise not_found(f"token {token_id}")
        return token_out(row)

    @post(
        "/",
        operation_id="createToken",
        sync_to_thread=True,
        status_code=201,
        opt=ADMIN_ONLY,
        responses=R(400, 401, 403, 409, 413, 415, 422),
    )
    def create_token(self, data: s.TokenCreate, db: Database) -> Response[s.TokenCreated]:
        """Create a bearer token; the response carries its value this once.

        A `search` token must name the `principals` it may search as (422 otherwise); other scopes
        name none. The name must be unique among live tokens (409 otherwise) and not blank; `expires_at` (with a
        time zone, in the future) is optional, after it the token answers 401. Only its SHA-256 is stored.
        ``Location`` names the token (``GET /api/v1/tokens/{id}``).
        """
        with db.tx() as conn:
            try:
                created_token = ts.create_token(
                    conn, name=data.name, scope=data.scope, expires_at=data.expires_at, principals=data.principals
                )
            except ts.TokenNameTaken as exc:
                raise ProblemError(409, "token-name-taken", str(exc), field="name") from None
        out = token_out(created_token.row)
        body = s.TokenCreated(**{f: getattr(out, f) for f in out.__struct_fields__}, token=created_token.token)
        return created(body, f"/tokens/{out.id}")

    @delete(
        "/{token_id:int}",
        operation_id="revokeToken",
        sync_to_thread=True,
        status_code=200,
        opt=ADMIN_ONLY,
        responses=R(400, 401, 403, 404, 409, 422),
    )
    def revoke_token(self, token_id: TokenId, db: Database) -> s.TokenOut:
        """Revoke a token by id; it stops authenticating at once.

        The row stays (state `revoked`) so the audit trail can still name it; its name may be reused.
        404 for an unknown id, 409 when it is already revoked.
        """
        with db.tx() as conn:
            try:
                row = ts.revoke_token(conn, token_id=token_id)
            except ts.TokenNotFound:
                raise not_found(f"token {token_id}") from None
            except ts.TokenAlreadyRevoked as exc:
                raise ProblemError(409, "token-revoked", str(exc)) from None
        return token_out(row)
