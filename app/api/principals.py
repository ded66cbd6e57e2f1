"""Principals seen in ACLs (issue 14 §4): the users and groups an admin could search as, for the Admin
Panel's "search as" picker, each with the number of live entities whose ACL names it.

Paged like every list (app/api/pagination.py): ``limit`` + an opaque ``cursor``, answering
``{items, next_cursor}``. The cursor carries the last principal of the page: keyset paging in byte order
(ListAclPrincipals), stable while entities change.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar import Controller, get
from litestar.params import Parameter
from msgspec import Meta

from app.api.db import Database
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_key_cursor, encode_key_cursor
from app.api.problems import problem_responses
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
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> PrincipalPage:
        """List the users and groups named in live entities' ACLs, with entity counts.

        Whom an admin token could search as. In byte order of the principal; `kind` and `prefix` narrow
        the list. Needs an admin token: the list names every user and group of every source.
        """
        after = decode_key_cursor("principals", cursor)
        with db.tx() as conn:
            rows = pq.list_acl_principals(conn, kind=kind, prefix=prefix, after=after, page_size=limit + 1)
        page = rows[:limit]
        return PrincipalPage(
            items=[PrincipalOut(r.principal, _kind(r.principal), r.entities) for r in page],
            next_cursor=encode_key_cursor("principals", page[-1].principal) if len(rows) > limit and page else None,
        )
