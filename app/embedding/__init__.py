"""Embedders behind one interface, chosen by configuration (issue 5, item 2).

Settings may be a mapping or an object with attributes. Each key is looked up as ``embedder_<name>``
first, then as ``<name>``:

- ``embedder``: ``"local"`` (default) or ``"openai"``;
- ``batch_size``: texts per request (openai); at most this many per forward pass (local, which cuts its
  length-sorted texts where padding would cost more than another pass; the local embedder's default int8
  graph embeds one text a pass whatever this says, so that a text's vector does not depend on its
  neighbours, decision 146);
- local: ``threads`` (default: the CPUs this process may use), ``cache_dir`` (where the derived int8 graph
  is kept for the next process, decision 148; default none: each process derives it);
- openai: ``url``, ``model``, ``dimension`` (required), ``api_key``, ``max_tokens``, ``attempts``, ``timeout``.

The process's settings come from ``app.config.EmbedderConfig.settings()``; nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.embedding.base import DimensionMismatch, Embedder, EmbeddingError, Vectors, l2_normalise

__all__ = ["DimensionMismatch", "Embedder", "EmbeddingError", "Vectors", "get_embedder", "l2_normalise"]

_MISSING = object()


def _setting(settings: Any, name: str, default: Any = _MISSING) -> Any:
    for key in (f"embedder_{name}", name):
        value = settings.get(key) if isinstance(settings, Mapping) else getattr(settings, key, None)
        if value is not None:
            return value
    if default is _MISSING:
        raise ValueError(f"embedder setting {name!r} is required")
    return default


def get_embedder(settings: Any) -> Embedder:
    """The embedder the settings name; imports only what that embedder needs."""
    kind = str(_setting(settings, "embedder", "local"))
    if kind == "local":
        from app.embedding.local import DEFAULT_BATCH_SIZE, LocalEmbedder

        threads = _setting(settings, "threads", None)
        cache_dir = _setting(settings, "cache_dir", None)
        return LocalEmbedder(
            batch_size=int(_setting(settings, "batch_size", DEFAULT_BATCH_SIZE)),
            threads=int(threads) if threads is not None else None,
            cache_dir=Path(cache_dir) if cache_dir is not None else None,
        )
    if kind == "openai":
        from app.embedding import openai

        api_key = _setting(settings, "api_key", None)
        return openai.OpenAIEmbedder(
            url=str(_setting(settings, "url")),
            model=str(_setting(settings, "model")),
            dimension=int(_setting(settings, "dimension")),
            api_key=api_key,
            batch_size=int(_setting(settings, "batch_size", openai.DEFAULT_BATCH_SIZE)),
            max_tokens=int(_setting(settings, "max_tokens", openai.DEFAULT_MAX_TOKENS)),
            attempts=int(_setting(settings, "attempts", openai.DEFAULT_ATTEMPTS)),
            timeout=float(_setting(settings, "timeout", 60.0)),
        )
    raise ValueError(f"unknown embedder {kind!r}: expected 'local' or 'openai'")
