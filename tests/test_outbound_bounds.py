"""Answers from the endpoints Harvester calls out to, bounded in time however their bytes trickle (decision 162).

httpx's timeouts bound each wait for bytes, not the answer. An embeddings endpoint, an alert receiver or an
audit sink that sends its answer 64 bytes at a time, each well within the read timeout, held its caller
as long as it took: a run waiting for vectors, an alert job holding a worker's slot, the audit sink's thread
with events queueing behind it. Each now drops such an answer at its bound and treats it as a timeout. The
endpoints are real HTTP servers on 127.0.0.1 (connectors.emulators.kit with its ``trickle_ms`` fault).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from app.audit import AuditEvent, HttpSink
from app.embedding.base import EmbeddingError
from app.embedding.openai import OpenAIEmbedder
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


def _trickle(endpoint: RunningEmulator, route: str, count: int, ms: int = 50) -> None:
    spec = {"route": route, "trickle_ms": ms, "count": count}
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
