"""A vector's text for pgvector: exactly the float32 row, the same vector the 9-digit form stored before
(decision 147), and a row that cannot be stored refused by name."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from app.embedding import EmbeddingError
from app.vector.stage import vector_text


def _nine_digits(row: np.ndarray) -> str:
    # The form every stored vector was written in before decision 147.
    return "[" + ",".join(f"{float(x):.9g}" for x in row) + "]"


def _rows() -> list[np.ndarray]:
    rng = np.random.default_rng(147)
    unit = rng.standard_normal((200, 384)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    tiny = np.finfo(np.float32).smallest_subnormal
    edges = np.array(
        [0.0, -0.0, tiny, -tiny, np.finfo(np.float32).tiny, np.finfo(np.float32).max, -np.finfo(np.float32).max,
         1 / 3, 0.1, 1e-7, 123456.789, 16777217.0] * 32,
        dtype=np.float32,
    )  # fmt: skip
    return [*unit, edges]


def test_pgvector_reads_back_exactly_the_float32_row_and_the_vector_stored_before(migrated_db_url: str) -> None:
    with psycopg.connect(migrated_db_url) as conn:
        for row in _rows():
            text = vector_text(row)
            stored, same = conn.execute(
                "select %s::vector::real[], %s::vector = %s::vector", (text, text, _nine_digits(row))
            ).fetchone()  # type: ignore[misc]
            assert np.array_equal(np.asarray(stored, dtype=np.float32), row)
            assert same, text[:80]
            assert len(text) <= len(_nine_digits(row))


def test_a_row_of_doubles_or_a_list_is_stored_as_its_float32() -> None:
    row = np.random.default_rng(3).standard_normal(384)
    assert vector_text(row) == vector_text(row.astype(np.float32))
    assert vector_text(list(row)) == vector_text(row.astype(np.float32))
    # A column of a matrix is not contiguous: written all the same.
    matrix = np.random.default_rng(4).standard_normal((384, 2)).astype(np.float32)
    assert vector_text(matrix[:, 1]) == vector_text(matrix[:, 1].copy())


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_vector_holding_nan_or_infinity_is_refused_by_name(bad: float) -> None:
    row = np.zeros(384, dtype=np.float32)
    row[7] = bad
    with pytest.raises(EmbeddingError, match="1 values NaN or infinite"):
        vector_text(row)


def test_a_matrix_is_not_a_vector() -> None:
    with pytest.raises(EmbeddingError, match=r"shape \(2, 384\)"):
        vector_text(np.zeros((2, 384), dtype=np.float32))
