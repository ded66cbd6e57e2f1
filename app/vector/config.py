"""The process's embedder and vector stage, from the environment, built once per process.

``HARVESTER_EMBEDDER``: ``local`` (default; all-MiniLM-L6-v2 int8 ONNX, offline), ``openai`` (an
OpenAI-compatible ``/v1/embeddings``), or ``none`` (sync without the vector projection).
For ``openai``: ``HARVESTER_EMBEDDER_URL``, ``HARVESTER_EMBEDDER_MODEL``, ``HARVESTER_EMBEDDER_DIMENSION``
(must be 384 while the schema's column is vector(384)), ``HARVESTER_EMBEDDER_API_KEY`` (or
``OPENAI_API_KEY``). Both: ``HARVESTER_EMBEDDER_BATCH_SIZE``; local: ``HARVESTER_EMBED_THREADS``.
"""

from __future__ import annotations

import os
import threading

from app.embedding import Embedder, get_embedder
from app.vector.stage import VectorStage

ENV = "HARVESTER_EMBEDDER"
_lock = threading.Lock()
_embedder: Embedder | None = None
_built = False


def embedder_settings(env: dict[str, str] | None = None) -> dict[str, str]:
    """``get_embedder`` settings from HARVESTER_EMBEDDER_* variables (unset ones left out)."""
    env = dict(os.environ) if env is None else env
    settings = {"embedder": env.get(ENV, "local").strip().lower() or "local"}
    for name in ("url", "model", "dimension", "api_key", "batch_size"):
        value = env.get(f"{ENV}_{name.upper()}")
        if value:
            settings[name] = value
    return settings


def process_embedder() -> Embedder | None:
    """The configured embedder (None for ``none``), loaded once: the model load costs a second or more."""
    global _embedder, _built
    with _lock:
        if not _built:
            settings = embedder_settings()
            _embedder = None if settings["embedder"] in ("none", "off") else get_embedder(settings)
            _built = True
        return _embedder


def process_stage() -> VectorStage | None:
    """A stage over the process's embedder; stages are cheap, the embedder inside is shared."""
    embedder = process_embedder()
    return VectorStage(embedder) if embedder is not None else None


def require_embedder() -> Embedder:
    embedder = process_embedder()
    if embedder is None:
        raise RuntimeError(f"{ENV}=none: no embedder is configured, so there are no vectors to search or re-embed")
    return embedder
