-- migrate:up
-- Search at a million chunks (issue 15 §3, docs/decisions.md #68): the HNSW graph is built with
-- ef_construction 128 instead of 64. At 1 M chunks (bench/search_million.py, same data and seed) entity
-- recall@10 went from 0.941-0.968 over five builds to 0.998 unfiltered and 0.998-1.000 at 50 / 10 / 1 %
-- visibility, with the same index size and p95; the build took 471 s instead of 269-280 s.
-- ef_construction is read at every insert (m is fixed by the build), so every chunk written from now on is
-- linked with the wider search. Chunks already in the index keep their links until the index is rebuilt:
-- that is an operator's step at a quiet hour (docs/operations.md "Rebuilding the HNSW index"), not part of
-- the deploy, because it takes minutes per million chunks.
-- The ALTER holds the index's ACCESS EXCLUSIVE lock for a catalog update only (chunk writes wait for it,
-- not for a rebuild).
set lock_timeout = '5s';
set statement_timeout = '60s';

alter index entity_chunks_embedding_hnsw_idx set (ef_construction = 128);
comment on index entity_chunks_embedding_hnsw_idx is 'Cosine HNSW over chunk embeddings; m 16, ef_construction 128 since migration 24 (recall at 1 M chunks, decision 68).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
