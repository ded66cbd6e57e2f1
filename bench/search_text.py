"""The full-text half of hybrid search over text with real word frequencies (issue 15 §3, decisions 113-116).

bench/search_million.py gives each chunk 12 words of its cluster's 20, so a query matches few chunks and
each is short: it cannot show what ranking costs when query words are common and chunks are a few
hundred words long, as real ones are. This bench can.

A throw-away embedded PostgreSQL (temp data dir) migrated with the project's migrations; ``--chunks``
chunks (10 per entity) of ``--words`` words each, drawn from a ``--vocabulary``-word lexicon with Zipf
frequencies (exponent ``--zipf``; English text is close to 1), pronounceable pseudo-words so that the
English stemmer of the ``russian`` configuration does real work. Loaded by COPY with the full-text indexes
(the lexemes', the repeats') dropped and built once after; the chunks' lexemes and repeats come from the
product's triggers.

Each query is ``--query-words`` (3) words from one band of the lexicon's frequency ranks (most frequent
first; the first band, 5-50, holds words most chunks hold several times); a last set ("mixed") takes one
word of rank 50-200 and the others from the rarest band, the steps' worst case (few chunks hold every word,
so the last step ranks every chunk holding the common one).
Per set, alternated query by query in one transaction each, after ConfigureVectorScan as ``search()`` runs
it:

- **product**: ``app.vector.search.text_search``: the chunks holding the most query terms first, asked for
  step by step (all terms, all but one, ...; decision 114), the chunks repeating a term 55, 21, 8, 3 and 2
  times or more before the last step (decisions 115, 116; the three highest sized first in one statement,
  and skipped when too small), over ``entity_chunk_lexemes`` and ``entity_chunk_repeats``;
- **before 117**: the product's own steps, planned without ``entity_chunks_visibility_idx`` (decision 117):
  the bench drops that index in the timed query's transaction (untimed) and rolls it back, so each matching
  chunk's visibility is read from the heap again. Every other contender reads that index;
- **before 116**: the same steps with decision 115's repeats' steps instead (three times or more, then
  twice or more, by a weight restriction) over ``bench_repeats_115``, a table the bench fills after the
  load with BEFORE_116_FUNCTION (a labelled copy of decision 115's function, NOT a product one), through
  SearchEntitiesText's own text with that table's name put in;
- **before 115**: the product's steps without the repeats' steps (``term_steps`` less the steps with
  ``repeats``), as decision 114 left them;
- **before 114**: BEFORE_114 below, NOT a product query: a labelled copy of SearchEntitiesText as decision
  113 left it, which ranked every chunk holding any term by cover density alone;
- **parsed** (unless ``--skip-parsed``; it takes minutes a query at a million chunks): BEFORE_113, a labelled
  copy of the query before decision 113, which matched and ranked ``to_tsvector('russian', body)`` through
  an expression index (the bench builds it for this baseline) and carried every match's text through the
  ranking.

Before a query is timed, the reference below reads every match (untimed), so no contender pays for bringing
the matches into shared buffers (at a million chunks they do not all fit, and whoever went first paid ~20
ms more), and the contenders take turns at going first.

The bench stops when the product's answer differs from SearchEntitiesText asked once for every chunk holding
any term or from before 117's, before 116's or before 115's (neither the index nor the steps may change the
answer), or when before 114 and parsed disagree (decision 113 changed no answer). Decision 114 changed the
order on purpose; the bench prints how many of the product's first ten the first ten before it hold. Per
set: the median number of matching chunks, the median number of terms the k-th result holds (which step
answered), each query's p50 / p95, and the ratios.

The write side: ``--write-chunks`` chunks are COPYed into an empty table under each design in turn,
twice, before the main load: the product's (triggers ``_310_lexemes_*`` + GIN over ``entity_chunk_lexemes``
and over ``entity_chunk_repeats``), the same without ``entity_chunks_visibility_idx`` (before 117), and the
old one (the insert trigger disabled, GIN over the expression on ``entity_chunks``). It prints microseconds
a chunk and the ratios.

    python bench/search_text.py [--chunks 100000] [--words 150] [--queries 10] [--query-words 3]
                                [--write-chunks 20000] [--skip-parsed]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import numpy.typing as npt
import psycopg

from app.db.connect import connect
from app.queries import search as sq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from app.vector.search import (
    EF_SEARCH,
    HYBRID_CANDIDATES,
    SearchFilters,
    TextStep,
    ranked_by_steps,
    term_steps,
    text_search,
)
from bench._db import bench_database

CHUNKS_PER_ENTITY = 10
# Rank 5-50: common words that are not stop words (the commonest, 0-4, stand in for "the", "of", ...).
BANDS = ((5, 50), (50, 200), (200, 1_000), (1_000, 5_000), (5_000, 20_000))
COMMON = (50, 200)  # the common word of the "mixed" set
SYLLABLES = ("ka", "lo", "mi", "ter", "son", "ved", "ra", "pun", "gle", "dor", "bix", "an", "el", "ous", "ing", "ment")
PRODUCT_INDEX = "entity_chunk_lexemes_lexemes_idx"
REPEATS_INDEX = "entity_chunk_repeats_lexemes_idx"
VISIBILITY_INDEX = "entity_chunks_visibility_idx"  # decision 117; "before 117" runs without it
TRIGGER = "_310_lexemes_insert"
PARSED_INDEX = "create index bench_body_parsed_idx on entity_chunks using gin (to_tsvector('russian'::regconfig, body))"

# Labelled copy (not the product query) of SearchEntitiesText before decision 113, its filters left out
# (all null: the planner drops those clauses for a custom plan either way).
BEFORE_113 = """
with best as materialized (
    select distinct on (c.entity_id) c.id as chunk_id, c.entity_id, c.body,
           ts_rank_cd(to_tsvector('russian'::regconfig, c.body),
                      replace(plainto_tsquery('russian'::regconfig, %(q)s)::text, '&', '|')::tsquery)::float8 as rank
    from entity_chunks c
    where to_tsvector('russian'::regconfig, c.body)
              @@ replace(plainto_tsquery('russian'::regconfig, %(q)s)::text, '&', '|')::tsquery
      and c.acl_principals && %(p)s::text[]
      and not c.entity_deleted
      and (c.entity_status <> 'draft'
           or coalesce((select value = 'true'::jsonb from platform_settings
                        where key = 'search_include_drafts'), false))
    order by c.entity_id, 4 desc, c.id
),
top as materialized (
    select * from best order by rank desc, entity_id limit %(k)s
)
select t.entity_id
from top t
join entities e on e.id = t.entity_id
join sources s on s.id = e.source_id
order by t.rank desc, t.entity_id
"""

# Labelled copy (not the product's function) of harvester_repeated_lexemes as decision 115 made it: each repeated
# lexeme at position 1, weighted by its count (D 2, C 3, B 4-7, A 8+), so 'word':ABC asks for three times or
# more, a weight restriction the GIN index leaves to the table. The bench fills BENCH_115_TABLE with it.
BENCH_115_TABLE = "bench_repeats_115"
BEFORE_116_FUNCTION = r"""
create function bench_repeated_lexemes_115(lexemes tsvector) returns tsvector
    language sql immutable strict parallel safe
