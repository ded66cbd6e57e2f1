"""Bearer tokens through the API (issue 14 item 5): list, create (the value shown once), revoke by id.

Admin scope only, reads included: a token list names every automation that can reach the API.
"""

from __future__ import annotations

from litestar import Controller, delete, get, post

from app.api import schemas as s
from app.api.db import Database
from app.api.params import TokenId
from app.api.problems import ProblemError, not_found, problem_responses
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

    @get("/", operation_id="listTokens", sync_to_thread=True, opt=ADMIN_ONLY, responses=R(401, 403))
    def list_tokens(self, db: Database) -> list[s.TokenOut]:
        """List every token, oldest first.

        Each with its scope, `state` (active, expired or revoked), expiry and last use (to the minute);
        never the token value or its hash. Needs an admin token.
        """
        with db.tx() as conn:
            return [token_out(r) for r in tq.list_tokens(conn)]

    @post(
        "/",
        operation_id="createToken",
        sync_to_thread=True,
        status_code=201,
        opt=ADMIN_ONLY,
        responses=R(400, 401, 403, 409, 413, 415, 422),
    )
    def create_token(self, data: s.TokenCreate, db: Database) -> s.TokenCreated:
        """Create a bearer token; the response carries its value this once.

        A `search` token must name the `principals` it may search as (422 otherwise); other scopes
        name none. The name must be unique among live tokens (409 otherwise) and not blank; `expires_at` (with a
        time zone, in the future) is optional, after it the token answers 401. Only its SHA-256 is stored.
        """
        with db.tx() as conn:
            try:
                created = ts.create_token(
                    conn, name=data.name, scope=data.scope, expires_at=data.expires_at, principals=data.principals
                )
            except ts.TokenNameTaken as exc:
                raise ProblemError(409, "token-name-taken", str(exc), field="name") from None
        out = token_out(created.row)
        return s.TokenCreated(**{f: getattr(out, f) for f in out.__struct_fields__}, token=created.token)

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
