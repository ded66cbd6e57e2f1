"""A model change is detected and re-embedded in batches while search keeps working (issue 5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from app.secrets import Keyring
from app.vector.reembed import ReembedResult, models_in_use, reembed, stale_chunks
from app.vector.search import Principal, search
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import CountingEmbedder, HashEmbedder

READER = Principal("reader@example.com")


def test_reembed_replaces_every_vector_while_both_models_keep_answering(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    source_id = plain_source(conn, keyring)
    old, new = HashEmbedder("model-a"), CountingEmbedder(HashEmbedder("model-b"))
    load_entities(
        conn, source_id, [entity(n, f"text {n}", ["user:reader@example.com"]) for n in range(300)], VectorStage(old)
    )
    assert stale_chunks(conn, new.model_name) == 300
    conn.commit()

    seen: list[tuple[int, int, int]] = []

    def during(progress: ReembedResult) -> None:
        # Mid-way, on another connection: old vectors still serve the old model, new ones the new model.
        served_old = len(search(probe, old, query="text 5", principal=READER, k=10))
        served_new = search(probe, new, query="text 5", principal=READER, k=400)
        seen.append((progress.replaced, served_old, len(served_new)))

    result = reembed(conn, new, batch=64, on_batch=during)
    assert (result.replaced, result.skipped, result.batches) == (300, 0, 5)
    assert seen[0] == (64, 10, 64)  # after one batch: old model still fills k, new model sees its 64
    assert all(old_k == 10 or replaced == 300 for replaced, old_k, _ in seen)
    assert [m.model for m in models_in_use(conn)] == ["model-b"]
    assert set(new.texts) - {"text 5"} == {f"Item {n}\n\ntext {n}" for n in range(300)}  # "text 5": queries

    # The stored vectors are exactly the new model's.
    body, stored = probe.execute("select body, embedding::text from entity_chunks order by id limit 1").fetchone()  # type: ignore[misc]
    stored_vector = np.array(stored.strip("[]").split(","), dtype=np.float32)
    np.testing.assert_allclose(stored_vector, new.embed([body])[0], atol=1e-6)
    assert len(search(conn, new, query="text 5", principal=READER, k=10)) == 10
    assert search(conn, old, query="text 5", principal=READER, k=10) == []
    new.reset()
    assert reembed(conn, new).replaced == 0 and new.texts == []


def test_pipeline_re_embeds_a_changed_entity_whose_other_chunks_carry_the_old_model(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    source_id = plain_source(conn, keyring)
    reader = ["user:reader@example.com"]
    load_entities(conn, source_id, [entity(1, "alpha\n\nbeta", reader)], VectorStage(HashEmbedder("model-a")))
    new = CountingEmbedder(HashEmbedder("model-b"))
    stage = VectorStage(new)
    # Only the status changed: the chunk texts (and hashes) are equal, the model is not.
    load_entities(
        conn, source_id, [entity(1, "alpha\n\nbeta", ["user:reader@example.com"], status="archived")], stage
    )
    assert stale_chunks(conn, "model-b") == 0
    conn.commit()
    assert stage.stats.embedded == len(new.texts) == stage.stats.chunks >= 1


def test_a_rewritten_chunk_is_not_overwritten_by_a_stale_re_embed(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring
) -> None:
    source_id = plain_source(conn, keyring)
    load_entities(conn, source_id, [entity(n, f"text {n}", ["user:reader@example.com"]) for n in range(4)],
                  VectorStage(HashEmbedder("model-a")))
    new = HashEmbedder("model-b")

    class EditsMeanwhile(CountingEmbedder):
        def embed(self, texts: Any) -> Any:
            # While the re-embed computes, sync changes entity 0's text (with the new model as well).
            load_entities(probe, source_id, [entity(0, "edited", ["user:reader@example.com"])], VectorStage(new))
            return super().embed(texts)

    result = reembed(conn, EditsMeanwhile(new), batch=10)
    assert (result.replaced, result.skipped) == (3, 1)
    bodies = [r[0] for r in probe.execute("select body from entity_chunks where embedding_model = 'model-b'")]
    assert "Item 0\n\nedited" in bodies and len(bodies) == 4