as $$
    select coalesce(string_agg(
               '''' || replace(replace(u.lexeme, '\', '\\'), '''', '''''') || ''':1'
               || case when u.n >= 8 then 'A' when u.n >= 4 then 'B' when u.n = 3 then 'C' else 'D' end,
               ' '), '')::tsvector
    from (select r.lexeme, cardinality(r.positions) as n from unnest(lexemes) as r) as u
    where u.n > 1;
$$
"""
BEFORE_116_TIERS = {3: ":ABC", 2: ""}  # decision 115's repeats' steps: three times or more, then twice or more


# Labelled copy (not the product query) of SearchEntitiesText as decision 113 left it, before decision 114:
# every chunk holding any term, ranked by cover density alone. Filters left out, as above.
BEFORE_114 = """
with best as materialized (
    select distinct on (c.entity_id) c.id as chunk_id, c.entity_id,
           ts_rank_cd(l.lexemes,
                      replace(plainto_tsquery('russian'::regconfig, %(q)s)::text, '&', '|')::tsquery)::float8 as rank
    from entity_chunk_lexemes l
    join entity_chunks c on c.id = l.chunk_id
    where l.lexemes @@ replace(plainto_tsquery('russian'::regconfig, %(q)s)::text, '&', '|')::tsquery
      and c.acl_principals && %(p)s::text[]
      and not c.entity_deleted
      and (c.entity_status <> 'draft'
           or coalesce((select value = 'true'::jsonb from platform_settings
                        where key = 'search_include_drafts'), false))
    order by c.entity_id, rank desc, c.id
),
top as materialized (
    select * from best order by rank desc, entity_id limit %(k)s
)
select t.entity_id
from top t
join entity_chunks c on c.id = t.chunk_id
join entities e on e.id = t.entity_id
join sources s on s.id = e.source_id
order by t.rank desc, t.entity_id
"""


def say(line: str) -> None:
    print(line, flush=True)


def lexicon(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct pseudo-words of two to four syllables; index 0 is the most frequent word."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def zipf_bodies(rng: np.random.Generator, words: list[str], n: int, length: int, exponent: float) -> Iterator[str]:
    """``n`` chunk texts of ``length`` words, rank r drawn ∝ r^-exponent, drawn in blocks (bounded memory)."""
    weights = 1.0 / np.arange(1, len(words) + 1) ** exponent
    weights /= weights.sum()
    lexicon_array = np.asarray(words, dtype=object)
    for start in range(0, n, 10_000):
        picks: npt.NDArray[np.int64] = rng.choice(len(words), size=(min(10_000, n - start), length), p=weights)
        yield from (" ".join(row) for row in lexicon_array[picks])


def ms_at(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (seconds), in milliseconds."""
    return float(np.percentile(np.asarray(values), q)) * 1000


