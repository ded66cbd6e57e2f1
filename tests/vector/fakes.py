"""A cheap deterministic embedder implementing the Embedder protocol, and a counting wrapper.

Not mocks of anything we test: the database, HTTP and pipeline are real; only the model is replaced
where its semantics do not matter (permission filtering) or where calls must be counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from app.embedding import Embedder, Vectors, l2_normalise


class HashEmbedder:
    """A text's vector is a pseudo-random unit vector seeded by its sha256: equal texts, equal vectors."""

    dimension = 384
    max_tokens = 128

    def __init__(self, model_name: str = "fake-hash-384") -> None:
        self.model_name = model_name

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [
            np.random.default_rng(int.from_bytes(hashlib.sha256(f"{self.model_name}\0{t}".encode()).digest()[:8]))
            .standard_normal(self.dimension)
            for t in texts
        ]
        return l2_normalise(np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension))


class CountingEmbedder:
    """Wraps an embedder and records every text it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.calls = 0
        self.texts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed(texts)

    def reset(self) -> None:
        self.calls = 0
        self.texts.clear()
