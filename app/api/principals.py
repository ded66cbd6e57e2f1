"""Principals seen in ACLs (issue 14 §4): the users and groups an admin could search as, for the Admin
Panel's "search as" picker, each with the number of live entities whose ACL names it.

Paged with ``limit`` + an opaque ``cursor``; the response's ``next_cursor`` (null on the last page) is the
next request's ``cursor``. The cursor is the last principal of the page, base64url-encoded: keyset
paging in byte order (ListAclPrincipals), stable while entities change.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

import msgspec
from litestar import Controller, get
from litestar.params import Parameter
from msgspec import Meta

from app.api.db import Database
from app.api.problems import ProblemError, problem_responses
from app.queries import principals as pq

R = problem_responses
ADMIN_ONLY = {"auth": "admin"}


class PrincipalOut(msgspec.Struct):
    principal: Annotated[str, Meta(description="ACL token: user:<id> or group:<connector>:<id>")]
    kind: Literal["user", "group", "other"]
    entities: Annotated[int, Meta(description="live (not soft-deleted) entities whose ACL names it")]


class PrincipalPage(msgspec.Struct):
    items: list[PrincipalOut]
    next_cursor: Annotated[str | None, Meta(description="pass as `cursor` for the next page; null: last page")]


def encode_cursor(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        return base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ProblemError(422, "invalid-field", "cursor: not a cursor from a previous page", field="cursor") from None


def _kind(principal: str) -> Literal["user", "group", "other"]:
    head = principal.partition(":")[0]
    return "user" if head == "user" else "group" if head == "group" else "other"


class PrincipalsController(Controller):
    path = "/principals"
    tags = ("search",)

    @get("/", operation_id="listPrincipals", sync_to_thread=True, opt=ADMIN_ONLY, responses=R(400, 401, 403, 422))
    def list_principals(
        self,
        db: Database,
        kind: Annotated[Literal["user", "group"] | None, Parameter(description="only users or only groups")] = None,
        prefix: Annotated[
            str | None, Parameter(min_length=1, max_length=300, description="principal starts with, e.g. group:jira:")
        ] = None,
        limit: Annotated[int, Parameter(ge=1, le=500, description="page size")] = 100,
        cursor: Annotated[
            str | None, Parameter(min_length=1, max_length=600, description="`next_cursor` of the previous page")
        ] = None,
    ) -> PrincipalPage:
        """List the users and groups named in live entities' ACLs, with entity counts.

        Whom an admin token could search as. In byte order of the principal; `kind` and `prefix` narrow
        the list. Needs an admin token: the list names every user and group of every source.
        """
        after = decode_cursor(cursor) if cursor is not None else None
        with db.tx() as conn:
            rows = pq.list_acl_principals(conn, kind=kind, prefix=prefix, after=after, page_size=limit + 1)
        page = rows[:limit]
        return PrincipalPage(
            items=[PrincipalOut(r.principal, _kind(r.principal), r.entities) for r in page],
            next_cursor=encode_cursor(page[-1].principal) if len(rows) > limit and page else None,
        )
