"""The one small interface every embedder implements (issue 5, item 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors (bad response, permanent HTTP error, retries spent)."""


class DimensionMismatch(EmbeddingError):
    """The model returned vectors of another size than configured: the schema's column would not fit."""


@runtime_checkable
class Embedder(Protocol):
    # Recorded with every chunk: a change of either means every vector must be recomputed.
    model_name: str
    dimension: int
    # Longest input the model reads (special tokens included); the chunker's budget.
    max_tokens: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in input order: shape (len(texts), dimension), float32, L2-normalised."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many of the model's tokens ``text`` costs, special tokens included, untruncated."""
        ...


def l2_normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero rather than becoming NaN)."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return result
