"""SourceHttp against a real local server built with emulator_kit (no patched clients)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.base import CallStats, ErrorClassification, RunStopped, SourceAuthFailed, SourceUnreachable
from connectors.emulators.kit import (
    EmulatorApp,
    Request,
    Response,
    RunningEmulator,
    send_signed_webhook,
    serve,
)
from connectors.http import (
    HttpError,
    SourceHttp,
    TlsSettingsUnusable,
    _clean_params,
    decode_json,
    parse_retry_after,
    tls_context,
)

TOKEN = "s3cr3t-token-value"
REPO = Path(__file__).resolve().parents[2]


E = TypeVar("E", bound=BaseException)


def _app() -> EmulatorApp:
    app = EmulatorApp(seed=7, token=TOKEN)

    @app.route("GET", r"/items/(?P<id>[^/]+)")
    def item(req: Request) -> Response:
        fault = app.faults.for_key(req.params["id"])
        if fault is not None and fault.malformed:
            return Response(200, b"<html>oops</html>", {"Content-Type": "text/html"})
        if fault is not None and fault.status is not None:
            return Response(fault.status, {"errorMessages": ["nope"]})
        return Response(200, {"id": req.params["id"], "q": req.query})

    @app.route("POST", r"/echo")
    def echo(req: Request) -> Response:
        return Response(200, {"got": req.json()})

    return app


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with serve(_app()) as running:
        yield running


def _client(base_url: str, stats: CallStats, **kw: float) -> SourceHttp:
    return SourceHttp(
        base_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        stats=stats,
        errors=ErrorClassification(),
        **kw,  # type: ignore[arg-type]
    )


def _failing_get(http: SourceHttp, error: type[E]) -> E:
    """What ``GET /items/A`` raised, which must be an ``error``; the client is closed either way."""
    try:
        with pytest.raises(error) as info:
            http.get_json("/items/A")
    finally:
        http.close()
    return info.value


def _fault(emu: RunningEmulator, spec: dict[str, object]) -> None:
    httpx.post(f"{emu.base_url}/_emulator/faults", json=spec).raise_for_status()


def test_get_and_post_json_count_one_call_each(emu: RunningEmulator) -> None:
    stats = CallStats()
    http = _client(emu.base_url, stats)
    try:
        assert http.get_json("/items/A", {"x": "1", "skip": None})["q"] == {"x": ["1"]}
        assert http.post_json("/echo", {"a": 1}) == {"got": {"a": 1}}
    finally:
        http.close()
    assert (stats.api_calls, stats.rate_limited) == (2, 0)


def test_retry_after_is_honoured_and_counters_are_exact(emu: RunningEmulator) -> None:
    _fault(emu, {"status": 429, "count": 3, "retry_after": 0})
    stats = CallStats()
    waits: list[float] = []
    http = _client(emu.base_url, stats, max_wait=5.0)
    original = http._wait

    def spy(state):  # type: ignore[no-untyped-def]
        waits.append(original(state))
        return waits[-1]

    http._wait = spy  # type: ignore[method-assign]
    try:
        assert http.get_json("/items/A")["id"] == "A"
    finally:
        http.close()
    # Retry-After: 0 replaced the exponential backoff (which starts at 0.5 s) on every retry.
    assert waits == [0.0, 0.0, 0.0]
    assert (stats.api_calls, stats.rate_limited) == (4, 3)
    assert httpx.get(f"{emu.base_url}/_emulator/stats").json()["by_status"] == {"200": 1, "429": 3}


def test_retry_after_is_capped_by_max_wait() -> None:
    assert parse_retry_after("120") == 120.0
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    delay = parse_retry_after(future)
    assert delay is not None and 80 < delay <= 90
    assert parse_retry_after("garbage") is None
    assert parse_retry_after(None) is None


def test_exhausted_retries_raise_transient_error(emu: RunningEmulator) -> None:
    _fault(emu, {"status": 503, "ratio": 1.0})  # 503 without Retry-After: broken, not "slow down"
    stats = CallStats()
    failed = _failing_get(_client(emu.base_url, stats, max_attempts=3, max_wait=0.01), HttpError)
    assert failed.transient and failed.status == 503 and failed.reason == "unknown"
    assert (stats.api_calls, stats.rate_limited) == (3, 3)


def test_a_500_with_retry_after_on_a_download_is_a_failure_not_a_slow_down(emu: RunningEmulator) -> None:
    # Only 429 and 503 + Retry-After mean "wait" (as for pages); a persistent 500 carrying Retry-After
    # must use up max_attempts, not the whole rate-limit patience (it once held a run for minutes).
    _fault(emu, {"status": 500, "ratio": 1.0, "retry_after": 0})
    stats = CallStats()
    http = _client(emu.base_url, stats, max_attempts=3, max_wait=0.01, rate_limit_patience=300)
    try:
        with pytest.raises(HttpError) as info:
            http.get_bytes_capped("/items/A", 1024)
    finally:
        http.close()
    assert info.value.transient and "HTTP 500 after 3 attempts" in str(info.value)
    assert stats.api_calls == 3


def test_slow_down_answers_are_retried_for_a_time_not_a_count(emu: RunningEmulator) -> None:
    # Issue 12, item 7: 429 (and 503 with Retry-After) means "wait", so 5 attempts are no limit; the
    # patience (seconds) is.
    _fault(emu, {"status": 429, "count": 12, "retry_after": 0})
    stats = CallStats()
    http = _client(emu.base_url, stats, max_attempts=3, rate_limit_patience=30)
    try:
        assert http.get_json("/items/A")["id"] == "A"
    finally:
        http.close()
    assert (stats.api_calls, stats.rate_limited) == (13, 12)

    _fault(emu, {"status": 429, "ratio": 1.0, "retry_after": 0})
    quick = _client(emu.base_url, CallStats(), max_attempts=100, rate_limit_patience=0.3)
    try:
        with pytest.raises(HttpError) as info:
            quick.get_json("/items/B")
    finally:
        quick.close()
    assert info.value.status == 429 and info.value.reason == "rate_limited"


def test_permanent_status_is_not_retried(emu: RunningEmulator) -> None:
    _fault(emu, {"status": 403, "keys": ["P-1"]})
    _fault(emu, {"status": 404, "keys": ["P-2"]})
    stats = CallStats()
    http = _client(emu.base_url, stats)
    try:
        with pytest.raises(HttpError) as forbidden:
            http.get_json("/items/P-1")
        with pytest.raises(HttpError) as missing:
            http.get_json("/items/P-2")
    finally:
        http.close()
    assert (forbidden.value.status, forbidden.value.reason, forbidden.value.transient) == (
        403,
        "permission",
        False,
    )
    assert (missing.value.status, missing.value.reason) == (404, "not_found")
    assert stats.api_calls == 2


def test_non_json_success_body_is_malformed(emu: RunningEmulator) -> None:
    _fault(emu, {"malformed": True, "keys": ["P-3"]})
    http = _client(emu.base_url, CallStats())
    try:
        with pytest.raises(HttpError) as info:
            http.get_json("/items/P-3")
    finally:
        http.close()
    assert (info.value.status, info.value.reason, info.value.transient) == (200, "malformed", False)


_PARAM_VALUES = st.one_of(
    st.none(), st.text(max_size=40), st.integers(), st.booleans(), st.lists(st.text(max_size=10), max_size=3)
)


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(["http://127.0.0.1:5555", "http://127.0.0.1:5555/wiki", "https://x.atlassian.net/wiki/"]),
    path=st.one_of(
        st.sampled_from(["/rest/api/content/123", "rest/api/content", "/", "", "/a//b", "/a%2Fb", "/q?x=1"]),
        st.text(alphabet=st.characters(blacklist_categories=["Cc", "Cs"]), max_size=30).map(lambda t: "/" + t),
    ),
    params=st.one_of(st.none(), st.dictionaries(st.text(min_size=1, max_size=12), _PARAM_VALUES, max_size=4)),
)
def test_the_url_sent_is_the_one_httpx_builds_from_path_and_params(
    base: str, path: str, params: dict[str, object] | None
) -> None:
    # SourceHttp sends over urllib3 but builds each URL as httpx's client built it (decision 102), parsing a
    # relative path with its params once (decision 73) where httpx parses three times. The URL must be the
    # same, byte for byte, or an error the same way.
    http = SourceHttp(base, headers={"Authorization": "Bearer t"}, stats=CallStats(), errors=ErrorClassification())
    reference = httpx.Client(base_url=base.rstrip("/"))
    try:
        try:
            expected: object = str(reference.build_request("GET", path, params=_clean_params(params)).url)
        except httpx.InvalidURL as exc:
            expected = type(exc)
        try:
            got: object = http._url(path, params)
        except httpx.InvalidURL as exc:
            got = type(exc)
        assert got == expected
    finally:
        reference.close()
        http.close()


def test_params_arrive_at_the_source_as_sent(emu: RunningEmulator) -> None:
    http = _client(emu.base_url + "/", CallStats())
    params = {"jql": 'project = "A B" ORDER BY key', "expand": "a,b.c", "title": "Ünï & ?#", "n": 5, "skip": None}
    try:
        got = http.get_json("/items/A-1", params)
    finally:
        http.close()
    assert got["id"] == "A-1"
    assert got["q"] == {"jql": ['project = "A B" ORDER BY key'], "expand": ["a,b.c"], "title": ["Ünï & ?#"], "n": ["5"]}


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "10001", "n": 3, "f": 0.1, "neg": -0.0, "big": 1.7976931348623157e308, "tiny": 5e-324}',
        b'{"a": 1, "a": 2}',
        b"18446744073709551616",  # past 64 bits: orjson would give a float
        b"-9223372036854775809",
        b'[123456789012345678901234567890, "x"]',
        b"1e400",
        b"NaN",
        b'"\\ud800"',  # a lone surrogate escape
        b'\xef\xbb\xbf{"bom": true}',
        '{"utf16": "\u00e9"}'.encode("utf-16"),
        b'{"text": "caf\xc3\xa9 \\u00e9 \\n"}',
    ],
)
def test_a_source_body_decodes_to_exactly_what_the_stdlib_gives(body: bytes) -> None:
    expected = json.loads(body)
    got = decode_json(body)
    assert repr(got) == repr(expected)
    assert type(got) is type(expected)


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"{", b"[1,]", b"[" * 100_000 + b"]" * 100_000])
def test_a_body_that_is_not_json_fails_as_the_stdlib_fails(body: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)):
        decode_json(body)


def test_wrong_credential_fails_the_run_and_never_leaks(emu: RunningEmulator) -> None:
    wrong = "wrong-secret-credential"
    basic = base64.b64encode(f"me@example.com:{wrong}".encode()).decode()
    stats = CallStats()
    http = SourceHttp(
        emu.base_url, headers={"Authorization": f"Basic {basic}"}, stats=stats, errors=ErrorClassification()
    )
    try:
        with pytest.raises(SourceAuthFailed) as info:
            http.get_json("/items/A")
    finally:
        http.close()
    assert stats.api_calls == 1
    assert wrong not in str(info.value) and basic not in str(info.value)


def test_secret_is_redacted_from_error_text(emu: RunningEmulator) -> None:
    _fault(emu, {"status": 403, "keys": [TOKEN]})
    http = _client(emu.base_url, CallStats())
    try:
        with pytest.raises(HttpError) as info:
            http.get_json(f"/items/{TOKEN}")
    finally:
        http.close()
    assert TOKEN not in info.value.detail and TOKEN not in str(info.value)
    assert "***" in info.value.detail


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _redirecting_pair() -> tuple[EmulatorApp, EmulatorApp]:
    """A source that moves two items, one within its host and one to another host (an open one, which
    answers with the Authorization header it got)."""
    source, elsewhere = EmulatorApp(seed=1, token=TOKEN), EmulatorApp(seed=1)

    @source.route("GET", r"/items/(?P<id>[^/]+)")
    def item(req: Request) -> Response:
        return Response(200, {"id": req.params["id"]})

    @source.route("GET", r"/moved/(?P<id>[^/]+)")
    def moved(req: Request) -> Response:
        return Response(302, b"", {"Location": f"/items/{req.params['id']}"})

    @source.route("GET", r"/away")
    def away(req: Request) -> Response:
        return Response(302, b"", {"Location": req.arg("to") or "/"})

    @elsewhere.route("GET", r"/seen")
    def seen(req: Request) -> Response:
        return Response(200, {"authorization": req.headers.get("authorization")})

    return source, elsewhere


def test_a_redirect_keeps_the_credential_on_the_host_and_drops_it_off_the_host() -> None:
    # As httpx did (decision 102): redirects are followed, and one that leaves the source's host (another
    # port is another host) does not carry the credential there.
    source, elsewhere = _redirecting_pair()
    with serve(source) as src, serve(elsewhere) as other:
        http = _client(src.base_url, CallStats())
        try:
            assert http.get_json("/moved/A-7") == {"id": "A-7"}
            assert http.get_json("/away", {"to": f"{other.base_url}/seen"}) == {"authorization": None}
            # Asked directly (Slack's file host is trusted this way), the other host does get it.
            assert http.get_bytes_capped(f"{other.base_url}/seen", 1024)[0] == (
                json.dumps({"authorization": f"Bearer {TOKEN}"}, separators=(",", ":")).encode()
            )
        finally:
            http.close()


def test_a_compressed_answer_is_asked_for_and_decoded() -> None:
    app = EmulatorApp(seed=1, token=TOKEN)

    @app.route("GET", r"/packed")
    def packed(req: Request) -> Response:
        body = json.dumps({"accept_encoding": req.headers.get("accept-encoding"), "n": list(range(50))}).encode()
        return Response(200, gzip.compress(body), {"Content-Type": "application/json", "Content-Encoding": "gzip"})

    with serve(app) as running:
        http = _client(running.base_url, CallStats())
        try:
            got = http.get_json("/packed")
            raw, _, why = http.get_bytes_capped("/packed", 10_000)
        finally:
            http.close()
    assert "gzip" in got["accept_encoding"] and got["n"] == list(range(50))
    assert why == "" and raw is not None and json.loads(raw) == got


def test_a_compressed_answer_past_response_max_bytes_fails_for_good_and_is_never_inflated_whole(
    emu: RunningEmulator,
) -> None:
    """A 300 MiB JSON object sent as a 0.3 MiB gzip body (decision 162): before, urllib3 inflated it whole
    and the page's decoding doubled it, so one answer could take a worker's memory. The client now stops
    at 8 MiB, fails the request for good (no retry can shrink it) naming the setting, and the connection
    it cut is not reused: the next request is answered."""
    import tracemalloc

    _fault(emu, {"route": "/items", "inflate_mib": 300, "count": 1})
    stats = CallStats()
    http = _client(emu.base_url, stats, max_bytes=8 * 1024 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(HttpError) as info:
            http.get_json("/items/A")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        assert http.get_json("/items/B")["id"] == "B"
    finally:
        http.close()
    assert not info.value.transient and info.value.status == 200
    assert "larger than 8 MiB (the platform setting response_max_mib)" in info.value.detail
    assert stats.api_calls == 2  # no retry
    assert peak < 40 * 1024 * 1024, peak


def test_an_attachment_past_its_cap_inflated_from_gzip_stays_a_link_without_being_inflated_whole(
    emu: RunningEmulator,
) -> None:
    import tracemalloc

    _fault(emu, {"route": "/items", "inflate_mib": 300, "count": 1})
    http = _client(emu.base_url, CallStats())
    tracemalloc.start()
    try:
        body, _, why = http.get_bytes_capped("/items/A", 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        http.close()
    assert body is None and why == "over the size cap"
    assert peak < 20 * 1024 * 1024, peak


def test_an_answer_trickled_past_response_max_seconds_is_dropped_retried_then_fails_naming_the_bound(
    emu: RunningEmulator,
) -> None:
    """Each 64 bytes come 50 ms apart, far inside the read timeout, so before decision 162 the request
    waited for the whole answer however long it took. Now each attempt is dropped 1 s after it was sent,
    retried, and the request fails naming the setting; an attempt past the fault is answered at once."""
    import time

    _fault(emu, {"route": "/items", "trickle_ms": 50, "count": 2})
    http = _client(emu.base_url, CallStats(), max_seconds=1.0, max_attempts=2, max_wait=0.1)
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable) as info:
            http.get_json("/items/A", {"pad": "x" * 4000})  # 4 KiB: 3.2 s at 64 bytes a 50 ms
    finally:
        http.close()
    took = time.monotonic() - started
    error = info.value
    assert "had not ended 1 s after the request (the platform setting response_max_seconds)" in str(error)
    assert 2.0 <= took < 10.0, took
    http = _client(emu.base_url, CallStats(), max_seconds=1.0)
    try:
        assert http.get_json("/items/C")["id"] == "C"
    finally:
        http.close()


def test_a_trickled_attachment_is_dropped_at_response_max_seconds_and_retried(emu: RunningEmulator) -> None:
    _fault(emu, {"route": "/items", "trickle_ms": 50, "count": 2})
    http = _client(emu.base_url, CallStats(), max_seconds=1.0, max_attempts=2, max_wait=0.1)
    try:
        with pytest.raises(HttpError) as info:
            http.get_bytes_capped("/items/A?pad=" + "x" * 4000, 1024 * 1024)
        body, _, why = http.get_bytes_capped("/items/A?pad=" + "x" * 4000, 1024 * 1024)
    finally:
        http.close()
    assert info.value.transient and "not ended 1 s after the request" in info.value.detail
    assert why == "" and body is not None and json.loads(body)["id"] == "A"


def test_headers_trickled_past_response_max_seconds_are_cut_retried_then_fail_naming_the_bound(
    emu: RunningEmulator,
) -> None:
    """The status line and headers come 8 bytes each 5 s, each far inside the 30 s read timeout. Before
    decision 163 ``urlopen`` waited for all of them (about two minutes for this answer's head) and the
    body's bound was never reached. Now each attempt is cut 1 s after it was sent, retried, and the request
    fails naming the setting; the next request, past the fault, is answered."""
    import time

    _fault(emu, {"route": "/items", "trickle_headers_ms": 5000, "count": 2})
    http = _client(emu.base_url, CallStats(), max_seconds=1.0, max_attempts=2, max_wait=0.1)
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable) as info:
            http.get_json("/items/A")
        took = time.monotonic() - started
        assert http.get_json("/items/C")["id"] == "C"
    finally:
        http.close()
    assert "had not ended 1 s after the request (the platform setting response_max_seconds); its status line" in (
        str(info.value)
    )
    assert took < 10.0, took  # two cut attempts, not two heads of two minutes each


def test_one_receive_that_waits_past_response_max_seconds_is_cut_at_the_bound(emu: RunningEmulator) -> None:
    """The first 64 bytes of the body come at once, the next 5 s later. Before decision 163 the clock was
    read only between receives, so that receive was waited for whole (5 s, up to the read timeout); now it
    is cut when the request's time is up."""
    import time

    _fault(emu, {"route": "/items", "trickle_ms": 5000, "count": 1})
    http = _client(emu.base_url, CallStats(), max_seconds=1.0, max_attempts=1)
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable) as info:
            http.get_json("/items/A", {"pad": "x" * 400})
        took = time.monotonic() - started
    finally:
        http.close()
    assert "had not ended 1 s after the request" in str(info.value) and "64 bytes had come" in str(info.value)
    assert took < 4.0, took


