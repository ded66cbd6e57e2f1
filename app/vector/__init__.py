"""Vector projection (issue 5): chunk + embed what changed, re-embed on a model change, search.

- :mod:`app.vector.stage`   the pipeline's ChunkStage: chunk, compare hashes, embed only what changed;
- :mod:`app.vector.reembed` model-change detection and the batched background re-embed;
- :mod:`app.vector.search`  permission-filtered vector search (one SQL query) and hybrid search;
- :mod:`app.vector.config`  the process's embedder and stage from the environment.

The worker's ``reembed`` jobs are in :mod:`app.jobs.vectors`.
"""

from app.vector.search import Principal, SearchFilters, SearchResult, search
from app.vector.stage import VectorStage

__all__ = ["Principal", "SearchFilters", "SearchResult", "VectorStage", "search"]
