"""Search quality on the Jira emulator's generated corpus: recall@10 and MRR for vector, full-text, hybrid.

Corpus: ``--issues`` issues of the deterministic Jira emulator (seed 1), synced through the real
pipeline (``execute_run`` with the local MiniLM embedder in the vector stage) into a throw-away
embedded PostgreSQL. The generator builds every issue around three topic words (w0, w1, w2) drawn
from 24: summary "W0 w1 fails on w2", description "When w1 runs against w2 the w0 step times out."

Evaluation set: for ``--queries`` issues drawn with a fixed seed, a paraphrase of its topic that
shares no sentence with it (three templates, in turn). Relevant = every issue whose summary has the
same three topic words, in any order (usually 1-3 issues). Per query the chunk results are folded to
entities (first chunk wins) and cut at 10: recall@10 = relevant found / relevant, MRR = 1 / rank of
the first relevant entity (0 if none in the top 10). The searching principal holds every group of
every project, so rights do not shape the numbers (Jira issues are final content whatever their
workflow state, seed 000, so default search sees them all).

    python bench/search_eval.py [--issues 600] [--queries 150]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from app.db.connect import connect
from app.embedding.local import LocalEmbedder
from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from app.vector.search import Principal, SearchFilters, SearchResult, search, text_search
from app.vector.stage import VectorStage
from bench._db import bench_database
from bench._emulator import jira_emulator
from connectors.emulators.jira import JiraEmulator

TEMPLATES = (
    "{w0} problem: {w1} errors out with {w2}",
    "{w2} makes {w1} break during {w0}",
    "{w1} crashes on {w2}, affects {w0}",
)
TOKEN = "bench-token"


def topic(summary: str) -> tuple[str, str, str]:
    first, second, _, _, third = summary.split()
    return first.lower(), second, third


def entity_ranking(results: list[SearchResult], ids: dict[int, str]) -> list[str]:
    out: list[str] = []
    for r in results:
        key = ids[r.entity_id]
        if key not in out:
            out.append(key)
    return out[:10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issues", type=int, default=600)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    truth_source = JiraEmulator(args.issues, seed=args.seed, token=TOKEN)
    topics = {str(10000 + i): frozenset(topic(truth_source.record(i)["summary"])) for i in range(args.issues)}
    groups = tuple(p for principals in truth_source.browse.values() for p in principals if p.startswith("group:"))
    everyone = Principal(None, groups)

    embedder = LocalEmbedder()
    with (
        bench_database() as url,
        jira_emulator(args.issues, seed=args.seed, token=TOKEN) as base_url,
        connect(url, autocommit=True) as conn,  # execute_run declares its own transactions
    ):
        keyring = Keyring(current=os.urandom(32))
        source_id = create_source(
            conn, keyring, NewSource(name="jira", connector_type="jira", base_url=base_url, credential=TOKEN)
        )
        run_id = start_run(conn, source_id, mode="full", trigger="manual")
        stage = VectorStage(embedder)
        started = time.perf_counter()
        outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring, chunks=stage)
        sync_s = time.perf_counter() - started
        ids: dict[int, str] = {
            cast(int, i): str(e) for i, e in conn.execute("select id, source_entity_id from entities").fetchall()
        }
        print(f"corpus      {args.issues} issues -> {len(ids)} entities, {stage.stats.embedded} chunks embedded "
              f"({outcome.state}, {sync_s:.0f}s sync incl. embedding)")

        rng = random.Random(args.seed)
        picks = rng.sample(sorted(topics), args.queries)
        evaluation = []
        for n, issue in enumerate(picks):
            w0, w1, w2 = topic(truth_source.record(int(issue) - 10000)["summary"])
            query = TEMPLATES[n % len(TEMPLATES)].format(w0=w0, w1=w1, w2=w2)
            relevant = {e for e, t in topics.items() if t == topics[issue] and e in ids.values()}
            evaluation.append((query, relevant))
        sizes = [len(r) for _, r in evaluation]
        print(f"queries     {len(evaluation)}, relevant per query mean {statistics.mean(sizes):.2f} "
              f"(max {max(sizes)}); e.g. {evaluation[0][0]!r}")

        modes: dict[str, Callable[[str], list[SearchResult]]] = {
            "vector": lambda q: search(conn, embedder, query=q, principal=everyone, k=30),
            "full-text": lambda q: text_search(conn, q, everyone.tokens(), 30, SearchFilters()),
            "hybrid": lambda q: search(conn, embedder, query=q, principal=everyone, k=30, hybrid=True),
        }
        for name, run in modes.items():
            recalls, rrs = [], []
            started = time.perf_counter()
            for query, relevant in evaluation:
                ranking = entity_ranking(run(query), ids)
                recalls.append(len(relevant & set(ranking)) / len(relevant))
                rank = next((i for i, e in enumerate(ranking, start=1) if e in relevant), None)
                rrs.append(1 / rank if rank else 0.0)
            per_query = (time.perf_counter() - started) / len(evaluation) * 1000
            print(f"{name:10}  recall@10 {statistics.mean(recalls):.3f}   MRR {statistics.mean(rrs):.3f}   "
                  f"({per_query:.1f} ms/query incl. query embedding)")



if __name__ == "__main__":
    main()