def test_an_attachment_whose_headers_trickle_is_cut_at_response_max_seconds_and_retried(
    emu: RunningEmulator,
) -> None:
    _fault(emu, {"route": "/items", "trickle_headers_ms": 5000, "count": 2})
    http = _client(emu.base_url, CallStats(), max_seconds=1.0, max_attempts=2, max_wait=0.1)
    try:
        with pytest.raises(HttpError) as info:
            http.get_bytes_capped("/items/A", 1024 * 1024)
        body, _, why = http.get_bytes_capped("/items/A", 1024 * 1024)
    finally:
        http.close()
    assert info.value.transient and "its status line and headers had not all come" in info.value.detail
    assert why == "" and body is not None and json.loads(body)["id"] == "A"


class _StoppableGate:
    """The rate gate's stop alone (decision 166): the platform's gate, app.services.rate_budget.PgRateGate,
    sets ``stopped`` when the run is cancelled or taken over; tests/jobs/test_orphans.py goes through it."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def wait(self, patience: float) -> None:
        if self.stopped.is_set():
            raise RunStopped("the run stopped: no more requests")

    def observe(self, status: int, headers: object) -> None:
        return None

    def stop_in(self, seconds: float) -> None:
        threading.Timer(seconds, self.stopped.set).start()


def _gated(emu: RunningEmulator, stats: CallStats, gate: _StoppableGate, **kw: float) -> SourceHttp:
    return _client(emu.base_url, stats, gate=gate, **kw)  # type: ignore[arg-type]


def _seconds_until_stopped(http: SourceHttp, gate: _StoppableGate, call: Callable[[], object], match: str) -> float:
    """Stop the run half a second in: the seconds ``call`` took to give up with ``RunStopped`` matching
    ``match``. The client is closed either way."""
    import time

    gate.stop_in(0.5)
    started = time.monotonic()
    try:
        with pytest.raises(RunStopped, match=match):
            call()
        return time.monotonic() - started
    finally:
        http.close()


def _stalled(emu: RunningEmulator) -> None:
    # 20 s of silence before the first byte of every answer: within the read timeout (30 s), well within
    # the answer's bound (300 s), so before decision 166 a stopped run waited it out.
    _fault(emu, {"latency_ms": 20_000})


@pytest.mark.parametrize("path", ["page", "attachment"])
def test_a_request_waiting_on_a_stalled_source_is_given_up_when_its_run_stops(emu: RunningEmulator, path: str) -> None:
    _stalled(emu)
    gate = _StoppableGate()
    stats = CallStats()
    http = _gated(emu, stats, gate)
    call = (lambda: http.get_json("/items/A")) if path == "page" else (lambda: http.get_bytes_capped("/items/A", 1024))
    took = _seconds_until_stopped(http, gate, call, "waited for the source's answer")
    assert took < 5.0, took  # the stop and a quarter-second slice, not the 20 s stall
    assert stats.api_calls == 1  # given up, not retried


def test_a_retry_s_backoff_ends_when_its_run_stops(emu: RunningEmulator) -> None:
    # A 500 asking for 20 s: a failure, not "slow down", so the client itself sleeps min(20, max_wait).
    _fault(emu, {"status": 500, "ratio": 1.0, "retry_after": 20})
    gate = _StoppableGate()
    stats = CallStats()
    http = _gated(emu, stats, gate, max_attempts=3)
    took = _seconds_until_stopped(http, gate, lambda: http.get_json("/items/A"), "waited to be retried")
    assert took < 5.0, took
    assert stats.api_calls == 1


def test_without_a_stop_a_slow_answer_is_read_whole_across_many_slices(emu: RunningEmulator) -> None:
    # An answer 1.5 s late is six slices of waiting, within the 5 s read timeout: with a gate that never
    # stops it is simply read, on its first request.
    _fault(emu, {"latency_ms": 1500})
    gate = _StoppableGate()
    stats = CallStats()
    http = _gated(emu, stats, gate, timeout=5.0)
    try:
        assert http.get_json("/items/A")["id"] == "A"
    finally:
        http.close()
    assert stats.api_calls == 1


def test_with_a_stop_a_receive_still_ends_at_the_read_timeout(emu: RunningEmulator) -> None:
    # The slices add up to the read timeout (1 s) for a source 3 s late: the same failure as without them.
    _fault(emu, {"latency_ms": 3000})
    stats = CallStats()
    http = _gated(emu, stats, _StoppableGate(), timeout=1.0, max_attempts=1)
    failed = _failing_get(http, SourceUnreachable)
    assert "Read timed out. (read timeout=1.0)" in str(failed)
    assert stats.api_calls == 1


def test_a_body_in_a_charset_python_cannot_decode_is_read_as_utf8_on_every_path() -> None:
    # A page's error text, get_text_capped and an attachment read all decode through one helper: the
    # declared charset when Python can decode text with it, else UTF-8. Before, the two download paths
    # raised on a charset Python lacks, so one odd header failed the whole item.
    from connectors.attachments import AttachmentReader

    app = EmulatorApp(seed=1, token=TOKEN)

    @app.route("GET", r"/doc/(?P<status>\d+)/(?P<charset>[^/]+)")
    def doc(req: Request) -> Response:
        charset = req.params["charset"]
        body = "café".encode("latin-1" if charset == "iso-8859-1" else "utf-8")
        ct = f"text/plain; charset={charset}"
        return Response(int(req.params["status"]), body, {"Content-Type": ct})

    stats = CallStats()
    with serve(app) as running:
        http = _client(running.base_url, stats, max_attempts=1)
        reader = AttachmentReader(http, stats, "test")
        try:
            for charset in ("iso-8859-1", "utf-8", "x-no-such-charset", "base64", "idna", "undefined"):
                url = f"{running.base_url}/doc/200/{charset}"
                assert http.get_text_capped(url, 1024) == ("café", ""), charset
                got = reader.read("A-1", url, content_type="text/plain", filename="a.txt", size=None)
                assert (got.text, got.reason) == ("café", None), charset
                with pytest.raises(HttpError) as info:
                    http.get_json(f"/doc/400/{charset}")
                assert "café" in info.value.detail, charset
        finally:
            http.close()


def test_the_environment_s_proxy_is_used_unless_no_proxy_names_the_host(
    emu: RunningEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As httpx honoured them: HTTP_PROXY (here a closed port, so going through it fails loudly) and NO_PROXY.
    for name in [k for k in os.environ if k.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")
    http = _client(emu.base_url, CallStats(), max_attempts=1)
    try:
        with pytest.raises(SourceUnreachable, match="Proxy"):
            http.get_json("/items/A")
    finally:
        http.close()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    http = _client(emu.base_url, CallStats(), max_attempts=1)
    try:
        assert http.get_json("/items/A")["id"] == "A"
    finally:
        http.close()


@pytest.mark.parametrize("stoppable", [False, True], ids=["plain", "stoppable"])
def test_unreachable_port_raises_source_unreachable(stoppable: bool) -> None:
    # With a run's stop the handshake is made in slices (decision 168): a refused connection fails as it
    # does without one, naming the same error.
    stats = CallStats()
    kw: dict[str, object] = {"gate": _StoppableGate()} if stoppable else {}
    http = _client(f"http://127.0.0.1:{_free_port()}", stats, max_attempts=2, max_wait=0.01, **kw)  # type: ignore[arg-type]
    try:
        with pytest.raises(SourceUnreachable, match="NewConnectionError") as info:
            http.get_json("/items/A")
    finally:
        http.close()
    assert stats.api_calls == 2
    assert TOKEN not in str(info.value)


@pytest.fixture
def unaccepting_port() -> Iterator[int]:
    """A port whose listener never accepts and whose backlog is full: the kernel drops every further SYN,
    so a connection to it waits for its handshake as one to a firewalled host does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = int(listener.getsockname()[1])
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)  # the backlog's one place
    try:
        yield port
    finally:
        filler.close()
        listener.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener never accepts but has room in its backlog: the kernel completes each TCP
    handshake, and a TLS client's hello then goes unanswered."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