def copy_chunks(conn: psycopg.Connection[Any], entity_ids: Sequence[int], bodies: Iterable[str]) -> float:
    """COPY a chunk for each of ``bodies`` (10 per entity); seconds."""
    started = time.perf_counter()
    with (
        conn.cursor() as cur,
        cur.copy("copy entity_chunks (entity_id, ordinal, body, content_hash) from stdin") as copy,
    ):
        for n, body in enumerate(bodies):
            copy.write_row((entity_ids[n // CHUNKS_PER_ENTITY], n % CHUNKS_PER_ENTITY, body, f"c{n}"))
    conn.commit()
    return time.perf_counter() - started


def copy_entities(conn: psycopg.Connection[Any], source_id: int, n: int, first: int = 0) -> list[int]:
    with (
        conn.cursor() as cur,
        cur.copy(
            "copy entities (source_id, source_type, source_entity_id, status, title, body, acl_principals,"
            " content_hash) from stdin"
        ) as copy,
    ):
        for e in range(first, first + n):
            copy.write_row((source_id, "ticket", str(e), "final", f"Entity {e}", "", ["group:all"], f"h{e}"))
    rows = conn.execute(
        "select id from entities where source_id = %s and source_entity_id::int >= %s order by source_entity_id::int",
        (source_id, first),
    ).fetchall()
    conn.commit()
    return [int(r[0]) for r in rows]


def write_side(
    conn: psycopg.Connection[Any], source_id: int, words: list[str], args: argparse.Namespace, product_index: str
) -> None:
    """COPY into an empty entity_chunks under each design, alternated twice: µs a chunk, and the ratios."""
    row = conn.execute("select pg_get_indexdef(%s::regclass)", (VISIBILITY_INDEX,)).fetchone()
    assert row is not None
    visibility_index = str(row[0])
    entity_ids = copy_entities(conn, source_id, args.write_chunks // CHUNKS_PER_ENTITY + 1, first=10**8)
    # Drawn once, before any timing: the clock measures the writes, not the text's generation.
    texts = list(zipf_bodies(np.random.default_rng(args.seed + 1), words, args.write_chunks, args.words, args.zipf))
    per_chunk: dict[str, list[float]] = {"stored": [], "before 117": [], "parsed": []}
    for _ in range(2):
        for design in per_chunk:
            if design != "parsed":
                conn.execute(product_index)
                if design == "before 117":
                    conn.execute(f"drop index {VISIBILITY_INDEX}")
            else:
                conn.execute(f"alter table entity_chunks disable trigger {TRIGGER}")
                conn.execute(PARSED_INDEX)
            conn.commit()
            seconds = copy_chunks(conn, entity_ids, texts)
            per_chunk[design].append(seconds / args.write_chunks * 1e6)
            conn.execute("delete from entity_chunks")
            conn.execute(f"drop index {'bench_body_parsed_idx' if design == 'parsed' else PRODUCT_INDEX}")
            if design == "before 117":
                conn.execute(visibility_index)
            conn.execute(f"alter table entity_chunks enable trigger {TRIGGER}")
            conn.commit()
    conn.execute("delete from entities where source_entity_id::int >= %s", (10**8,))
    conn.commit()
    stored, before_117, parsed = (min(per_chunk[design]) for design in ("stored", "before 117", "parsed"))
    say(
        f"write       {args.write_chunks} chunks by COPY into an empty table, best of two: stored lexemes "
        f"{stored:.0f} µs a chunk (trigger + GIN on the lexemes' and the repeats' tables), without the visibility "
        f"index (before 117) {before_117:.0f} µs, parsed {parsed:.0f} µs (GIN on the expression); stored ÷ "
        f"before 117 {stored / before_117:.3f}, stored ÷ parsed {stored / parsed:.2f}"
    )


def every_match_ranked(conn: psycopg.Connection[Any], query: str) -> list[sq.SearchEntitiesTextRow]:
    """SearchEntitiesText asked once for every chunk holding any term: the answer the product's steps must give."""
    terms = sq.text_query_terms(conn, query_text=query)
    return sq.search_entities_text(
        conn, terms=terms, match_query=" | ".join(terms), repeat_query=None, principals=["group:all"],
        statuses=None, source_ids=None, source_types=None, updated_from=None, updated_to=None, k=HYBRID_CANDIDATES,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=150, help="words a chunk (real chunks: a few hundred)")
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--zipf", type=float, default=1.07, help="Zipf exponent of word frequencies")
    parser.add_argument("--queries", type=int, default=10, help="timed queries per set (frequency band, mixed)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--query-words", type=int, default=3, help="words a query")
    parser.add_argument("--skip-parsed", action="store_true", help="leave out the baseline before decision 113")
    parser.add_argument("--write-chunks", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--shared-buffers", default="2GB")
    args = parser.parse_args()
    for name in ("chunks", "words", "vocabulary", "queries", "query_words", "write_chunks"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.vocabulary <= BANDS[-1][1]:
        parser.error(f"--vocabulary must be above {BANDS[-1][1]} (the last frequency band)")
    rng = np.random.default_rng(args.seed)
    say(f"load average at start {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} / {os.getloadavg()[2]:.2f}")

    try:
        with bench_database(shared_buffers=args.shared_buffers) as url, connect(url) as conn:
            source_id = create_source(
                conn,
                Keyring(current=os.urandom(32)),
                NewSource(name="bench", connector_type="jira", base_url="http://127.0.0.1:9", credential="x"),
            )
            conn.commit()
            words = lexicon(rng, args.vocabulary)
            row = conn.execute("select pg_get_indexdef(%s::regclass)", (PRODUCT_INDEX,)).fetchone()
            assert row is not None
            product_index = str(row[0])
            conn.execute(f"drop index {PRODUCT_INDEX}")
            conn.commit()
            write_side(conn, source_id, words, args, product_index)
            # Built after the load as well: a GIN index written row by row keeps up to gin_pending_list_limit
            # (4 MB) of new entries unsorted, which every query reads until (auto)vacuum or autoanalyze
            # merges them; a manual ANALYZE does not.
            row = conn.execute("select pg_get_indexdef(%s::regclass)", (REPEATS_INDEX,)).fetchone()
            assert row is not None
            repeats_index = str(row[0])
            conn.execute(f"drop index {REPEATS_INDEX}")
            conn.commit()

            entity_ids = copy_entities(conn, source_id, (args.chunks + CHUNKS_PER_ENTITY - 1) // CHUNKS_PER_ENTITY)
            bodies = zipf_bodies(rng, words, args.chunks, args.words, args.zipf)
            copy_s = copy_chunks(conn, entity_ids, bodies)
            say(
                f"data        {args.chunks} chunks of {args.words} words, {args.vocabulary}-word lexicon, Zipf "
                f"{args.zipf}; COPY {copy_s:.1f} s (the statement's trigger stores the chunks' lexemes)"
            )
            builds = [("stored", product_index), ("repeats", repeats_index)]
            builds += [] if args.skip_parsed else [("parsed", PARSED_INDEX)]
            for name, ddl in builds:
                started = time.perf_counter()
                conn.execute(ddl)
                conn.commit()
                say(f"build       gin {name} {time.perf_counter() - started:.1f} s")
            # Decision 115's repeats, for the "before 116" contender: derived from the same stored lexemes.
            started = time.perf_counter()
            conn.execute(BEFORE_116_FUNCTION)
            conn.execute(
                f"create table {BENCH_115_TABLE} as"
                " select chunk_id, bench_repeated_lexemes_115(lexemes) as lexemes from entity_chunk_lexemes"
            )
            conn.execute(f"alter table {BENCH_115_TABLE} add primary key (chunk_id)")
            conn.execute(f"create index on {BENCH_115_TABLE} using gin (lexemes)")
            conn.commit()
            say(f"build       decision 115's repeats (table, key, gin) {time.perf_counter() - started:.1f} s")
            # As autovacuum would have, before the queries rather than during them (a million-row COPY crosses
            # its insert threshold): the visibility maps, and the planner's statistics for the three tables,
            # the lexemes' frequencies too.
            conn.autocommit = True
            conn.execute(
                f"vacuum (analyze) entity_chunks, entity_chunk_lexemes, entity_chunk_repeats, {BENCH_115_TABLE}"
            )
            conn.autocommit = False
            sizes = conn.execute(
                "select pg_relation_size('entity_chunks'), pg_total_relation_size('entity_chunks'),"
                " pg_relation_size('entity_chunk_lexemes'), pg_total_relation_size('entity_chunk_lexemes'),"
                " pg_relation_size(%s::regclass), coalesce(pg_relation_size(to_regclass('bench_body_parsed_idx')), 0),"
                " pg_total_relation_size('entity_chunk_repeats'), pg_total_relation_size(%s::regclass),"
                " pg_relation_size(%s::regclass)",
                (PRODUCT_INDEX, BENCH_115_TABLE, VISIBILITY_INDEX),
            ).fetchone()
            assert sizes is not None
            mib = [cast(int, v) / 2**20 for v in sizes]
            say(
                f"sizes       entity_chunks heap {mib[0]:.0f} MiB, total {mib[1]:.0f} MiB (the parsed GIN included); "
                f"entity_chunk_lexemes heap {mib[2]:.0f} MiB, total {mib[3]:.0f} MiB; gin stored {mib[4]:.0f} MiB, "
                f"gin parsed {mib[5]:.0f} MiB; entity_chunk_repeats total {mib[6]:.0f} MiB (decision 115's: "
                f"{mib[7]:.0f} MiB); visibility index {mib[8]:.0f} MiB"
            )
            conn.commit()

            def timed_transaction(run: Callable[[], list[int]], name: str) -> tuple[float, list[int]]:
                with conn.transaction() as tx:
                    if name == "before 117":  # untimed; the transaction is rolled back, the index comes back
                        conn.execute(f"drop index {VISIBILITY_INDEX}")
                    sq.configure_vector_scan(conn, ef_search=EF_SEARCH, max_scan_tuples=20_000)
                    started = time.perf_counter()
                    found = run()
                    seconds = time.perf_counter() - started
                    if name == "before 117":
                        raise psycopg.Rollback(tx)
                return seconds, found

            def product(query: str) -> list[int]:
                found = text_search(conn, query, ["group:all"], HYBRID_CANDIDATES, SearchFilters())
                return [r.entity_id for r in found]

            def step_runner(
                terms: list[str], statement: str = sq.SEARCH_ENTITIES_TEXT
            ) -> Callable[[TextStep], list[sq.SearchEntitiesTextRow]]:
                """SearchEntitiesText's text (or a labelled variant of it) asked for one step, as text_search asks."""

                def run(step: TextStep) -> list[sq.SearchEntitiesTextRow]:
                    params = {
                        "terms": terms, "match_query": None if step.repeats else step.query,
                        "repeat_query": step.query if step.repeats else None, "principals": ["group:all"],
                        "statuses": None, "source_ids": None, "source_types": None, "updated_from": None,
                        "updated_to": None, "k": HYBRID_CANDIDATES,
                    }  # fmt: skip
                    return [sq.SearchEntitiesTextRow(*cast(Any, r)) for r in conn.execute(statement, params)]

                return run

            def before_115(query: str) -> list[int]:
                """The product's steps without the repeats' steps."""
                terms = sq.text_query_terms(conn, query_text=query)
                steps = [step for step in term_steps(terms) if not step.repeats]
                return [r.entity_id for r in ranked_by_steps(steps, HYBRID_CANDIDATES, step_runner(terms))]

            before_116_statement = sq.SEARCH_ENTITIES_TEXT.replace("entity_chunk_repeats", BENCH_115_TABLE)

            def before_116(query: str) -> list[int]:
                """The product's steps, with decision 115's repeats' steps over its weighted table, unsized."""
                terms = sq.text_query_terms(conn, query_text=query)
                steps = list(
                    term_steps(terms, tiers=list(BEFORE_116_TIERS), repeat=lambda t, n: t + BEFORE_116_TIERS[n])
                )
                run = step_runner(terms, before_116_statement)
                return [r.entity_id for r in ranked_by_steps(steps, HYBRID_CANDIDATES, run)]

            def labelled(statement: str) -> Callable[[str], list[int]]:
                def run(query: str) -> list[int]:
                    rows = conn.execute(statement, {"q": query, "p": ["group:all"], "k": HYBRID_CANDIDATES}).fetchall()
                    return [cast(int, r[0]) for r in rows]

                return run

            contenders: dict[str, Callable[[str], list[int]]] = {
                "product": product,
                "before 117": product,
                "before 116": before_116,
                "before 115": before_115,
                "before 114": labelled(BEFORE_114),
            }
            if not args.skip_parsed:
                contenders["parsed"] = labelled(BEFORE_113)

            per_set = args.warmup + args.queries
            query_sets = [
                (
                    f"band {low:>5}-{high:<6}",
                    [" ".join(words[w] for w in rng.integers(low, high, args.query_words)) for _ in range(per_set)],
                )
                for low, high in BANDS
            ]
            if args.query_words > 1:
                # The steps' worst case: the chunks holding every word are few, so the last step ranks every
                # chunk holding the common word.
                common, rare = COMMON, BANDS[-1]

                def mixed() -> str:
                    drawn = [int(rng.integers(*common)), *rng.integers(*rare, args.query_words - 1)]
                    return " ".join(words[w] for w in drawn)

                label = f"mixed one word of rank {common[0]}-{common[1]}, the others {rare[0]}-{rare[1]}:"
                query_sets.append((label, [mixed() for _ in range(per_set)]))
            for label, queries in query_sets:
                for q in queries[: args.warmup]:
                    for name, fn in contenders.items():
                        timed_transaction(partial(fn, q), name)
                times: dict[str, list[float]] = {name: [] for name in contenders}
                matches: list[int] = []
                held: list[int] = []
                shared: list[int] = []
                for n, q in enumerate(queries[args.warmup :]):
                    # First, untimed: the reference reads every match's lexemes and chunk row, so no contender
                    # pays for bringing them into shared buffers (at 1 M chunks they do not all fit).
                    every = every_match_ranked(conn, q)
                    conn.commit()
                    results = {}
                    names = list(contenders)
                    for name in names[n % len(names) :] + names[: n % len(names)]:  # each first in turn
                        seconds, results[name] = timed_transaction(partial(contenders[name], q), name)
                        times[name].append(seconds)
                    if results["before 117"] != results["product"]:
                        raise SystemExit(f"the visibility index changed the answer on {q!r}")
                    if results["before 116"] != results["product"]:
                        raise SystemExit(
                            f"the marked repeats changed the answer on {q!r}: {results['product'][:5]} against "
                            f"{results['before 116'][:5]} with decision 115's"
                        )
                    if results["before 115"] != results["product"]:
                        raise SystemExit(
                            f"the repeats' step changed the answer on {q!r}: {results['product'][:5]} against "
                            f"{results['before 115'][:5]} without it"
                        )
                    if results["product"] != [r.entity_id for r in every]:
                        raise SystemExit(
                            f"the steps changed the answer on {q!r}: {results['product'][:5]} against "
                            f"{[r.entity_id for r in every][:5]} ranking every match"
                        )
                    if "parsed" in results and results["before 114"] != results["parsed"]:
                        raise SystemExit(
                            f"before 114 and parsed disagree on {q!r}: {results['before 114'][:5]} against "
                            f"{results['parsed'][:5]}"
                        )
                    held.append(every[-1].matched if len(every) == HYBRID_CANDIDATES else 1)
                    shared.append(len(set(results["product"][:10]) & set(results["before 114"][:10])))
                    row = conn.execute(
                        "select count(*) from entity_chunk_lexemes where lexemes @@"
                        " replace(plainto_tsquery('russian'::regconfig, %s)::text, '&', '|')::tsquery",
                        (q,),
                    ).fetchone()
                    assert row is not None
                    matches.append(cast(int, row[0]))
                    conn.commit()
                median_matches = statistics.median(matches)
                p95 = {name: ms_at(values, 95) for name, values in times.items()}
                timings = ", ".join(
                    f"{name} p50 {ms_at(values, 50):.1f} p95 {p95[name]:.1f} ms" for name, values in times.items()
                )
                ratios = (
                    f"product ÷ before 117 p95 {p95['product'] / p95['before 117']:.3f}, "
                    f"product ÷ before 116 p95 {p95['product'] / p95['before 116']:.3f}, "
                    f"product ÷ before 115 p95 {p95['product'] / p95['before 115']:.3f}, "
                    f"product ÷ before 114 p95 {p95['product'] / p95['before 114']:.3f}"
                )
                if "parsed" in p95:
                    ratios += f", before 114 ÷ parsed p95 {p95['before 114'] / p95['parsed']:.2f}"
                say(
                    f"{label} matching chunks median {median_matches:,.0f} "
                    f"({median_matches / args.chunks:.1%}); terms held by the {HYBRID_CANDIDATES}th median "
                    f"{statistics.median(held):g} of {args.query_words}; {timings}; {ratios}; first ten shared "
                    f"with before 114 median {statistics.median(shared):g}"
                )
    finally:
        say(f"load average at end {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} / {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
