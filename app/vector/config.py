"""The process's embedder and vector stage, built once per process from :class:`app.config.EmbedderConfig`.

``HARVESTER_EMBEDDER``: ``local`` (default; all-MiniLM-L6-v2 int8 ONNX, offline), ``openai`` (an
OpenAI-compatible ``/v1/embeddings``), or ``none`` (sync without the vector projection); the other
``HARVESTER_EMBEDDER_*`` variables are read and checked by ``app.config.load_config``.
"""

from __future__ import annotations

import threading

from app.config import EmbedderConfig, load_config
from app.embedding import Embedder, get_embedder
from app.vector.stage import VectorStage

_lock = threading.Lock()
_embedder: Embedder | None = None
_built = False


def process_embedder(config: EmbedderConfig | None = None) -> Embedder | None:
    """The configured embedder (None for ``none``), loaded once: the model load costs a second or more.

    Entry points pass their configuration; ``None`` loads it (for callers that have none at hand).
    """
    global _embedder, _built
    with _lock:
        if not _built:
            config = config if config is not None else load_config().embedder
            _embedder = None if config.kind == "none" else get_embedder(config.settings())
            _built = True
        return _embedder


def process_stage(config: EmbedderConfig | None = None) -> VectorStage | None:
    """A stage over the process's embedder; stages are cheap, the embedder inside is shared."""
    embedder = process_embedder(config)
    return VectorStage(embedder) if embedder is not None else None


def require_embedder(config: EmbedderConfig | None = None) -> Embedder:
    embedder = process_embedder(config)
    if embedder is None:
        raise RuntimeError(
            "HARVESTER_EMBEDDER=none: no embedder is configured, so there are no vectors to search or re-embed"
        )
    return embedder
