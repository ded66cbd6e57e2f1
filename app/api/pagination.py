"""One pagination convention for every list operation (issue 14 §2): ``limit``, an opaque ``cursor``, and
the envelope ``{items, next_cursor}``.

A cursor is the keyset position of the last item of a page (for every list today: its id), wrapped as
base64url of ``<list>:<position>:<check>``. ``check`` is a short digest of the rest, so an edited,
truncated or foreign cursor (one list's cursor sent to another) is a 422 naming ``cursor``, never a page
that silently starts elsewhere. The wrapping is not a secret: it keeps clients from building positions,
so the keyset can change without breaking them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Annotated

from litestar.params import Parameter

from app.api.params import MAX_ID
from app.services.sources import InvalidField

DEFAULT_LIMIT = 50
MAX_LIMIT = 500

Limit = Annotated[
    int,
    Parameter(
        ge=1,
        le=MAX_LIMIT,
        description=f"page size: {DEFAULT_LIMIT} when absent, at most {MAX_LIMIT}",
    ),
]
Cursor = Annotated[
    str | None,
    Parameter(
        min_length=1,
        max_length=200,
        description="opaque: the `next_cursor` of the previous page; absent for the first page",
    ),
]


def _check(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def encode_cursor(kind: str, last_id: int) -> str:
    body = f"{kind}:{last_id}"
    return base64.urlsafe_b64encode(f"{body}:{_check(body)}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str | None) -> int | None:
    """The keyset id a cursor of list ``kind`` carries; ``None`` for the first page; 422 when tampered."""
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        got_kind, raw_id, check = text.split(":")
        last_id = int(raw_id)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidField("cursor", "is not a cursor this API issued; start again without one") from None
    if got_kind != kind or check != _check(f"{got_kind}:{raw_id}") or not 1 <= last_id <= MAX_ID:
        raise InvalidField("cursor", "is not a cursor this API issued for this list; start again without one")
    return last_id


def next_cursor(kind: str, ids: list[int], limit: int) -> str | None:
    """The cursor after a page: ``ids`` were fetched with ``limit + 1``, so one more means another page."""
    return encode_cursor(kind, ids[limit - 1]) if len(ids) > limit else None


def encode_key_cursor(kind: str, last_key: str) -> str:
    """A cursor for a list keyed by text (e.g. principals), with the same tamper check as ids."""
    body = f"{kind}:{last_key}"
    return base64.urlsafe_b64encode(f"{body}:{_check(body)}".encode()).decode().rstrip("=")


def decode_key_cursor(kind: str, cursor: str | None) -> str | None:
    """The text key a cursor of list ``kind`` carries; ``None`` for the first page; 422 when tampered."""
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidField("cursor", "is not a cursor this API issued; start again without one") from None
    body, _, check = text.rpartition(":")
    got_kind, _, key = body.partition(":")
    if got_kind != kind or not key or check != _check(body):
        raise InvalidField("cursor", "is not a cursor this API issued for this list; start again without one")
    return key
