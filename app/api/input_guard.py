"""Hostile request input stops here, before Litestar or msgspec read it (issue 11, Deliver 6).

Runs as the app's ``before_request`` hook, so every answer is a problem document (app/api/problems.py):

- a NUL character or an unpaired surrogate in a query parameter -> 422 naming it;
- a query parameter the operation does not declare -> 422 naming it (a misspelt filter must not
  silently list everything; issue 14 §2);
- a path segment that ``int()`` would read but is not plain ASCII digits (``１``, ``1_0``, `` 1``, ``+1``)
  -> 404: an id is never "found" under another spelling;
- operations that take a JSON body (a ``data`` parameter) insist on it:
  a body that is not ``application/json`` (or ``+json``) -> 415; an empty body where one is required
  -> 422 ``field: body``; nesting deeper than :data:`MAX_DEPTH` -> 422 naming the limit (checked on the
  raw bytes, before any recursive parser can hit ``RecursionError``); not JSON -> 400 ``field: body``;
  a NUL character or an unpaired surrogate in any key or string -> 422 naming that field (PostgreSQL
  cannot store either, and its error would name no field).

The body size limit (:data:`MAX_BODY_BYTES`, 413) is Litestar's ``request_max_body_size``; reading the
body here enforces it, and the body is cached for the handler.
"""

from __future__ import annotations

import json
import re
from typing import Any

from litestar import Request
from litestar.constants import RESERVED_KWARGS
from litestar.handlers import HTTPRouteHandler
from litestar.params import CookieParameter, HeaderParameter, ParameterKwarg

from app.api.problems import ProblemError

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 32

_JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")
# String literals contain brackets that are not structure: drop escapes, then strings. Both patterns
# are linear (no nested quantifiers): after escapes are gone a string is '"[^"]*"', and an unclosed one
# fails once at the last quote.
_ESCAPES = re.compile(rb"\\.", re.DOTALL)
_STRINGS = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SIGNED_INT = re.compile(r"-?[0-9]+")
# A path of only these characters has no segment that ``int()`` reads other than as plain ASCII digits:
# ``int()`` also takes whitespace, ``+``, ``_`` and non-ASCII digits, none of which is here. Such a path (the
# usual one) skips the per-segment check, which cost ~2.5 % of a ``GET runs`` request (issue 15 §2).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/.~-]*")


def _looks_like_int(segment: str) -> bool:
    try:
        int(segment)
    except ValueError:
        return False
    return True


def check_path(path: str) -> None:
    """404 for a segment ``int()`` accepts that is not ASCII digits (Unicode digits, ``_``, spaces, ``+``)."""
    if _PLAIN_PATH.fullmatch(path):
        return
    for segment in path.split("/"):
        if segment and not _SIGNED_INT.fullmatch(segment) and _looks_like_int(segment):
            raise ProblemError(404, "not-found", "no such resource")


def nesting_depth_exceeds(body: bytes, limit: int) -> bool:
    """True when arrays/objects in ``body`` nest deeper than ``limit`` (strings are skipped)."""
    brackets = _STRINGS.sub(b"", _ESCAPES.sub(b"", body)).translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return False
    depth = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _bad_text(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate"
    return None


def _find_bad_string(value: Any, path: str) -> tuple[str, str] | None:
    """The first key or string under ``value`` that PostgreSQL cannot store: (field path, why)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            why = _bad_text(node)
            if why:
                return where or "body", why
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{where}.{key}" if where else str(key)
                why = _bad_text(key)
                if why:
                    return child_path.encode("utf-8", "replace").decode(), f"a key {why}"
                stack.append((child, child_path))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))
    return None


_QUERY_NAMES: dict[int, frozenset[str]] = {}


def query_names(handler: HTTPRouteHandler, path_params: set[str]) -> frozenset[str]:
    """The query parameters ``handler`` declares (their aliases), computed once per handler."""
    known = _QUERY_NAMES.get(id(handler))
    if known is None:
        skip = set(RESERVED_KWARGS) | set(handler.resolve_dependencies()) | path_params
        names = set()
        for name, field in handler.parsed_fn_signature.parameters.items():
            kwarg = field.kwarg_definition
            if name in skip:
                continue
            if isinstance(kwarg, ParameterKwarg):
                if kwarg.header or kwarg.cookie or isinstance(kwarg, (HeaderParameter, CookieParameter)):
                    continue
                name = kwarg.name or kwarg.query or name
            names.add(name)
        known = _QUERY_NAMES[id(handler)] = frozenset(names)
    return known


def check_query_names(request: Request[Any, Any, Any]) -> None:
    """422 naming the first query parameter the operation does not declare."""
    handler = request.route_handler
    if not isinstance(handler, HTTPRouteHandler) or not handler.include_in_schema:
        return  # the docs pages and static assets are not API operations
    if handler.opt.get("query") == "any":
        # The source builds a webhook URL, not us: a Jira admin may add `?issue=${issue.key}` to it, and
        # refusing those would drop deliveries. The signature, not the query, authenticates them.
        return
    known = query_names(handler, set(request.path_params))
    for name in request.query_params:
        if name not in known:
            expected = ", ".join(sorted(known)) or "none"
            raise ProblemError(
                422,
                "unknown-parameter",
                f"unknown query parameter (this operation takes: {expected})",
                field=name.encode("utf-8", "replace").decode(),
            )


def _takes_json_body(request: Request[Any, Any, Any]) -> tuple[bool, bool]:
    """(the operation reads a JSON body, the body is required)."""
    parameters = request.route_handler.parsed_fn_signature.parameters
    data = parameters.get("data")
    if data is None:
        return False, False
    return True, not (data.is_optional or data.has_default)


async def check_request(request: Request[Any, Any, Any]) -> None:
    """The ``before_request`` hook: raise a problem for hostile input, else let the handler run."""
    check_path(request.scope["path"])
    for name, value in request.query_params.multi_items():
        why = _bad_text(value) or _bad_text(name)
        if why:
            raise ProblemError(422, "invalid-field", why, field=name.encode("utf-8", "replace").decode())
    check_query_names(request)
    takes_json, required = _takes_json_body(request)
    if not takes_json:
        return
    body = await request.body()
    if not body.strip():
        if required:
            raise ProblemError(
                422, "invalid-field", "the request body is empty; a JSON object is expected", field="body"
            )
        return
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if not _JSON_TYPE.match(media_type):
        raise ProblemError(415, "unsupported-media-type", "the body must be application/json", field="body")
    if nesting_depth_exceeds(body, MAX_DEPTH):
        raise ProblemError(
            422, "too-deep", f"the body nests arrays/objects deeper than {MAX_DEPTH} levels", field="body"
        )
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        raise ProblemError(400, "malformed-body", "the body is not valid JSON", field="body") from None
    bad = _find_bad_string(parsed, "")
    if bad is not None:
        raise ProblemError(422, "invalid-field", bad[1], field=bad[0])
