"""The one HTTP client every connector uses: JSON over urllib3, retries by tenacity, call counting.

Behaviour (seed 000 "Ошибки", seed 003 request counters):

- every attempt counts in ``CallStats.api_calls``; every 429 or 503 response in ``rate_limited``;
- a status the manifest's :class:`ErrorClassification` calls transient is retried with exponential
  backoff and jitter; a ``Retry-After`` header (seconds or an HTTP date) replaces the backoff;
  every wait is capped at ``max_wait``. Exhausted retries -> :class:`HttpError` ``transient=True``;
- a permanent status -> :class:`HttpError` at once (the caller turns it into an ``ItemError``);
- 401 -> :class:`SourceAuthFailed`: the credential is wrong for the whole run;
- connection errors and timeouts are retried like transient statuses, then :class:`SourceUnreachable`;
- a 2xx body that is not JSON -> :class:`HttpError` ``reason="malformed"``;
- one answer is bounded in size and in time (decision 162): a body that decodes (gunzipped, say) past
  ``max_bytes`` is cut off there and fails the request for good (:class:`HttpError`, nothing beyond the cap
  is ever held), and one that has not ended ``max_seconds`` after its request was sent is dropped and
  retried like a timeout. urllib3's read timeout bounds each wait for a byte, not the whole: a source
  trickling a byte at a time held a run without end. Error bodies are read to ``_ERROR_BODY_BYTES`` only.

Error texts never carry the credential: every rendering of a header value (raw, repr, JSON, URL, base64;
:mod:`connectors.redaction`) is redacted from every message we build. A header value that HTTP cannot carry
(non-ASCII, control characters: a credential stored by an older version) fails the run at once with
:class:`UnsendableCredential` instead of an encoding traceback halfway through a request.

The wire is urllib3, not httpx (decision 102): a small download through httpx's client cost 765–813 µs of
CPU against 438–534 through urllib3 (``bench/http_client.py``), and a run makes a request for every page,
attachment and thread. URLs are still built as httpx builds them (``SourceHttp._url``), the
environment's proxies are honoured as httpx honoured them, redirects are followed and drop the
``Authorization`` header when they leave the host, as httpx's did.
"""

from __future__ import annotations

import email.utils
import functools
import json
import ssl
import threading
import time
import urllib.request
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import urllib3
from tenacity import RetryCallState, Retrying, retry_if_exception_type
from tenacity.wait import wait_exponential_jitter
from urllib3.exceptions import MaxRetryError

from connectors.answer_deadline import answer_deadline, pool_manager
from connectors.base import (
    CallStats,
    DeadLetterReason,
    ErrorClassification,
    RateGate,
    RunStopped,
    SourceAuthFailed,
    SourceError,
    SourceUnreachable,
)
from connectors.redaction import Redactor

_RATE_LIMITED = frozenset({429, 503})
_SNIPPET_CHARS = 300  # of an error body, kept in the error text
_SCAN_CHARS = 20_000  # of an error body, redacted before the snippet is cut
# 19 digits in a row may be an integer orjson cannot hold (it gives a float past 64 bits); such a body,
# like anything orjson refuses (NaN, a BOM, a lone surrogate escape), is decoded by the stdlib instead.
# Found by turning every digit into "0" and looking for nineteen of them: a tenth of a regex scan's time.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
# Connections kept open per host: more than any fan-out runs at once (connectors.fanout), so none is closed
# and re-opened between two requests (urllib3 drops, with a warning, a connection its pool has no room for).
_POOL_SIZE = 32
# urllib3 retries nothing itself (tenacity does, with the counting and backoff above); it only follows
# redirects, as many as httpx did, and drops Authorization and cookies on one that leaves the host.
_FOLLOW_REDIRECTS_ONLY = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=20)
# What may go wrong on the wire: urllib3's own errors (a refused connection, a timeout, a TLS failure, a
# dropped or garbled response) and the socket's.
_WIRE_ERRORS = (urllib3.exceptions.HTTPError, OSError)