@pytest.mark.parametrize(("base", "port"), [("http", "unaccepting_port"), ("https", "silent_port")], ids=["tcp", "tls"])
def test_a_handshake_a_host_never_answers_is_given_up_when_its_run_stops(
    request: pytest.FixtureRequest, base: str, port: str
) -> None:
    """Before decision 168 the stopped run waited out the connect timeout (20 s here, 30 s by default): for
    the SYN's answer (tcp) or for the server's TLS hello (tls)."""
    gate = _StoppableGate()
    stats = CallStats()
    url = f"{base}://127.0.0.1:{request.getfixturevalue(port)}"
    http = _client(url, stats, gate=gate, timeout=20.0)  # type: ignore[arg-type]
    took = _seconds_until_stopped(http, gate, lambda: http.get_json("/items/A"), "waited for the source's answer")
    assert took < 5.0, took
    assert stats.api_calls == 1  # given up, not retried


@pytest.mark.parametrize("stoppable", [False, True], ids=["plain", "stoppable"])
def test_a_tls_handshake_never_answered_ends_at_the_connect_timeout_with_or_without_a_stop(
    silent_port: int, stoppable: bool
) -> None:
    # The slices add up to the connect timeout, and the failure reads as urllib3's own (it reports a
    # handshake's timeout as a read timeout).
    import time

    stats = CallStats()
    kw: dict[str, object] = {"gate": _StoppableGate()} if stoppable else {}  # never stopped
    http = _client(f"https://127.0.0.1:{silent_port}", stats, timeout=1.5, max_attempts=1, **kw)  # type: ignore[arg-type]
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable, match=r"ReadTimeoutError: .*\(read timeout=1\.5\)"):
            http.get_json("/items/A")
        took = time.monotonic() - started
    finally:
        http.close()
    assert 1.4 <= took < 5.0, took


