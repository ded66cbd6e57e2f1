"""Admin API tokens (issue 14 item 5): create with a unique name and optional expiry, revoke by id or name.

Scopes (issue 14 §4, docs/decisions.md): ``admin`` may do everything and search as anyone; ``read`` may
GET (no search); ``search`` may only search, and only as the principals bound to it at creation
(``principals``: its end user ``user:<id>`` and that user's ``group:<connector>:<id>`` tokens).

Shared by ``harvester token`` and ``/api/v1/tokens``; no commits here (the entry point owns the
transaction). Name uniqueness among live tokens is the database's (``api_tokens_live_name_key``, with
``CreateToken``'s ``ON CONFLICT`` repeating its predicate), never a check-then-insert in Python.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import psycopg

from app.errors import HarvesterError
from app.queries import tokens as tq
from app.redact import register_secret
from app.services.sources import InvalidField

SCOPES = ("admin", "read", "search")
MAX_PRINCIPALS = 500  # as many groups as a search request may name
TOKEN_PREFIX = "hv_"
TokenState = Literal["active", "expired", "revoked"]
MAX_NAME = 200
_DURATION = re.compile(r"^(\d{1,6})([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_LIFETIME = timedelta(days=3660)  # ten years: anything longer is a typo, and "never" is no expiry


class TokenNameTaken(HarvesterError):
    """A live token already has this name (409)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"name: a live token is already named {name!r}; revoke it first or pick another name")
        self.name = name


class TokenNotFound(HarvesterError):
    """No token matches the id or name (404)."""


class TokenAlreadyRevoked(HarvesterError):
    """The token exists but was revoked before (409)."""


def new_token() -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    register_secret(token)
    return token


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CreatedToken:
    row: tq.ApiTokensRow
    token: str  # shown once; only its SHA-256 is stored


def state_of(row: tq.ApiTokensRow, now: datetime | None = None) -> TokenState:
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and row.expires_at <= (now or datetime.now(UTC)):
        return "expired"
    return "active"


def parse_lifetime(text: str, field: str = "--expires-in") -> timedelta:
    """``90m``, ``12h``, ``30d``, ``2w`` (or ``3600s``) as a positive duration."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise InvalidField(field, f"{text!r} is not a duration such as 12h, 30d or 2w")
    lifetime = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if lifetime <= timedelta(0):
        raise InvalidField(field, "must be longer than zero")
    if lifetime > MAX_LIFETIME:
        raise InvalidField(field, "must be at most 3660 days; leave it out for a token that never expires")
    return lifetime


def bound_principals(scope: str, principals: Sequence[str]) -> list[str] | None:
    """The principals a token of ``scope`` is bound to, checked: a search token needs ``user:<id>`` (at
    most one) and/or ``group:<connector>:<id>`` tokens; other scopes take none (they are not limited)."""
    clean = sorted({p.strip() for p in principals if p.strip()})
    if scope != "search":
        if clean:
            raise InvalidField("principals", "only a search token is bound to principals; admin may search as anyone")
        return None
    if not clean:
        raise InvalidField("principals", "a search token needs whom it may search as (user:<id>, group:<...>)")
    if len(clean) > MAX_PRINCIPALS:
        raise InvalidField("principals", f"at most {MAX_PRINCIPALS}")
    for p in clean:
        kind, _, rest = p.partition(":")
        if kind not in ("user", "group") or not rest or len(p) > 330:
            raise InvalidField("principals", f"{p[:60]!r} is not user:<id> or group:<connector>:<id>")
    if sum(p.startswith("user:") for p in clean) > 1:
        raise InvalidField("principals", "a search token searches as one user (and any groups)")
    return clean


def create_token(
    conn: psycopg.Connection[Any],
    *,
    name: str,
    scope: str,
    expires_at: datetime | None,
    principals: Sequence[str] = (),
) -> CreatedToken:
    """A new token; :class:`InvalidField` for a blank name, bad scope, past expiry or principals that do
    not fit the scope, :class:`TokenNameTaken`."""
    clean = name.strip()
    if not clean:
        raise InvalidField("name", "a token needs a name (audit events name their actor by it)")
    if len(clean) > MAX_NAME:
        raise InvalidField("name", f"at most {MAX_NAME} characters")
    if scope not in SCOPES:
        raise InvalidField("scope", f"must be one of {', '.join(SCOPES)}")
    if expires_at is not None:
        if expires_at.tzinfo is None:
            raise InvalidField("expires_at", "needs a time zone (e.g. 2027-01-01T00:00:00Z)")
        if expires_at <= datetime.now(UTC):
            raise InvalidField("expires_at", "must be in the future")
    bound = bound_principals(scope, principals)
    token = new_token()
    row = tq.create_token(
        conn, name=clean, scope=scope, token_hash=token_hash(token), expires_at=expires_at, principals=bound
    )
    if row is None:
        raise TokenNameTaken(clean)
    return CreatedToken(row, token)


def revoke_token(
    conn: psycopg.Connection[Any], *, token_id: int | None = None, name: str | None = None
) -> tq.ApiTokensRow:
    """Revoke one live token by id or by name; :class:`TokenNotFound` / :class:`TokenAlreadyRevoked`."""
    if token_id is not None:
        row = tq.revoke_token_by_id(conn, id=token_id)
        if row is None:
            if tq.get_token(conn, id=token_id) is None:
                raise TokenNotFound(f"no token with id {token_id}; see `harvester token list`")
            raise TokenAlreadyRevoked(f"token {token_id} is already revoked")
        return row
    if name is None:
        raise InvalidField("token", "give a token id or name")
    row = tq.revoke_token_by_name(conn, name=name)
    if row is None:
        raise TokenNotFound(f"no active token named {name!r}; see `harvester token list`")
    return row