class UnsendableCredential(SourceError):
    """A header value (the credential) that HTTP cannot carry; the run fails with this reason."""


class TlsSettingsUnusable(SourceUnreachable):
    """This process's TLS settings could not be loaded (``SSL_CERT_FILE`` naming a missing file): no request
    can go out, to any source, so none is retried. A :class:`SourceUnreachable` for a connection probe."""


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a source's base URL, or None (httpx would refuse it mid-run otherwise)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        return "is not a valid URL"
    if parsed.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parsed.host:
        return "has no host"
    return None


def header_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be an HTTP header value, or None. Never quotes the value (it is a secret).

    HTTP/1.1 field values here are printable ASCII (httpx encodes str headers as ASCII; h11 refuses
    control characters), and leading or trailing blanks would be stripped in transit.
    """
    if not value.isascii():
        return "contains a non-ASCII character"
    if any(not (" " <= ch <= "~") for ch in value):
        return "contains a control character"
    if value != value.strip(" "):
        return "starts or ends with a space"
    return None


# Attempts per request and seconds per attempt, unless a connector's SourceConfig says otherwise.
DEFAULT_ATTEMPTS = 5
DEFAULT_TIMEOUT = 30.0
# What one answer may be, unless the SourceConfig says otherwise (the platform settings response_max_mib
# and response_max_seconds, decision 162): its decoded body's bytes, and seconds from its request to its
# last byte.
DEFAULT_RESPONSE_MAX_BYTES = 128 * 1024 * 1024
DEFAULT_RESPONSE_MAX_SECONDS = 300.0
# A body is read this much at a time, each read one receive at most, so the time bound is checked between
# receives however slowly the bytes come, and a compressed body is inflated no further than this ahead.
_READ_CHUNK = 1024 * 1024
# Of an error body, what is read at most: the snippet needs _SCAN_CHARS.
_ERROR_BODY_BYTES = 64 * 1024


class HttpError(Exception):
    """A request that failed for good: a permanent status, retries exhausted, or a malformed body."""

    def __init__(self, status: int, reason: DeadLetterReason, transient: bool, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.reason: DeadLetterReason = reason
        self.transient = transient
        self.detail = detail


class _RetryableStatus(Exception):
    @property
    def slow_down(self) -> bool:
        """429, or 503 with Retry-After: the source asks us to wait, not that it is broken."""
        return self.status == 429 or (self.status == 503 and self.retry_after is not None)

    def __init__(self, status: int, retry_after: float | None, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


class _RetryableTransport(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _TooSlow(Exception):
    """A body that had not ended by the time bound: read no further."""


def declared_over(resp: urllib3.BaseHTTPResponse, max_bytes: int) -> bool:
    """Whether ``resp`` says, before a byte of it is read, that its body passes ``max_bytes``: an uncompressed
    body's ``Content-Length`` (a compressed one's says nothing of what it inflates to)."""
    declared = resp.headers.get("Content-Length")
    return bool(declared and declared.isdigit() and int(declared) > max_bytes) and not resp.headers.get(
        "Content-Encoding"
    )


def read_bounded(resp: urllib3.BaseHTTPResponse, max_bytes: int, deadline: float) -> tuple[bytes, bool]:
    """``resp``'s decoded body, read one receive at a time: ``(body, True)``, or ``(its first max_bytes,
    False)`` when it is longer (nothing more is read or inflated: a gzip bomb stops at the bound).
    Raises :class:`_TooSlow` when the body has not ended by ``deadline`` (``time.monotonic()``): the clock is
    read after each receive, and a response from :func:`connectors.answer_deadline.pool_manager` also cuts a
    receive that waits past it."""
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = resp.read1(min(_READ_CHUNK, max_bytes + 1 - size))
        except _WIRE_ERRORS:
            # A receive cut at the deadline (connectors.answer_deadline) is the same bound, not a dead source.
            if time.monotonic() >= deadline:
                raise _TooSlow(size) from None
            raise
        if not chunk:
            return b"".join(parts), True
        size += len(chunk)
        if size > max_bytes:
            parts.append(chunk[: len(chunk) - (size - max_bytes)])
            return b"".join(parts), False
        parts.append(chunk)
        if time.monotonic() > deadline:
            raise _TooSlow(size)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP date); None if absent/invalid."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every source client of this process verifies with: httpx's defaults (certifi's CA
    bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once. httpx builds a context per client, and
    loading the CA bundle costs ~17 ms of CPU: a third of what a run of a few items costs beyond its
    items (every webhook and dead-letter retry is one). A context is safe to share between clients and
    threads; a change to the CA bundle or those variables is read at the next start.

    Raises :class:`TlsSettingsUnusable` naming where the settings come from when they cannot be loaded (a
    missing file): before, that was an ``OSError`` at each request, retried as a connection failure and
    reported as "unreachable" without saying which setting. The settings' values stay unread here: only
    app.config reads the environment. A failure is not cached: each client tries again."""
    try:
        return httpx.create_ssl_context()
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise TlsSettingsUnusable(
            "the TLS settings could not be loaded (SSL_CERT_FILE or SSL_CERT_DIR where set, else certifi's CA "
            f"bundle): {type(exc).__name__}: {exc}"
        ) from None


