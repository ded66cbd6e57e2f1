"""Answers from the endpoints Harvester calls out to, bounded in time however their bytes trickle (decision 162).

httpx's timeouts bound each wait for bytes, not the answer. An embeddings endpoint, an alert receiver or an
audit sink that sends its answer 64 bytes at a time, each well within the read timeout, held its caller
as long as it took: a run waiting for vectors, an alert job holding a worker's slot, the audit sink's thread
with events queueing behind it. Each now drops such an answer at its bound and treats it as a timeout. The
endpoints are real HTTP servers on 127.0.0.1 (connectors.emulators.kit with its ``trickle_ms`` fault).

Decision 165: the bound covers the status line and headers too (the kit's ``trickle_headers_ms`` fault sends
them 8 bytes at a time), directly and through a proxy the environment names.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from app.audit import AuditEvent, HttpSink
from app.embedding.base import EmbeddingError
from app.embedding.openai import OpenAIEmbedder
from app.http_answer import AnswerTooSlow, BoundedClient, CallAbandoned, abandon_when, post_bounded
from app.jobs.alerts import AlertNotDelivered, deliver
from connectors.emulators.kit import EmulatorApp, Request, Response, RunningEmulator, serve

DIMENSION = 16
ANSWER = {"ok": True, "note": "x" * 2000}  # 2 KiB: 1.6 s at 64 bytes a 50 ms


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i] - 128) / 16.0 for i in range(DIMENSION)]


@pytest.fixture()
def endpoint() -> Iterator[RunningEmulator]:
    app = EmulatorApp(seed=1)

    @app.route("POST", r"/v1/embeddings")
    def embeddings(req: Request) -> Response:
        texts = req.json()["input"]
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
        return Response(200, {"object": "list", "data": data, "model": "m", "pad": "x" * 2000})

    @app.route("POST", r"/hook")
    def hook(req: Request) -> Response:
        return Response(200, ANSWER)

    with serve(app) as running:
        yield running


def _trickle(endpoint: RunningEmulator, route: str, count: int, ms: int = 50, *, head: bool = False) -> None:
    spec = {"route": route, "trickle_headers_ms" if head else "trickle_ms": ms, "count": count}
    httpx.post(f"{endpoint.base_url}/_emulator/faults", json=spec).raise_for_status()


def _requests(endpoint: RunningEmulator) -> int:
    return int(endpoint.app.stats()["requests"])


def _embedder(endpoint: RunningEmulator, attempts: int) -> OpenAIEmbedder:
    # A read timeout of 0.2 s: each 64 bytes come within it; the answer's bound is five of them, 1 s.
    return OpenAIEmbedder(
        url=f"{endpoint.base_url}/v1",
        model="m",
        dimension=DIMENSION,
        attempts=attempts,
        timeout=0.2,
        sleep=lambda _: None,
    )


def test_an_embeddings_answer_trickled_past_its_bound_is_retried_and_the_vectors_come_once_it_is_whole(
    endpoint: RunningEmulator,
) -> None:
    _trickle(endpoint, "/embeddings", count=2, ms=100)
    embedder = _embedder(endpoint, attempts=3)
    try:
        got = embedder.embed(["alpha", "beta"])
    finally:
        embedder.close()
    raw = np.asarray([_vector("alpha"), _vector("beta")], dtype=np.float32)
    assert np.allclose(got, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert _requests(endpoint) == 3


def test_an_embeddings_answer_that_always_trickles_fails_the_call_naming_the_bound(endpoint: RunningEmulator) -> None:
    _trickle(endpoint, "/embeddings", count=5, ms=100)
    embedder = _embedder(endpoint, attempts=2)
    try:
        with pytest.raises(EmbeddingError, match="had not ended 1 s after the request"):
            embedder.embed(["alpha"])
    finally:
        embedder.close()
    assert _requests(endpoint) == 2


def test_an_alert_receiver_trickling_its_answer_is_not_waited_for(endpoint: RunningEmulator) -> None:
    channel = {"kind": "webhook", "url": f"{endpoint.base_url}/hook"}
    _trickle(endpoint, "/hook", count=1)
    with pytest.raises(AlertNotDelivered, match="AnswerTooSlow"):
        deliver(channel, {"text": "run failed"}, None, answer_seconds=0.5)
    deliver(channel, {"text": "run failed"}, None, answer_seconds=0.5)  # the receiver answers: delivered
    assert _requests(endpoint) == 2


def test_the_audit_sink_drops_a_trickled_answer_and_delivers_the_event_on_its_next_attempt(
    endpoint: RunningEmulator,
) -> None:
    _trickle(endpoint, "/hook", count=1)
    sink = HttpSink(f"{endpoint.base_url}/hook", attempts=3, backoff=0.05, answer_seconds=0.5)
    sink.write(AuditEvent("token:t", "runs.start", "source:1", "ok", 200, "rid-1", "api").as_json())
    assert sink.flush(15)
    assert _requests(endpoint) == 2
    assert sink.outage.down is False


HEAD_CUT = "its status line and headers had not all come"


def test_an_embeddings_answer_whose_head_trickles_is_cut_at_its_bound_and_retried(endpoint: RunningEmulator) -> None:
    # The head (about 150 bytes) at 8 bytes a 100 ms takes about 2 s; the bound is 1 s. Before decision 165
    # the whole head was waited for and the cut came only with the body's first receive.
    _trickle(endpoint, "/embeddings", count=1, ms=100, head=True)
    embedder = _embedder(endpoint, attempts=1)
    try:
        with pytest.raises(EmbeddingError, match=HEAD_CUT):
            embedder.embed(["alpha"])
        got = embedder.embed(["alpha"])  # the same client, its next request answered in full
    finally:
        embedder.close()
    raw = np.asarray([_vector("alpha")], dtype=np.float32)
    assert np.allclose(got, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert _requests(endpoint) == 2


def test_an_alert_receiver_trickling_its_head_is_cut_at_the_bound(endpoint: RunningEmulator) -> None:
    channel = {"kind": "webhook", "url": f"{endpoint.base_url}/hook"}
    _trickle(endpoint, "/hook", count=1, ms=100, head=True)
    client = BoundedClient(timeout=5.0)
    try:
        with pytest.raises(AnswerTooSlow, match=HEAD_CUT):
            post_bounded(client, channel["url"], max_bytes=1 << 20, max_seconds=0.5, json={"text": "run failed"})
        answer = post_bounded(client, channel["url"], max_bytes=1 << 20, max_seconds=0.5, json={"text": "x"})
    finally:
        client.close()
    assert answer.status_code == 200
    assert _requests(endpoint) == 2


def test_a_head_trickled_through_the_environment_s_proxy_is_cut_at_the_bound_too(
    endpoint: RunningEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The emulator is the proxy (it answers an absolute-form request by its path); the receiver's name cannot
    # resolve, so an answer at all proves the request went through the proxy's transport.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", endpoint.base_url)
    monkeypatch.setenv("http_proxy", endpoint.base_url)
    url = "http://alerts-receiver.invalid/hook"
    _trickle(endpoint, "/hook", count=1, ms=100, head=True)
    client = BoundedClient(timeout=5.0)  # reads the environment's proxies here, as deliver()'s does
    try:
        with pytest.raises(AnswerTooSlow, match=HEAD_CUT):
            post_bounded(client, url, max_bytes=1 << 20, max_seconds=0.5, json={"text": "run failed"})
    finally:
        client.close()
    deliver({"kind": "webhook", "url": url}, {"text": "run failed"}, None, answer_seconds=0.5)
    assert _requests(endpoint) == 2


def test_the_audit_sink_cuts_a_trickled_head_and_delivers_the_event_on_its_next_attempt(
    endpoint: RunningEmulator,
) -> None:
    # 8 bytes every 2 s, each within the sink's read timeout: the head alone would take about 40 s, longer
    # than the flush below waits, were it not cut at the bound.
    _trickle(endpoint, "/hook", count=1, ms=2000, head=True)
    sink = HttpSink(f"{endpoint.base_url}/hook", attempts=3, backoff=0.05, answer_seconds=0.5)
    sink.write(AuditEvent("token:t", "runs.start", "source:1", "ok", 200, "rid-1", "api").as_json())
    assert sink.flush(15)
    assert _requests(endpoint) == 2
    assert sink.outage.down is False


def test_without_a_deadline_a_bounded_client_waits_as_httpx_s_timeouts_say(endpoint: RunningEmulator) -> None:
    # Outside post_bounded the same client reads a trickled head whole: the deadline is the request's, not
    # the connection's.
    _trickle(endpoint, "/hook", count=1, ms=20, head=True)
    with BoundedClient(timeout=5.0) as client:
        answer = client.post(f"{endpoint.base_url}/hook", json={"text": "x"})
    assert answer.status_code == 200


def test_a_call_made_under_a_stop_gives_up_its_answer_when_the_stop_is_set(endpoint: RunningEmulator) -> None:
    # The endpoint holds its answer 20 s: within httpx's read timeout (30 s) and the bound (60 s).
    httpx.post(f"{endpoint.base_url}/_emulator/faults", json={"latency_ms": 20_000}).raise_for_status()
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    abandoned = pytest.raises(CallAbandoned, match="stopped while its request waited")
    with BoundedClient(timeout=30.0) as client, abandon_when(stop), abandoned:
        post_bounded(client, f"{endpoint.base_url}/hook", max_bytes=1 << 20, max_seconds=60, json={})
    took = time.monotonic() - started
    assert took < 5.0, took  # the stop and a slice, not the 20 s hold


def test_under_a_stop_that_is_never_set_a_late_answer_is_read_and_the_read_timeout_still_holds(
    endpoint: RunningEmulator,
) -> None:
    httpx.post(f"{endpoint.base_url}/_emulator/faults", json={"latency_ms": 1500}).raise_for_status()
    with BoundedClient(timeout=5.0) as client, abandon_when(threading.Event()):
        answer = post_bounded(client, f"{endpoint.base_url}/hook", max_bytes=1 << 20, max_seconds=60, json={})
        assert answer.status_code == 200  # six slices of waiting, one receive
    timed_out = pytest.raises(httpx.ReadTimeout)
    with BoundedClient(timeout=1.0) as client, abandon_when(threading.Event()), timed_out:
        post_bounded(client, f"{endpoint.base_url}/hook", max_bytes=1 << 20, max_seconds=60, json={})


def test_an_embedder_s_backoff_under_a_stop_ends_when_the_stop_is_set(endpoint: RunningEmulator) -> None:
    # Every answer is a 503 asking for 20 s: the embedder's backoff (its default sleep) ends at the stop.
    spec = {"status": 503, "ratio": 1.0, "retry_after": 20}
    httpx.post(f"{endpoint.base_url}/_emulator/faults", json=spec).raise_for_status()
    embedder = OpenAIEmbedder(url=f"{endpoint.base_url}/v1", model="m", dimension=DIMENSION, attempts=3)
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    try:
        with abandon_when(stop), pytest.raises(EmbeddingError, match="stopped while a retry waited"):
            embedder.embed(["alpha"])
    finally:
        embedder.close()
    assert time.monotonic() - started < 5.0
    assert _requests(endpoint) == 1