def test_with_a_stop_a_handshake_still_ends_at_the_connect_timeout(unaccepting_port: int) -> None:
    # The slices add up to the connect timeout: not cut at the first, not waiting past the last.
    import time

    stats = CallStats()
    gate = _StoppableGate()  # never stopped
    http = _client(f"http://127.0.0.1:{unaccepting_port}", stats, gate=gate, timeout=1.5, max_attempts=1)  # type: ignore[arg-type]
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable, match="ConnectTimeoutError") as info:
            http.get_json("/items/A")
        took = time.monotonic() - started
    finally:
        http.close()
    assert 1.4 <= took < 5.0, took
    assert "connect timeout=1.5" in str(info.value)


def test_tls_settings_that_cannot_load_fail_the_first_request_naming_them(
    emu: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing CA file is this process's setting, not the source being down: the first request fails naming
    the setting, and is not retried (before: an OSError at each attempt, reported as "unreachable")."""
    missing = tmp_path / "missing.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls_context.cache_clear()  # built once a process: this test's settings must be read
    stats = CallStats()
    try:
        failed = _failing_get(_client(emu.base_url, stats, max_attempts=3, max_wait=0.01), TlsSettingsUnusable)
    finally:
        monkeypatch.undo()
        tls_context.cache_clear()  # the next test builds it from the real settings
    assert str(failed) == (
        "the TLS settings could not be loaded (SSL_CERT_FILE or SSL_CERT_DIR where set, else certifi's CA bundle): "
        "FileNotFoundError: [Errno 2] No such file or directory"
    )
    assert isinstance(failed, SourceUnreachable)  # a connection probe says "unreachable", as before
    assert stats.api_calls == 1


# ---------------------------------------------------------------- emulator_kit itself


def test_control_api_is_not_authenticated_nor_counted(emu: RunningEmulator) -> None:
    assert httpx.get(f"{emu.base_url}/_emulator/stats").json()["requests"] == 0
    assert httpx.get(f"{emu.base_url}/items/A").status_code == 401
    assert httpx.post(f"{emu.base_url}/_emulator/faults", json={"bogus": 1}).status_code == 400
    assert httpx.delete(f"{emu.base_url}/_emulator/faults").status_code == 204
    stats = httpx.get(f"{emu.base_url}/_emulator/stats").json()
    assert stats["requests"] == 1 and stats["by_status"] == {"401": 1}


def test_ratio_faults_are_deterministic_for_a_seed() -> None:
    def run() -> list[int]:
        with serve(_app()) as running:
            _fault(running, {"status": 503, "ratio": 0.5})
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with httpx.Client(headers=headers) as client:
                return [client.get(f"{running.base_url}/items/x").status_code for _ in range(20)]

    first, second = run(), run()
    assert first == second and {200, 503} == set(first)


def test_signed_webhook_carries_a_verifiable_signature() -> None:
    received: list[Request] = []
    app = EmulatorApp()

    @app.route("POST", r"/hook")
    def hook(req: Request) -> Response:
        received.append(req)
        return Response(202, {})

    body = json.dumps({"webhookEvent": "jira:issue_updated"}).encode()
    with serve(app) as running:
        status = send_signed_webhook(
            f"{running.base_url}/hook",
            body,
            "whsec",
            "X-Hub-Signature",
            "sha256=",
            {"X-Atlassian-Webhook-Identifier": "d1"},
        )
    assert status == 202
    expected = "sha256=" + hmac.new(b"whsec", body, hashlib.sha256).hexdigest()
    assert received[0].headers["x-hub-signature"] == expected
    assert received[0].headers["x-atlassian-webhook-identifier"] == "d1"


def test_cli_prints_base_url_first_and_stops_on_sigterm() -> None:
    code = (
        "from connectors.emulators.kit import EmulatorApp, main_cli\nmain_cli(lambda ns: EmulatorApp(seed=ns.seed))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--seed", "3"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{base_url}/_emulator/stats").status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        if proc.stdout is not None:
            proc.stdout.close()


def test_serve_stops_cleanly() -> None:
    """stop() leaves no thread of the emulator's behind. Threads of earlier tests (a handler still writing a
    slow answer a client gave up on) may end meanwhile, so the check is on the threads started here, not on
    the count, which such a thread's end made flaky."""
    before = set(threading.enumerate())
    running = serve(EmulatorApp())
    started = set(threading.enumerate()) - before
    assert any(t.name.startswith("emulator-") for t in started)
    running.stop()
    assert [t.name for t in started if t.is_alive()] == []