class SourceHttp:
    """JSON client bound to one source's base URL and credential headers."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        stats: CallStats,
        errors: ErrorClassification,
        max_attempts: int = DEFAULT_ATTEMPTS,
        max_wait: float = 30.0,
        timeout: float = DEFAULT_TIMEOUT,
        rate_limit_patience: float = 600.0,
        gate: RateGate | None = None,
        max_bytes: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.stats = stats
        self.errors = errors
        self.max_attempts = max(1, max_attempts)
        self.max_wait = max_wait
        # One answer's bounds (decision 162): its decoded body's bytes, and seconds from request to last byte.
        self.max_bytes = max_bytes or DEFAULT_RESPONSE_MAX_BYTES
        self.max_seconds = max_seconds or DEFAULT_RESPONSE_MAX_SECONDS
        for name, value in headers.items():
            problem = header_value_problem(value)
            if problem is not None:
                raise UnsendableCredential(
                    f"the credential cannot be sent as the {name} header: it {problem}; store a new credential"
                )
        self._redact = Redactor(headers.values())
        problem = base_url_problem(self.base_url)
        if problem is not None:
            # Not a connection problem: no retry can help, so the run fails at once with the reason.
            raise SourceError(f"the source's base_url {problem}; fix it with PATCH /sources/{{id}}")
        # "Slow down" (429, or 503 with Retry-After) is retried for this many seconds, however many
        # answers that takes; other transient failures are retried max_attempts times (issue 12, item 7).
        self.rate_limit_patience = rate_limit_patience
        # Shared per-credential budget (app.services.rate_budget): every run of the credential waits on
        # it before a request and feeds it what the source says about its limits.
        self.gate = gate
        # The run's stop (decision 166): a request waiting for its answer gives up within a quarter second
        # of it, and a retry's backoff ends with RunStopped instead of sleeping on.
        self._stop: threading.Event | None = gate.stopped if gate is not None else None
        # What the client says about itself: it takes compressed bodies (as httpx's client did) and names
        # itself; the credential headers last, so they win.
        self._headers = {
            "Accept": "application/json",
            **urllib3.util.make_headers(accept_encoding=True),
            "User-Agent": "harvester",
            **dict(headers),
        }
        self._download_headers = {**self._headers, "Accept": "*/*"}
        self._timeout = urllib3.Timeout(connect=timeout, read=timeout)
        self._pools: dict[str, urllib3.PoolManager] = {}
        self._backoff = wait_exponential_jitter(multiplier=0.5, max=max_wait, jitter=0.5)
        # The base URL as httpx merges paths onto it: with one trailing slash.
        self._base = httpx.URL(self.base_url + "/")
        self._prefix = str(self._base)

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        """The absolute URL for ``path`` and ``params``, byte for byte the one httpx's client built (the
        base URL's path, then ``path``; params, when given, replace any query it has). A relative path without
        a query is parsed once: httpx's own way parses the path, its merge with the base URL and the URL
        with the params, each again, ~70 µs of CPU a request against ~30 (decision 73). Raises
        ``httpx.InvalidURL`` for a URL httpx would refuse."""
        cleaned = _clean_params(params)
        if "?" in path or "#" in path or "://" in path or path.startswith("//"):
            # httpx.Client._merge_url, then httpx.Request: params, when given, replace the URL's query.
            url = httpx.URL(path)
            if url.is_relative_url:
                url = self._base.copy_with(raw_path=self._base.raw_path + url.raw_path.lstrip(b"/"))
            return str(url if cleaned is None else httpx.URL(url, params=cleaned))
        url_text = self._prefix + path.lstrip("/")
        # As httpx does: any params at all put a "?" on the URL, even when they encode to nothing.
        return str(httpx.URL(f"{url_text}?{httpx.QueryParams(cleaned)}" if cleaned else url_text))

    def _pool(self, url: str) -> urllib3.PoolManager:
        """The connection pools for ``url``'s host: direct, or through the proxy the environment names for
        its scheme (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``) unless ``NO_PROXY`` excludes the host,
        as httpx's client did. One per host, built at its first request."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        pool = self._pools.get(origin)
        if pool is None:
            proxies = urllib.request.getproxies()
            proxy = proxies.get(parts.scheme) or proxies.get("all")
            if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
                proxy = None
            pool = self._pools.setdefault(origin, pool_manager(proxy, maxsize=_POOL_SIZE, ssl_context=tls_context()))
        return pool

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        deadline: float,
        body: bytes | None = None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """One request; every receive of its answer, status line and headers included, by ``deadline``."""
        try:
            with answer_deadline(deadline, self._stop):
                return self._pool(url).urlopen(
                    method,
                    url,
                    body=body,
                    headers=headers,
                    retries=_FOLLOW_REDIRECTS_ONLY,
                    timeout=self._timeout,
                    preload_content=not stream,
                    redirect=True,
                )
        except MaxRetryError as exc:
            # The cause is what a person can act on: "MaxRetryError" only says urllib3 did not retry.
            raise exc.reason if isinstance(exc.reason, Exception) else exc from None

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET ``path`` and return the decoded JSON body."""
        return self._request("GET", path, params, None)

    def post_json(self, path: str, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        """POST ``body`` as JSON to ``path`` and return the decoded JSON body."""
        return self._request("POST", path, params, body)

    def get_text_capped(self, url: str, max_bytes: int) -> tuple[str | None, str]:
        """GET ``url`` (absolute, or a path under the base URL) as text, streamed: reading stops as soon
        as the body passes ``max_bytes``, so nothing beyond the cap is ever held in memory.

        Returns ``(text, "")`` or ``(None, why)`` ("over the size cap", "HTTP 404"...): an attachment the
        source refuses for good stays a link, it never fails the item. A transient answer (429, 5xx, a
        dropped connection) is retried with backoff and, if it persists, raised as a transient
        :class:`HttpError` (the run fails with the reason, and resumes from its checkpoint next time)
        rather than loading the entity without its text: a busy source never changes what an entity says.
        """
        body, encoding, why = self.get_bytes_capped(url, max_bytes)
        if body is None:
            return None, why
        return decode_body(body, encoding), ""

    def get_bytes_capped(self, url: str, max_bytes: int) -> tuple[bytes | None, str | None, str]:
        """:meth:`get_text_capped` for binary bodies (a PDF): ``(body, declared encoding, "")`` or
        ``(None, None, why)``; the same streaming cap and the same transient handling.

        Like every other request it waits on the shared rate gate and feeds it what the source says; a
        "slow down" answer (429, or 503 with Retry-After) is retried for ``rate_limit_patience`` seconds,
        other transient failures ``max_attempts`` times."""
        last = ""
        failures = 0
        deadline = time.monotonic() + self.rate_limit_patience
        absolute = self._url(url, None)
        while True:
            if self.gate is not None:
                self.gate.wait(self.rate_limit_patience)
            self.stats.count_call()
            wait: float | None = None
            answer_by = time.monotonic() + self.max_seconds
            try:
                resp = self._send("GET", absolute, headers=self._download_headers, stream=True, deadline=answer_by)
                # Unread bytes would spoil the connection for the next request: a body read to its end keeps
                # the connection; one cut at a bound (or by a failure) closes it.
                keep = False
                try:
                    status = resp.status
                    if self.gate is not None:
                        self.gate.observe(status, resp.headers)
                    if status in _RATE_LIMITED:
                        self.stats.count_rate_limited()
                    if not 200 <= status < 300:
                        # An error's body is not kept: read (a little of it at most) only to keep the connection.
                        _, keep = read_bounded(resp, _ERROR_BODY_BYTES, answer_by)
                    if status == 429 or status >= 500:
                        last = f"HTTP {status}"
                        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                        # "Slow down" exactly as for pages (HttpError.slow_down): 429, or 503 with Retry-After;
                        # a 500 stays a failure counted against max_attempts, whatever headers it carries.
                        slow_down = status == 429 or (status == 503 and retry_after is not None)
                        if slow_down and time.monotonic() < deadline:
                            # the shared gate already holds the next attempt as long as the source asked
                            wait = 0.0 if self.gate is not None else min(retry_after or 1.0, self.max_wait)
                        else:
                            failures += 1
                    elif not 200 <= status < 300:
                        return None, None, f"HTTP {status}"
                    elif declared_over(resp, max_bytes):
                        return None, None, "over the size cap"
                    else:
                        body, keep = read_bounded(resp, max_bytes, answer_by)
                        if not keep:
                            return None, None, "over the size cap"
                        return body, _charset(resp.headers.get("Content-Type")), ""
                except _TooSlow as exc:
                    last = self._attachment_too_slow(f"{exc.args[0]} bytes had come")
                    failures += 1
                finally:
                    if not keep:
                        resp.close()
                    resp.release_conn()
            except _WIRE_ERRORS as exc:
                self._unless_stopped()
                if time.monotonic() >= answer_by:
                    last = self._attachment_too_slow("its status line and headers had not all come")
                else:
                    last = self._redact(f"unreachable: {type(exc).__name__}")
                failures += 1
            if wait is None:
                if failures >= self.max_attempts:
                    break
                wait = min(0.5 * 2**failures, self.max_wait)
            if wait > 0:
                self._sleep(wait)
        detail = self._redact(f"attachment {url}: {last} after {failures} attempts")
        raise HttpError(0, "unknown", True, detail)

    def download_target(self, url: str, trusted_hosts: Collection[str] = ()) -> tuple[str | None, str]:
        """Where a download link taken from a payload (an attachment's content, a Slack file) is requested with
        the credential: ``(absolute URL, "")``, or ``(None, why it stays a link)``.

        The credential goes where the API calls send it, the base URL's origin (scheme, host, port; another
        port is another host, as for redirects), and to a connector's ``trusted_hosts`` (Slack's file host)
        over HTTPS only. It never travels in clear text to a source the base URL reaches over HTTPS: a link
        on the base's host over plain HTTP, which a Jira or Confluence whose own base-URL setting says
        ``http`` serves behind a TLS proxy, is requested at the base's origin, the same path."""
        try:
            link = httpx.URL(url)
        except (httpx.InvalidURL, ValueError, TypeError):
            return None, "download link is not a URL"
        base = self._base
        if not link.host:
            return self._url(url, None), ""
        if not link.scheme:  # "//host/path": the base's scheme, as a browser would take it
            link = link.copy_with(scheme=base.scheme)
        if link.host == base.host:
            if (link.scheme, link.port) == (base.scheme, base.port):
                return str(link), ""
            if base.scheme == "https" and link.scheme == "http":
                return str(link.copy_with(scheme="https", port=base.port)), ""
            return None, "download link on another port"
        if link.host in trusted_hosts:
            return (str(link), "") if link.scheme == "https" else (None, "download link over plain HTTP")
        return None, "download link on another host"

    def close(self) -> None:
        for pool in list(self._pools.values()):
            pool.clear()

    # ------------------------------------------------------------ internals

    def _request(self, method: str, path: str, params: Mapping[str, Any] | None, body: Any) -> Any:
        others = [0]  # failures that are not "slow down": bounded by count

        def stop(state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome is not None else None
            if isinstance(exc, _RetryableStatus) and exc.slow_down:
                return (state.seconds_since_start or 0.0) >= self.rate_limit_patience
            others[0] += 1
            return others[0] >= self.max_attempts

        retrying = Retrying(
            stop=stop,
            wait=self._wait,
            retry=retry_if_exception_type((_RetryableStatus, _RetryableTransport)),
            reraise=True,
            sleep=self._sleep,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(method, path, params, body)
        except _RetryableStatus as exc:
            raise HttpError(exc.status, self.errors.reason(exc.status), True, exc.detail) from None
        except _RetryableTransport as exc:
            raise SourceUnreachable(exc.detail) from None
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def _attempt(self, method: str, path: str, params: Mapping[str, Any] | None, body: Any) -> Any:
        where = f"{method} {path}"
        if self.gate is not None:
            self.gate.wait(self.rate_limit_patience)
        self.stats.count_call()
        url = self._url(path, params)
        headers = self._headers
        payload = None
        if body is not None:
            # As httpx encoded a json= body.
            payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            headers = {**headers, "Content-Type": "application/json"}
        deadline = time.monotonic() + self.max_seconds
        try:
            resp = self._send(method, url, headers=headers, body=payload, stream=True, deadline=deadline)
        except _WIRE_ERRORS as exc:
            self._unless_stopped()
            if time.monotonic() >= deadline:
                detail = self._too_slow(where, "its status line and headers had not all come")
                raise _RetryableTransport(detail) from None
            raise _RetryableTransport(
                self._redact(f"{where}: {self.base_url} unreachable: {type(exc).__name__}: {exc}")
            ) from None
        status = resp.status
        if self.gate is not None:
            self.gate.observe(status, resp.headers)
        if status in _RATE_LIMITED:
            self.stats.count_rate_limited()
        ok = 200 <= status < 300
        if ok and declared_over(resp, self.max_bytes):
            data, whole = b"", False
            resp.close()
            resp.release_conn()
        else:
            data, whole = self._read(resp, where, self.max_bytes if ok else _ERROR_BODY_BYTES, deadline)
        if ok:
            if not whole:
                raise HttpError(
                    status,
                    "unknown",
                    False,
                    self._redact(
                        f"{where} -> {status}: the answer is larger than {_mib(self.max_bytes)} "
                        "(the platform setting response_max_mib); nothing past it was read"
                    ),
                )
            if status == 204 or not data:
                return None
            try:
                return decode_json(data)
            except (ValueError, RecursionError):
                raise HttpError(
                    status, "malformed", False, self._redact(f"{where} -> {status}: body is not JSON")
                ) from None
        # Redact the whole body before cutting it short: a cut could leave a secret's prefix unmatched.
        text = decode_body(data, _charset(resp.headers.get("Content-Type")))
        snippet = _snippet(self._redact(text[:_SCAN_CHARS])) or (resp.reason or "")
        detail = self._redact(f"{where} -> {status}: {snippet}")
        if status == 401:
            raise SourceAuthFailed(detail)
        if self.errors.is_transient(status):
            raise _RetryableStatus(status, parse_retry_after(resp.headers.get("Retry-After")), detail)
        raise HttpError(status, self.errors.reason(status), False, detail)

    def _read(self, resp: urllib3.BaseHTTPResponse, where: str, max_bytes: int, deadline: float) -> tuple[bytes, bool]:
        """:func:`read_bounded`, the connection kept for the next request when the body was read to its
        end and closed when it was cut off (unread bytes would spoil it). A body that outlives ``deadline``
        is raised as a transport failure: retried like a read timeout, then the run fails naming it."""
        whole = False
        try:
            data, whole = read_bounded(resp, max_bytes, deadline)
        except _TooSlow as exc:
            raise _RetryableTransport(self._too_slow(where, f"{exc.args[0]} bytes had come")) from None
        except _WIRE_ERRORS as exc:
            self._unless_stopped()
            raise _RetryableTransport(
                self._redact(f"{where}: {self.base_url} unreachable: {type(exc).__name__}: {exc}")
            ) from None
        finally:
            if not whole:
                resp.close()
            resp.release_conn()
        return data, whole

    def _unless_stopped(self) -> None:
        """Raise :class:`RunStopped` when the run has stopped: a wire error then is the answer given up
        (decision 166), not the source's failure, and nothing retries it."""
        if self._stop is not None and self._stop.is_set():
            raise RunStopped("the run stopped while its request waited for the source's answer") from None

    def _sleep(self, seconds: float) -> None:
        """A retry's backoff, ended by the run's stop (decision 166)."""
        if self._stop is None:
            time.sleep(seconds)
        elif self._stop.wait(seconds):
            raise RunStopped("the run stopped while its request waited to be retried")

    def _too_slow(self, where: str, came: str) -> str:
        return self._redact(
            f"{where}: the answer had not ended {self.max_seconds:g} s after the request (the platform "
            f"setting response_max_seconds); {came}"
        )

    def _attachment_too_slow(self, came: str) -> str:
        return f"not ended {self.max_seconds:g} s after the request (the platform setting response_max_seconds; {came})"

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _RetryableStatus) and exc.slow_down and self.gate is not None:
            return 0.0  # the shared gate already holds the next attempt for as long as the source asked
        if isinstance(exc, _RetryableStatus) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_wait)
        return min(float(self._backoff(state)), self.max_wait)


