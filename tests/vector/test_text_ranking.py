"""The full-text side's order and its step-by-step search (decisions 114, 115).

A chunk ranks first by how many of the query's distinct terms it holds, then by cover density. text_search
asks for the chunks holding all the terms, then all but one, ... down to two, then those and the chunks
repeating a term, and stops at the first step that yields k entities; these tests hold it to the answer of
ranking every chunk that holds any term.
"""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from app.queries import search as sq
from app.secrets import Keyring
from app.vector.search import (
    MAX_TERM_GROUPS,
    PROBED_TIERS,
    REPEAT_TIERS,
    Principal,
    SearchFilters,
    TextStep,
    repeated,
    term_steps,
    text_search,
)
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ALL = Principal(None, ("group:jira:all",))
# English words the `russian` configuration's English stemmer leaves recognisable, none a stop word.
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")


def _keys(results: list[Any]) -> list[str | None]:
    return [r.natural_key for r in results]


def test_a_chunk_holding_every_query_word_outranks_one_repeating_a_single_word(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    source_id = plain_source(conn, keyring)
    rows = [
        entity(1, "jira " * 30 + "board", ["group:jira:all"], title=""),
        entity(2, "The login error shows up in jira after the upgrade.", ["group:jira:all"], title=""),
        entity(3, "A login page.", ["group:jira:all"], title=""),
    ]
    load_entities(conn, source_id, rows, VectorStage(HashEmbedder()))
    found = text_search(conn, "jira login error", ALL.tokens(), 10, SearchFilters())
    # Cover density alone (every chunk holding any word, ranked by ts_rank_cd) put IT-1 first: thirty covers.
    assert _keys(found) == ["IT-2", "IT-1", "IT-3"]
    assert found[1].text_rank is not None and found[0].text_rank is not None
    assert found[1].text_rank > found[0].text_rank  # the order is by terms held first, not by rank


def _corpus(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    """400 entities of 3-400 words (long ones cut into several chunks), a quarter only a secret group sees."""
    rng = random.Random(114)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    rows = []
    for n in range(1, 401):
        length = rng.choice((3, 5, 8, 12, 20, 40, 400))
        text = " ".join(rng.choices(WORDS, weights, k=length))
        principals = ["group:jira:secret"] if n % 4 == 0 else ["group:jira:all"]
        rows.append(entity(n, text, principals, title=""))
    load_entities(conn, plain_source(conn, keyring), rows, VectorStage(HashEmbedder()))


def _every_match_ranked(conn: psycopg.Connection[Any], query: str, k: int) -> list[int]:
    """The same statement asked once for every chunk holding any term: the answer the steps must give."""
    terms = sq.text_query_terms(conn, query_text=query)
    rows = sq.search_entities_text(
        conn,
        terms=terms,
        match_query=" | ".join(terms),
        repeat_query=None,
        principals=ALL.tokens(),
        statuses=None,
        source_ids=None,
        source_types=None,
        updated_from=None,
        updated_to=None,
        k=k,
    )
    return [r.entity_id for r in rows]


@pytest.mark.parametrize("words", [1, 2, 3, 5, 8])
def test_the_steps_return_exactly_what_ranking_every_match_returns(
    conn: psycopg.Connection[Any], keyring: Keyring, words: int
) -> None:
    _corpus(conn, keyring)
    rng = random.Random(words)
    stepped = 0
    for _ in range(12):
        query = " ".join(rng.sample(WORDS, words))
        for k in (1, 7, 50, 400):
            found = text_search(conn, query, ALL.tokens(), k, SearchFilters())
            assert [r.entity_id for r in found] == _every_match_ranked(conn, query, k), (query, k)
            stepped += len(found) == k
    assert stepped  # some answers came from a step before the last


def test_entities_the_principal_cannot_see_do_not_end_the_steps(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """Five secret entities hold every word; the visible ones hold two of three: they must still come back."""
    source_id = plain_source(conn, keyring)
    rows = [entity(n, "alpha bravo charlie", ["group:jira:secret"], title="") for n in range(1, 6)]
    rows += [entity(n, "alpha bravo", ["group:jira:all"], title="") for n in range(6, 9)]
    rows += [entity(9, "charlie", ["group:jira:all"], title="")]
    load_entities(conn, source_id, rows, VectorStage(HashEmbedder()))
    found = text_search(conn, "alpha bravo charlie", ALL.tokens(), 3, SearchFilters())
    assert _keys(found) == ["IT-6", "IT-7", "IT-8"]
    found = text_search(conn, "alpha bravo charlie", ALL.tokens(), 10, SearchFilters())
    assert _keys(found) == ["IT-6", "IT-7", "IT-8", "IT-9"]


def test_term_steps_fall_from_every_term_to_any_within_the_group_bound() -> None:
    assert list(term_steps([])) == []
    assert list(term_steps(["'a'"])) == [
        # 55 times or more, then 21, 8, 3, 2 (entity_chunk_repeats marks each repeated lexeme by its count)
        TextStep("'a 55'", repeats=True),
        TextStep("'a 21' | 'a 55'", repeats=True),
        TextStep("'a 8' | 'a 21' | 'a 55'", repeats=True),
        TextStep("'a 3' | 'a 8' | 'a 21' | 'a 55'", repeats=True),
        TextStep("'a' | 'a 3' | 'a 8' | 'a 21' | 'a 55'", repeats=True),
        TextStep("'a'"),
    ]
    three = list(term_steps(["'a'", "'b'", "'c'"]))
    assert three[:3] == [
        TextStep("('a' & 'b' & 'c')"),
        TextStep("('a' & 'b') | ('a' & 'c') | ('b' & 'c')"),
        TextStep("'a 55' | 'b 55' | 'c 55'", repeats=True),  # added to the two-term step, never on their own
    ]
    assert [step.repeats for step in three] == [False, False, True, True, True, True, True, False]
    assert three[-2].query.count("|") == 3 * 5 - 1 and three[-1] == TextStep("'a' | 'b' | 'c'")
    eight = [f"'t{i}'" for i in range(8)]
    steps = list(term_steps(eight))
    # All eight (1 group), seven of eight (8 groups); six to two would OR 28-70 groups, and without the
    # two-term step the repeats' step would miss chunks holding two terms once each; then any term.
    assert [step.query.count("(") for step in steps] == [1, 8, 0]
    assert [step.repeats for step in steps] == [False, False, False]
    assert all(step.query.count("(") <= MAX_TERM_GROUPS for step in steps)
    assert steps[-1] == TextStep(" | ".join(eight))
    six = [f"'t{i}'" for i in range(6)]  # C(6, 2) = 15 groups: the repeats' step is tried
    assert [step.repeats for step in term_steps(six)] == [False] * 5 + [True] * 5 + [False]
    # Another form of the repeats (the bench's decision 115 contender): its tiers, in the same place.
    other = list(term_steps(["'a'", "'b'"], tiers=[3, 2], repeat=lambda term, n: term + (":ABC" if n == 3 else "")))
    assert other == [
        TextStep("('a' & 'b')"),
        TextStep("'a':ABC | 'b':ABC", repeats=True),
        TextStep("'a' | 'b'", repeats=True),
        TextStep("'a' | 'b'"),
    ]


def test_a_repeats_tier_is_an_or_of_the_marked_lexeme() -> None:
    assert repeated("'it''s'", 8) == "'it''s 8' | 'it''s 21' | 'it''s 55'"
    assert repeated("'a'", 2) == "'a' | 'a 3' | 'a 8' | 'a 21' | 'a 55'"
    with pytest.raises(ValueError, match="not a quoted tsquery lexeme"):
        repeated("a", 2)


def _repeating_alpha(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    """Visible chunks holding "alpha" once (IT-1-3), three times (IT-7), twice (IT-8, 9), 8, 21 and 55 times
    (IT-10-12); secret ones holding it twice (IT-4-6) and 60 times (IT-13)."""
    source_id = plain_source(conn, keyring)
    rows = [entity(n, "alpha bravo", ["group:jira:all"], title="") for n in range(1, 4)]
    rows += [entity(n, "alpha charlie alpha", ["group:jira:secret"], title="") for n in range(4, 7)]
    rows += [entity(7, "alpha alpha alpha delta", ["group:jira:all"], title="")]
    rows += [entity(n, "echo alpha delta alpha", ["group:jira:all"], title="") for n in range(8, 10)]
    rows += [
        entity(n, "alpha " * times + "golf", ["group:jira:all"], title="") for n, times in ((10, 8), (11, 21), (12, 55))
    ]
    rows += [entity(13, "alpha " * 60, ["group:jira:secret"], title="")]
    load_entities(conn, source_id, rows, VectorStage(HashEmbedder()))


def test_a_single_word_ranks_the_chunks_repeating_it_first_and_stops_there(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """Each repeats' step answers when the chunks holding the word that often hold k entities; the secret ones
    do not count."""
    _repeating_alpha(conn, keyring)
    terms = sq.text_query_terms(conn, query_text="alpha")
    tiers = [step.query for step in term_steps(terms) if step.repeats]

    def reached(tier: str) -> list[str]:
        rows = sq.search_entities_text(
            conn, terms=terms, match_query=None, repeat_query=tier, principals=ALL.tokens(), statuses=None,
            source_ids=None, source_types=None, updated_from=None, updated_to=None, k=10,
        )  # fmt: skip
        return sorted(str(r.natural_key) for r in rows)

    # 55 times or more, then 21, 8, 3 and 2: the visible chunks only.
    assert [reached(tier) for tier in tiers] == [
        ["IT-12"],
        ["IT-11", "IT-12"],
        ["IT-10", "IT-11", "IT-12"],
        ["IT-10", "IT-11", "IT-12", "IT-7"],
        ["IT-10", "IT-11", "IT-12", "IT-7", "IT-8", "IT-9"],
    ]
    assert _keys(text_search(conn, "alpha", ALL.tokens(), 1, SearchFilters())) == ["IT-12"]
    found = text_search(conn, "alpha", ALL.tokens(), 6, SearchFilters())
    assert _keys(found) == ["IT-12", "IT-11", "IT-10", "IT-7", "IT-8", "IT-9"]  # by count, ties by entity
    assert [r.text_rank for r in found] == pytest.approx([5.5, 2.1, 0.8, 0.3, 0.2, 0.2])
    # Asked for more than the repeats reach, the last step adds the chunks holding it once.
    more = text_search(conn, "alpha", ALL.tokens(), 8, SearchFilters())
    assert _keys(more) == ["IT-12", "IT-11", "IT-10", "IT-7", "IT-8", "IT-9", "IT-1", "IT-2"]
    assert [r.entity_id for r in more] == _every_match_ranked(conn, "alpha", 8)


def test_two_words_held_once_each_outrank_one_word_repeated_in_the_repeats_step(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """The repeats' step keeps the chunks holding two terms, first though their rank is lower (0.2 against 0.3):
    a step of repeats alone, or one ordered by rank alone, would return IT-2-IT-4."""
    source_id = plain_source(conn, keyring)
    rows = [entity(1, "alpha bravo", ["group:jira:all"], title="")]
    rows += [entity(n, "alpha golf alpha alpha", ["group:jira:all"], title="") for n in range(2, 5)]
    rows += [entity(n, "alpha", ["group:jira:all"], title="") for n in range(5, 7)]
    load_entities(conn, source_id, rows, VectorStage(HashEmbedder()))
    found = text_search(conn, "alpha bravo", ALL.tokens(), 3, SearchFilters())
    assert _keys(found) == ["IT-1", "IT-2", "IT-3"]
    assert [r.entity_id for r in found] == _every_match_ranked(conn, "alpha bravo", 3)


def test_the_highest_tiers_too_small_for_k_are_skipped_without_a_step(
    conn: psycopg.Connection[Any], keyring: Keyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One statement sizes the three highest tiers (invisible chunks count: it reads the index only); a tier
    with fewer chunks than the entities still lacking is not asked for. The answers stay those of ranking
    every match. A spy around the real statement records the steps."""
    _repeating_alpha(conn, keyring)
    asked: list[str | None] = []
    real = sq.search_entities_text

    def spy(conn: psycopg.Connection[Any], **kwargs: Any) -> list[sq.SearchEntitiesTextRow]:
        asked.append(kwargs["repeat_query"] or kwargs["match_query"])
        return real(conn, **kwargs)

    monkeypatch.setattr(sq, "search_entities_text", spy)
    tier = {at_least: repeated("'alpha'", at_least) for at_least in (55, 21, 8, 3, 2)}
    assert [step.query for step in term_steps(["'alpha'"]) if step.repeats] == list(tier.values())

    found = text_search(conn, "alpha", ALL.tokens(), 1, SearchFilters())
    assert _keys(found) == ["IT-12"] and asked == [tier[55]]  # 55 times or more: IT-12 and the secret IT-13
    asked.clear()
    found = text_search(conn, "alpha", ALL.tokens(), 3, SearchFilters())
    # 55+ holds two chunks for three entities: skipped; 21+ holds three chunks but two visible entities.
    assert _keys(found) == ["IT-12", "IT-11", "IT-10"] and asked == [tier[21], tier[8]]
    asked.clear()
    found = text_search(conn, "bravo", ALL.tokens(), 3, SearchFilters())
    # Nothing repeats "bravo": the three highest tiers are skipped; the lower two are not sized, so asked.
    assert _keys(found) == ["IT-1", "IT-2", "IT-3"]
    assert asked == [repeated("'bravo'", 3), repeated("'bravo'", 2), "'bravo'"]
    monkeypatch.undo()
    for query, k in (("alpha", 1), ("alpha", 3), ("bravo", 3)):
        expected = _every_match_ranked(conn, query, k)
        assert [r.entity_id for r in text_search(conn, query, ALL.tokens(), k, SearchFilters())] == expected


@pytest.mark.parametrize("repeats", [False, True], ids=["lexemes step", "repeats step"])
def test_the_visibility_checks_of_every_match_read_the_visibility_index_alone(
    conn: psycopg.Connection[Any], keyring: Keyring, repeats: bool
) -> None:
    """Each chunk a step matches is checked (entity, source, ACL, status, deletion) from
    entity_chunks_visibility_idx without a heap page (decision 117): a column the statement reads of a matching
    chunk that the index lacks would send every match back to the heap, 1.6 KB rows at a million chunks.
    The tables are tiny, so sequential scans are taken away; the visibility map is set as autovacuum would."""
    _corpus(conn, keyring)
    conn.execute("vacuum (analyze) entity_chunks, entity_chunk_lexemes, entity_chunk_repeats")
    terms = sq.text_query_terms(conn, query_text="alpha bravo")
    params: dict[str, Any] = {
        "terms": terms, "match_query": None if repeats else " | ".join(terms),
        "repeat_query": " | ".join(repeated(t, 2) for t in terms) if repeats else None,
        "principals": ALL.tokens(), "statuses": None, "source_ids": None, "source_types": None,
        "updated_from": None, "updated_to": None, "k": 10,
    }  # fmt: skip
    with conn.transaction():
        sq.configure_vector_scan(conn, ef_search=100, max_scan_tuples=20_000)
        conn.execute("set local enable_seqscan = off")
        plan = "\n".join(
            str(r[0]) for r in conn.execute("explain (analyze, costs off) " + sq.SEARCH_ENTITIES_TEXT, params)
        )
        assert "Index Only Scan using entity_chunks_visibility_idx" in plan, plan
        assert "Heap Fetches: 0" in plan, plan
        found = sq.search_entities_text(conn, **params)
    assert len(found) == 10


def test_the_repeat_tiers_are_counted_through_the_repeats_index(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """RepeatTierChunks counts each of the highest tiers through entity_chunk_repeats_lexemes_idx (decision
    116): a marked-lexeme query the GIN index cannot answer would read the whole table once per tier, on
    every search. The tables are tiny, so sequential scans are taken away; a form the index cannot serve is
    then still a sequential scan, and the counts are checked against the table read directly."""
    _corpus(conn, keyring)
    conn.execute("analyze entity_chunk_repeats")
    terms = sq.text_query_terms(conn, query_text="alpha")
    queries = [repeated(terms[0], tier) for tier in REPEAT_TIERS[:PROBED_TIERS]]
    with conn.transaction():
        conn.execute("set local enable_seqscan = off")
        plan = "\n".join(
            str(r[0]) for r in conn.execute("explain (costs off) " + sq.REPEAT_TIER_CHUNKS, {"queries": queries})
        )
        assert plan.count("Bitmap Index Scan on entity_chunk_repeats_lexemes_idx") == 1, plan
        assert "Seq Scan on entity_chunk_repeats" not in plan, plan
        counted = sq.repeat_tier_chunks(conn, queries=queries)
    direct = [
        row[0]
        for q in queries
        for row in conn.execute("select count(*) from entity_chunk_repeats where lexemes @@ %s::tsquery", (q,))
    ]
    assert counted == direct and counted[-1] > 0, (queries, counted)