def test_a_download_link_gets_the_credential_only_at_the_source_s_origin_and_never_in_clear_text() -> None:
    """Where an attachment's or a file's link from a payload is requested with the credential (decision 155):
    the base URL's origin, another port being another host as for redirects; a link on the base's host over
    plain HTTP, from a server whose base-URL setting says http behind TLS, at the base's origin instead;
    a trusted file host over HTTPS only. No request is made here: the answer is where one would go."""
    http = _client("https://wiki.example.com/wiki", CallStats())
    slack_files = frozenset({"files.slack.com"})
    expected = {
        "/download/attachments/1/a.txt": ("https://wiki.example.com/wiki/download/attachments/1/a.txt", ""),
        "https://wiki.example.com/wiki/x?version=2": ("https://wiki.example.com/wiki/x?version=2", ""),
        "https://WIKI.example.com:443/wiki/x": ("https://wiki.example.com/wiki/x", ""),
        "//wiki.example.com/wiki/x": ("https://wiki.example.com/wiki/x", ""),
        "http://wiki.example.com/wiki/x": ("https://wiki.example.com/wiki/x", ""),
        "http://wiki.example.com:8090/wiki/x": ("https://wiki.example.com/wiki/x", ""),
        "https://wiki.example.com:8443/wiki/x": (None, "download link on another port"),
        "https://media.example.com/file/1": (None, "download link on another host"),
        "//elsewhere.example/x": (None, "download link on another host"),
        "https://files.slack.com/files-pri/T1-F1/a.txt": ("https://files.slack.com/files-pri/T1-F1/a.txt", ""),
        "http://files.slack.com/files-pri/T1-F1/a.txt": (None, "download link over plain HTTP"),
        "http://[::1": (None, "download link is not a URL"),
    }
    try:
        assert {link: http.download_target(link, slack_files) for link in expected} == expected
        # A source configured over plain HTTP (an internal server, the emulators) keeps its links as they are.
        plain = _client("http://jira.internal:8080", CallStats())
        assert plain.download_target("http://jira.internal:8080/secure/attachment/1/a.txt") == (
            "http://jira.internal:8080/secure/attachment/1/a.txt",
            "",
        )
        assert plain.download_target("https://jira.internal/secure/attachment/1/a.txt") == (
            None,
            "download link on another port",
        )
        plain.close()
    finally:
        http.close()