def decode_json(body: bytes) -> Any:
    """``json.loads(body)``, value for value, at orjson's speed: parsing the source's pages was the largest
    single cost of a fetch (docs/decisions.md 61). Raises ``ValueError`` or ``RecursionError`` as
    ``json.loads`` does."""
    if body.translate(_DIGITS_TO_ZERO).find(_LONG_DIGITS) < 0:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


def _charset(content_type: str | None) -> str | None:
    """The ``charset`` a ``Content-Type`` value declares, or None."""
    if not content_type:
        return None
    message = Message()
    message["Content-Type"] = content_type
    return message.get_content_charset()


def decode_body(body: bytes, charset: str | None) -> str:
    """``body`` as text in the ``charset`` its answer declared, UTF-8 when it declares none or one that
    cannot decode text. Every body a connector reads as text goes through here, so ``get_text_capped``, an
    attachment and a failed request's error text agree (JSON pages are decoded as JSON bytes): a charset
    Python lacks (``x-user-defined``), a codec that is not a text encoding (``base64``, ``rot13``), or one
    that refuses ``errors="replace"`` (``idna``, ``undefined``) raises LookupError or ValueError from
    ``bytes.decode``; the source's bytes are then read as UTF-8 rather than failing the item over a header."""
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except (LookupError, ValueError):
            pass
    return body.decode("utf-8", errors="replace")


def _mib(size: int) -> str:
    """``size`` bytes as MiB for a message: whole when it is whole."""
    return f"{size / (1024 * 1024):g} MiB"


def _clean_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if params is None:
        return None
    return {k: v for k, v in params.items() if v is not None}


def _snippet(text: str) -> str:
    return text[:_SNIPPET_CHARS].replace("\n", " ")
