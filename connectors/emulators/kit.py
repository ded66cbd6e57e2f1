"""Building blocks for the local source emulators (stdlib only: ``http.server``).

Every source has an emulator in this package (``connectors/emulators/<source>.py``) that speaks its
API on 127.0.0.1 for tests and the demo; tests drive the real HTTP client against it instead of
patching anything. This module holds what they share:

- :class:`EmulatorApp` — a tiny router. ``@app.route("GET", r"/rest/api/2/issue/(?P<id>[^/]+)")``
  registers a handler ``(Request) -> Response``; named groups land in ``Request.params``.
- a control API under ``/_emulator/`` that every emulator has (never authenticated, never faulted):

  ==========================  =============================================================
  ``POST /_emulator/faults``  add a fault rule (JSON object, see below); returns the rules
  ``DELETE /_emulator/faults`` remove all fault rules and latency
  ``GET /_emulator/faults``   the current rules
  ``GET /_emulator/stats``    ``{"requests", "by_status", "by_route", "faults_injected", "max_in_latency",
                              "max_in_latency_by_route", "latency_depth"}``
  ``DELETE /_emulator/stats`` reset the counters
  ==========================  =============================================================

  Fault rules (several may be active; the first that fires wins):

  - ``{"status": 429, "ratio": 0.5, "retry_after": 1}`` — that share of API requests answers 429 with
    ``Retry-After: 1`` (``retry_after`` optional, any status);
  - ``{"status": 503, "count": 3}`` — the next 3 API requests answer 503 (deterministic storms);
    with a ``ratio`` as well (``{"status": 503, "ratio": 0.05, "count": 4}``), that share of API requests
    answers 503 until 4 have: failures sprinkled through a run, never more than a client's retries ride out;
    ``"headers": {...}`` adds those response headers as they are (garbage ``X-RateLimit-*`` values...);
  - ``{"latency_ms": 50}`` — every API request sleeps that long first;
  - ``{"route_latency_ms": {"/search": 800}}`` — requests whose route (``"GET <pattern>"``, as ``stats``
    names it) a key finds (``re.search``) sleep that long instead: a source whose listing is slower than
    its other calls (Jira's search with every field and the changelog);
  - ``{"rate_per_second": 20}`` — a real rate limit: past 20 API requests in the current one-second
    window, requests answer 429 with ``Retry-After`` (seconds to the next window, rounded up) and
    ``X-RateLimit-Limit`` / ``X-RateLimit-Remaining: 0`` / ``X-RateLimit-Reset`` (epoch seconds);
  - ``{"status": 403, "keys": ["P-1"]}`` — items with those keys answer 403 wherever the emulator
    serves them one by one, and are skipped from list pages (see :meth:`Faults.for_key`);
  - ``{"malformed": true, "keys": ["P-2"]}`` — those items are served broken (the subclass decides how);
  - ``{"latency_ms": 1500, "keys": ["P-3"]}`` — those items are rendered that much later wherever the
    emulator serves them (one slow record among fast ones; a list page holding one waits for it); deciding
    whether a list shows them does not wait, and every other request is as fast as before;
  - ``{"route": "/search", "inflate_mib": 300}`` — requests whose route a pattern finds (as for
    ``route_latency_ms``) answer 200 with a gzip body of a few hundred KiB that inflates to a JSON object of
    that many MiB (a compression bomb); ``"count": n`` limits it to the next n such requests;
  - ``{"route": "/search", "trickle_ms": 200}`` — those requests' answers are sent 64 bytes at a time,
    that many ms apart (a source or proxy that trickles: each byte comes well within any read timeout);
    ``count`` as above;
  - ``{"route": "/search", "trickle_headers_ms": 200}`` — those requests' status line and headers are sent
    8 bytes at a time, that many ms apart, the body at once (a proxy that trickles before the answer
    starts); ``count`` as above;
  - ``{"route": "/search", "body": {"message": "Please log in"}}`` — those requests answer 200 with that
    JSON instead (a proxy's or a login page's answer in place of the API's); ``count`` as above.

  Ratio decisions come from a ``random.Random`` seeded at start, so a single-threaded client sees the
  same sequence of faults for the same seed.
- auth: an optional token set at start; API requests without ``Authorization: Bearer <token>`` or
  ``Basic base64(<anything>:<token>)`` answer 401.
- :func:`serve` runs an app on an ephemeral port in a daemon thread (:class:`RunningEmulator`);
  :func:`main_cli` is the ``python -m connectors.emulators.<source>`` entry point (first stdout line = base URL);
  :func:`send_signed_webhook` posts an HMAC-SHA256 signed body, as the control APIs' "send webhook" do;
  :func:`send_atlassian_webhook` and :func:`send_slack_event` are the two signing schemes the emulators
  speak (``connectors.webhook_sig`` holds the scheme code the connectors verify with);
  :meth:`EmulatorApp.next_delivery` numbers deliveries, :func:`request_base_url` is the base URL a
  request came in on (for ``self``/``_links`` fields).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import functools
import hmac
import json
import math
import random
import re
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from connectors.webhook_sig import (
    HUB_HEADER,
    HUB_PREFIX,
    SLACK_SIGNATURE_HEADER,
    SLACK_TIMESTAMP_HEADER,
    hmac_hex,
    slack_signature,
)

CONTROL_PREFIX = "/_emulator/"


@dataclass(slots=True)
class Request:
    """One HTTP request as handlers see it. ``headers`` keys are lower-case."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)
    scheme: str = "http"  # what links served back use: EmulatorApp.base_scheme if set, else https over TLS

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty); raises ``ValueError`` when not JSON."""
        if not self.body:
            return None
        return json.loads(self.body)

    def arg(self, name: str, default: str | None = None) -> str | None:
        """First value of a query parameter."""
        values = self.query.get(name)
        return values[0] if values else default


@dataclass(slots=True)
class Response:
    """``body``: bytes are sent as they are; anything else is JSON-encoded."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    trickle_ms: float = 0.0  # > 0: the body goes out 64 bytes at a time, this many ms apart (a fault)
    trickle_headers_ms: float = 0.0  # > 0: the status line and headers go out 8 bytes at a time (a fault)

    def encode(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        if isinstance(self.body, bytes):
            data = self.body
            headers.setdefault("Content-Type", "application/octet-stream")
        elif self.body is None and self.status == 204:
            data = b""
        else:
            data = json.dumps(self.body, separators=(",", ":")).encode()
            headers.setdefault("Content-Type", "application/json;charset=UTF-8")
        return data, headers


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """The error shape Atlassian APIs use (``errorMessages``), good enough for the other emulators."""
    return Response(status, {"errorMessages": [message], "errors": {}}, headers or {})


Handler = Callable[[Request], Response]


@dataclass(frozen=True, slots=True)
class KeyFault:
    """What a per-item fault asks for: an HTTP status, or a malformed item."""

    status: int | None
    malformed: bool


@dataclass(slots=True)
class _Rule:
    status: int | None
    ratio: float
    count: int | None
    retry_after: float | None
    keys: frozenset[str] | None
    malformed: bool
    headers: dict[str, str] = field(default_factory=dict)
    latency_ms: float = 0.0  # a keyed rule's delay before the item is served


_SHAPES = ("inflate_mib", "trickle_ms", "trickle_headers_ms", "body")
_SHAPES_TEXT = "inflate_mib, trickle_ms, trickle_headers_ms or body"


@dataclass(slots=True)
class _Shape:
    """An answer reshaped on the wire: inflated from a small gzip body, or trickled (see the module doc)."""

    route: re.Pattern[str]
    inflate_mib: float
    trickle_ms: float
    count: int | None
    body: Any = None  # not None: the JSON answered with status 200 instead
    trickle_headers_ms: float = 0.0


@functools.cache
def inflating_body(mib: float) -> bytes:
    """A gzip body that inflates to a JSON object of ``mib`` MiB, built without holding the inflated bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b'{"pad":"')]
    left = int(mib * 1024 * 1024)
    block = b" " * (1024 * 1024)
    while left > 0:
        parts.append(packer.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts.append(packer.compress(b'"}'))
    parts.append(packer.flush())
    return b"".join(parts)


_DEPTH_KEEP = 4096  # answered requests kept for latency_depth before the old ones are folded away
_DEPTH_HORIZON = 120.0  # seconds: longer than any request's latency wait and handling


class Faults:
    """Fault rules set through ``/_emulator/faults``; thread-safe; decisions from a seeded RNG."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._shapes: list[_Shape] = []
        self._latency_ms = 0.0
        self._route_latency: list[tuple[re.Pattern[str], float]] = []
        self.injected = 0
        # Requests inside the latency wait at once, and the most there ever were (a client's concurrency).
        self._in_latency = 0
        self._answered_by_latency: Counter[float] = Counter()  # answered requests by the latency they waited
        self.max_in_latency = 0
        # The same per route ("GET <pattern>"): which kinds of request a client sends at once.
        self._in_latency_by_route: Counter[str] = Counter()
        self.max_in_latency_by_route: dict[str, int] = {}
        # The longest chain of requests each sent after the one before it was answered: the round trips a
        # client waited for in turn (requests sent at once count once). Kept as the answered requests'
        # end times, in order, with the deepest chain ending by each.
        self._ends: list[float] = []
        self._depths: list[int] = []
        self._depth_base = 0  # the deepest chain among the answers dropped from the lists (memory stays flat)
        self._rate: int | None = None
        self._window = (0.0, 0)  # (window start, requests in it)

    @property
    def in_flight(self) -> int:
        """Requests inside the latency wait right now (sent, not yet answered)."""
        with self._lock:
            return self._in_latency

    def answered_after(self, latency_ms: float) -> int:
        """Requests answered after waiting ``latency_ms`` (a test sees whether a client waited for them)."""
        with self._lock:
            return self._answered_by_latency[latency_ms]

    @property
    def latency_depth(self) -> int:
        with self._lock:
            return self._depths[-1] if self._depths else self._depth_base

    def reset_depth(self) -> None:
        with self._lock:
            self._ends, self._depths, self._depth_base = [], [], 0

    def add(self, spec: Mapping[str, Any]) -> None:
        """Validate and add one rule; raises ``ValueError`` on a bad spec."""
        if not isinstance(spec, Mapping):
            raise ValueError("fault spec must be a JSON object")
        known = {
            "status",
            "ratio",
            "count",
            "retry_after",
            "keys",
            "malformed",
            "latency_ms",
            "route_latency_ms",
            "rate_per_second",
            "headers",
            "route",
            "inflate_mib",
            "trickle_ms",
            "trickle_headers_ms",
            "body",
        }
        unknown = set(spec) - known
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        if any(kind in spec for kind in _SHAPES):
            self._add_shape(spec)
            return
        routes = spec.get("route_latency_ms")
        if routes is not None:
            if not isinstance(routes, Mapping) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in routes.values()
            ):
                raise ValueError("route_latency_ms must map route patterns to milliseconds")
            try:
                compiled = [(re.compile(str(k)), float(v)) for k, v in routes.items()]
            except re.error as exc:
                raise ValueError(f"route_latency_ms: {exc}") from exc
        if spec.get("keys") is not None and "latency_ms" in spec:
            # One slow record among fast ones: a keyed delay, the request-wide latency untouched.
            if spec.get("status") is not None or spec.get("malformed"):
                raise ValueError("a keyed latency_ms fault is a delay alone: no 'status' or 'malformed' with it")
            keys, ms = spec["keys"], spec["latency_ms"]
            if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
                raise ValueError("keys must be a list of strings")
            if isinstance(ms, bool) or not isinstance(ms, int | float) or ms <= 0:
                raise ValueError("a keyed latency_ms must be a number of milliseconds > 0")
            with self._lock:
                self._rules.append(_Rule(None, 1.0, None, None, frozenset(keys), malformed=False, latency_ms=float(ms)))
            return
        with self._lock:
            if "latency_ms" in spec:
                self._latency_ms = float(spec["latency_ms"])
            if routes is not None:
                self._route_latency = compiled
            if "rate_per_second" in spec:
                rate = spec["rate_per_second"]
                if not isinstance(rate, int) or isinstance(rate, bool) or rate < 1:
                    raise ValueError("rate_per_second must be a positive integer")
                self._rate = rate
            status = spec.get("status")
            malformed = bool(spec.get("malformed", False))
            if status is None and not malformed:
                if "latency_ms" in spec or "rate_per_second" in spec or routes is not None:
                    return
                raise ValueError("a fault needs 'status', 'malformed' or 'latency_ms'")
            if status is not None and not (isinstance(status, int) and 100 <= status <= 599):
                raise ValueError("status must be an HTTP status code")
            keys = spec.get("keys")
            if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
                raise ValueError("keys must be a list of strings")
            if malformed and keys is None:
                raise ValueError("a malformed fault needs 'keys'")
            count = spec.get("count")
            ratio = float(spec.get("ratio", 1.0 if keys is not None or count is not None else 0.0))
            if not 0.0 <= ratio <= 1.0:
                raise ValueError("ratio must be within [0, 1]")
            retry_after = spec.get("retry_after")
            extra = spec.get("headers") or {}
            if not (isinstance(extra, Mapping) and all(isinstance(v, str) for v in extra.values())):
                raise ValueError("headers must be an object of strings")
            self._rules.append(
                _Rule(
                    status=status,
                    ratio=ratio,
                    count=int(count) if count is not None else None,
                    retry_after=float(retry_after) if retry_after is not None else None,
                    keys=frozenset(keys) if keys is not None else None,
                    malformed=malformed,
                    headers={str(k): v for k, v in extra.items()},
                )
            )

    def _add_shape(self, spec: Mapping[str, Any]) -> None:
        kinds = [k for k in _SHAPES if k in spec]
        if set(spec) - {"route", "count", *kinds}:
            raise ValueError(f"an {_SHAPES_TEXT} fault takes only 'route', itself and 'count'")
        if len(kinds) != 1:
            raise ValueError(f"a fault is one of {_SHAPES_TEXT}")
        route = spec.get("route")
        if not isinstance(route, str) or not route:
            raise ValueError(f"an {_SHAPES_TEXT} fault needs a 'route' pattern")
        try:
            pattern = re.compile(route)
        except re.error as exc:
            raise ValueError(f"route: {exc}") from exc
        value = spec.get(kinds[0], 1) if kinds[0] != "body" else 1
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"{kinds[0]} must be a number > 0")
        if "body" in spec and spec["body"] is None:
            raise ValueError("body must be a JSON value other than null")
        count = spec.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ValueError("count must be a positive integer")
        with self._lock:
            self._shapes.append(
                _Shape(
                    pattern,
                    float(spec.get("inflate_mib", 0.0)),
                    float(spec.get("trickle_ms", 0.0)),
                    count,
                    spec.get("body"),
                    float(spec.get("trickle_headers_ms", 0.0)),
                )
            )

    def shape(self, route: str, resp: Response) -> Response:
        """``resp`` as the first matching inflate or trickle fault reshapes it, or as it is."""
        with self._lock:
            chosen = next((s for s in self._shapes if (s.count is None or s.count > 0) and s.route.search(route)), None)
            if chosen is None:
                return resp
            if chosen.count is not None:
                chosen.count -= 1
            self.injected += 1
        if chosen.body is not None:
            return Response(200, chosen.body)
        if chosen.inflate_mib:
            body = inflating_body(chosen.inflate_mib)
            return Response(200, body, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        resp.trickle_ms = chosen.trickle_ms
        resp.trickle_headers_ms = chosen.trickle_headers_ms
        return resp

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._shapes.clear()
            self._latency_ms = 0.0
            self._route_latency = []
            self._rate = None

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {
                "latency_ms": self._latency_ms,
                "route_latency_ms": {p.pattern: ms for p, ms in self._route_latency},
                "shapes": [
                    {
                        "route": x.route.pattern,
                        "inflate_mib": x.inflate_mib,
                        "trickle_ms": x.trickle_ms,
                        "trickle_headers_ms": x.trickle_headers_ms,
                        "count": x.count,
                    }
                    for x in self._shapes
                ],
                "rules": [
                    {
                        "status": r.status,
                        "ratio": r.ratio,
                        "count": r.count,
                        "retry_after": r.retry_after,
                        "keys": sorted(r.keys) if r.keys is not None else None,
                        "malformed": r.malformed,
                        "latency_ms": r.latency_ms,
                    }
                    for r in self._rules
                ],
            }

    def for_request(self, route: str = "") -> Response | None:
        """Apply latency, then the request-wide rules: an error response to send instead, or None."""
        limited = self._over_rate()
        if limited is not None:
            return limited
        with self._lock:
            latency = next((ms for p, ms in self._route_latency if p.search(route)), self._latency_ms)
            chosen: _Rule | None = None
            for rule in self._rules:
                if rule.keys is not None or rule.status is None:
                    continue
                if rule.count is not None:
                    # A count alone fires on the next requests; with a ratio, on that share of them, until
                    # it has fired count times.
                    if rule.count <= 0 or (rule.ratio < 1.0 and self._rng.random() >= rule.ratio):
                        continue
                    rule.count -= 1
                    chosen = rule
                    break
                if self._rng.random() < rule.ratio:
                    chosen = rule
                    break
            if chosen is not None:
                self.injected += 1
        if latency > 0:
            with self._lock:
                self._in_latency += 1
                self.max_in_latency = max(self.max_in_latency, self._in_latency)
                self._in_latency_by_route[route] += 1
                self.max_in_latency_by_route[route] = max(
                    self.max_in_latency_by_route.get(route, 0), self._in_latency_by_route[route]
                )
            started = time.monotonic()
            try:
                time.sleep(latency / 1000.0)
            finally:
                with self._lock:
                    self._in_latency -= 1
                    self._in_latency_by_route[route] -= 1
                    self._answered_by_latency[latency] += 1
                    before = bisect.bisect_right(self._ends, started)  # answered before this one was sent
                    depth = 1 + (self._depths[before - 1] if before else self._depth_base)
                    now = time.monotonic()
                    self._ends.append(now)
                    self._depths.append(max(depth, self._depths[-1] if self._depths else self._depth_base))
                    if len(self._ends) > _DEPTH_KEEP:
                        # Answers older than any request still waiting can no longer be looked up.
                        old = bisect.bisect_right(self._ends, now - _DEPTH_HORIZON)
                        if old:
                            self._depth_base = self._depths[old - 1]
                            del self._ends[:old], self._depths[:old]
        if chosen is None or chosen.status is None:
            return None
        headers: dict[str, str] = dict(chosen.headers)
        if chosen.retry_after is not None:
            headers["Retry-After"] = _format_seconds(chosen.retry_after)
        return error_response(chosen.status, f"injected fault {chosen.status}", headers)

    def _over_rate(self) -> Response | None:
        """The rate limit's 429, or None when this request fits in the current one-second window."""
        with self._lock:
            if self._rate is None:
                return None
            now = time.time()
            start, used = self._window
            if now - start >= 1.0:
                start, used = float(int(now)), 0
            used += 1
            self._window = (start, used)
            if used <= self._rate:
                return None
            self.injected += 1
            rate = self._rate
        reset = int(start) + 1
        headers = {
            "Retry-After": str(max(1, math.ceil(reset - now))),
            "X-RateLimit-Limit": str(rate),
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(reset),
        }
        return error_response(429, "rate limit exceeded", headers)

    def for_key(self, key: str, *, serving: bool = True) -> KeyFault | None:
        """The per-item fault for ``key`` (status or malformed), or None. A keyed delay is slept here when
        the item is being served (``serving``), not when a listing only asks whether to show it."""
        delay = 0.0
        found: KeyFault | None = None
        with self._lock:
            for rule in self._rules:
                if rule.keys is None or key not in rule.keys:
                    continue
                if rule.latency_ms:
                    delay = max(delay, rule.latency_ms)
                    continue
                if rule.count is not None:
                    if rule.count <= 0:
                        continue
                    rule.count -= 1
                elif rule.ratio < 1.0 and self._rng.random() >= rule.ratio:
                    continue
                self.injected += 1
                found = KeyFault(status=rule.status, malformed=rule.malformed)
                break
        if delay and serving:
            time.sleep(delay / 1000)
        return found


def _format_seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


class EmulatorApp:
    """Router + control API + auth + fault injection. Subclass it or register routes on an instance."""

    def __init__(self, *, seed: int = 0, token: str | None = None) -> None:
        self.seed = seed
        self.token = token
        self.faults = Faults(seed)
        # The scheme the emulated server believes it is served on, as a Jira's or Confluence's own base-URL
        # setting says; its links use it. None: the one it is served on. "http" behind TLS is a server whose
        # setting was left at http behind a TLS proxy, which real installations do.
        self.base_scheme: str | None = None
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._stats_lock = threading.Lock()
        self._by_status: Counter[int] = Counter()
        self._by_route: Counter[str] = Counter()
        self._requests = 0
        self._deliveries = 0
        self.route("POST", r"/_emulator/faults")(self._add_fault)
        self.route("GET", r"/_emulator/faults")(lambda _req: Response(200, self.faults.describe()))
        self.route("DELETE", r"/_emulator/faults")(self._clear_faults)
        self.route("GET", r"/_emulator/stats")(lambda _req: Response(200, self.stats()))
        self.route("DELETE", r"/_emulator/stats")(self._reset_stats)

    def route(self, method: str, pattern: str) -> Callable[[Handler], Handler]:
        """Register ``handler`` for ``method`` and a full-match path regex (named groups -> params)."""
        compiled = re.compile(pattern)

        def register(handler: Handler) -> Handler:
            self._routes.append((method.upper(), compiled, handler))
            return handler

        return register

    # ------------------------------------------------------------ control API

    def next_delivery(self) -> int:
        """1, 2, 3... per emulator: delivery/event ids that are unique and repeat for the same seed."""
        with self._stats_lock:
            self._deliveries += 1
            return self._deliveries

    def _add_fault(self, req: Request) -> Response:
        try:
            self.faults.add(req.json())
        except ValueError as exc:
            return error_response(400, str(exc))
        return Response(200, self.faults.describe())

    def _clear_faults(self, _req: Request) -> Response:
        self.faults.clear()
        return Response(204)

    def _reset_stats(self, _req: Request) -> Response:
        with self._stats_lock:
            self._by_status.clear()
            self._by_route.clear()
            self._requests = 0
        self.faults.injected = 0
        self.faults.max_in_latency = 0
        self.faults.reset_depth()
        self.faults.max_in_latency_by_route = {}
        return Response(204)

    def stats(self) -> dict[str, Any]:
        """Counts of API requests (control API excluded), by status and by route pattern."""
        with self._stats_lock:
            return {
                "requests": self._requests,
                "by_status": {str(k): v for k, v in sorted(self._by_status.items())},
                "by_route": dict(sorted(self._by_route.items())),
                "faults_injected": self.faults.injected,
                "max_in_latency": self.faults.max_in_latency,
                "max_in_latency_by_route": dict(sorted(self.faults.max_in_latency_by_route.items())),
                "latency_depth": self.faults.latency_depth,
            }

    # ------------------------------------------------------------ dispatch

    def authorized(self, req: Request) -> bool:
        """Bearer <token>, or Basic with the token as password (Jira Cloud: email:api_token)."""
        if self.token is None:
            return True
        value = req.headers.get("authorization", "")
        scheme, _, cred = value.partition(" ")
        if scheme.lower() == "bearer":
            return hmac.compare_digest(cred.strip(), self.token)
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(cred.strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return False
            return hmac.compare_digest(decoded.partition(":")[2], self.token)
        return False

    def handle(self, req: Request) -> Response:
        control = req.path.startswith(CONTROL_PREFIX)
        allowed_methods: set[str] = set()
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(req.path)
            if match is None:
                continue
            if method != req.method:
                allowed_methods.add(method)
                continue
            if control:
                return self._call(handler, req, match.groupdict())
            return self._api(req, pattern.pattern, match.groupdict(), handler)
        if allowed_methods:
            return error_response(405, f"{req.method} not allowed on {req.path}")
        if not control:
            self._count("(unrouted)", 404)
        return error_response(404, f"no route for {req.method} {req.path}")

    def _api(self, req: Request, route: str, params: dict[str, str], handler: Handler) -> Response:
        if not self.authorized(req):
            resp = error_response(401, "Client must be authenticated to access this resource.")
        else:
            resp = self.faults.for_request(f"{req.method} {route}") or self._call(handler, req, params)
            resp = self.faults.shape(f"{req.method} {route}", resp)
        self._count(f"{req.method} {route}", resp.status)
        return resp

    @staticmethod
    def _call(handler: Handler, req: Request, params: dict[str, str]) -> Response:
        req.params = params
        try:
            return handler(req)
        except ValueError as exc:
            return error_response(400, str(exc))

    def _count(self, route: str, status: int) -> None:
        with self._stats_lock:
            self._requests += 1
            self._by_status[status] += 1
            self._by_route[route] += 1


# ---------------------------------------------------------------- server


def _make_handler(app: EmulatorApp) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        # Headers and body go out in separate writes; without this each response waits ~40 ms on delayed ACK.
        disable_nagle_algorithm = True
        # HTTP/1.1 keeps httpx's pooled connections alive; every response carries Content-Length.
        protocol_version = "HTTP/1.1"

        def _dispatch(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            req = Request(
                method=self.command,
                path=split.path,
                query=parse_qs(split.query, keep_blank_values=True),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                scheme=app.base_scheme or ("https" if isinstance(self.connection, ssl.SSLSocket) else "http"),
            )
            try:
                resp = app.handle(req)
            except Exception as exc:  # an emulator bug must show up as a 500, not a dropped socket
                resp = error_response(500, f"emulator error: {type(exc).__name__}: {exc}")
            data, headers = resp.encode()
            self.send_response(resp.status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            if resp.trickle_headers_ms > 0:
                if not self._trickle_head(resp.trickle_headers_ms):
                    return
            else:
                self.end_headers()
            if self.command == "HEAD":
                return
            if resp.trickle_ms <= 0:
                self.wfile.write(data)
                return
            try:
                for at in range(0, len(data), 64):
                    self.wfile.write(data[at : at + 64])
                    time.sleep(resp.trickle_ms / 1000.0)
            except OSError:
                self.close_connection = True  # the client gave up on the answer: nothing more to send

        def _trickle_head(self, ms: float) -> bool:
            """The status line and headers queued so far, 8 bytes at a time (end_headers sends them at once)."""
            queued: list[bytes] = getattr(self, "_headers_buffer", [])
            head = b"".join([*queued, b"\r\n"])
            queued.clear()
            try:
                for at in range(0, len(head), 8):
                    self.wfile.write(head[at : at + 8])
                    time.sleep(ms / 1000.0)
            except OSError:
                self.close_connection = True  # the client gave up on the answer: nothing more to send
                return False
            return True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch

        def log_message(self, format: str, *args: Any) -> None:
            # Quiet: test output and the CLI's first-line contract must not be polluted.
            return

    return _Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops a connection it stopped reading (a body cut at its size bound) resets it: that
        # is the client's business, not an emulator error worth a traceback in the test output.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class RunningEmulator:
    """An app served on a daemon thread. Use as a context manager or call :meth:`stop`."""

    def __init__(self, app: EmulatorApp, server: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self.app = app
        self._server = server
        self._thread = thread
        host, port = server.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        scheme = "https" if isinstance(server.socket, ssl.SSLSocket) else "http"
        self.base_url = f"{scheme}://{self.host}:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> RunningEmulator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve(
    app: EmulatorApp, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
) -> RunningEmulator:
    """Start serving ``app``; ``port=0`` picks a free ephemeral port. With ``tls`` (a server context with
    its certificate loaded) it serves HTTPS; a client that refuses the certificate ends its handshake at
    accept, which the server drops without a word."""
    server = _Server((host, port), _make_handler(app))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # A short poll interval keeps stop() (shutdown) quick in tests.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"emulator-{port}", daemon=True
    )
    thread.start()
    return RunningEmulator(app, server, thread)


# ---------------------------------------------------------------- webhooks


def request_base_url(req: Request) -> str:
    """``<scheme>://<Host header>``: the base URL the client used, for links the emulator serves back (a real
    Jira or Slack links its attachments and files with the scheme it is served on)."""
    return f"{req.scheme}://{req.headers.get('host', '127.0.0.1')}"


def sign(body: bytes, secret: str) -> str:
    """Hex HMAC-SHA256 of ``body`` with ``secret``."""
    return hmac_hex(secret, body)


def send_signed_webhook(
    url: str,
    body: bytes,
    secret: str,
    header: str = HUB_HEADER,
    scheme: str = HUB_PREFIX,
    extra_headers: Mapping[str, str] | None = None,
) -> int:
    """POST ``body`` signed ``<header>: <scheme><hex hmac-sha256>``; the HTTP status (0: unreachable)."""
    headers = {header: f"{scheme}{sign(body, secret)}"}
    headers.update(extra_headers or {})
    return post_webhook(url, body, headers)


def send_atlassian_webhook(url: str, body: bytes, secret: str, delivery_id: str) -> int:
    """Jira/Confluence style: ``X-Hub-Signature: sha256=<hex>`` and ``X-Atlassian-Webhook-Identifier``."""
    return send_signed_webhook(url, body, secret, extra_headers={"X-Atlassian-Webhook-Identifier": delivery_id})


def send_slack_event(url: str, body: bytes, secret: str, timestamp: str | None = None) -> int:
    """Slack Events API style: ``X-Slack-Signature: v0=<hmac of v0:{ts}:{body}>`` + the timestamp header."""
    stamp = timestamp if timestamp is not None else str(int(time.time()))
    headers = {SLACK_TIMESTAMP_HEADER: stamp, SLACK_SIGNATURE_HEADER: slack_signature(secret, stamp, body)}
    return post_webhook(url, body, headers)


def post_webhook(url: str, body: bytes, headers: Mapping[str, str]) -> int:
    """POST a JSON ``body`` with ``headers``; the receiver's HTTP status (0: unreachable)."""
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


# ---------------------------------------------------------------- CLI


def base_parser(description: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=0, help="data and fault decisions derive from it")
    parser.add_argument("--token", default=None, help="require this API token (Bearer or Basic password)")
    return parser


def main_cli(
    build_app: Callable[[argparse.Namespace], EmulatorApp],
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
    argv: list[str] | None = None,
    description: str | None = None,
) -> None:
    """Parse args, serve, print the base URL as the first stdout line, serve until SIGTERM/SIGINT."""
    parser = base_parser(description)
    if add_args is not None:
        add_args(parser)
    ns = parser.parse_args(argv)
    app = build_app(ns)
    stop = threading.Event()

    def _on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    running = serve(app, ns.host, ns.port)
    print(running.base_url, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        running.stop()


def pdf_document(text: str) -> bytes:
    """A small, valid one-page PDF whose page shows ``text`` (Helvetica), as an attachment body.

    Real PDFs are what the emulators serve as ``application/pdf`` attachments; this writes the
    minimal object graph (catalog, pages, page, font, content stream) with a correct xref table."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode("latin-1", errors="replace")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
