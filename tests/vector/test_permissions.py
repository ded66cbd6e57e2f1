"""Search never shows a chunk outside its entity's ACL, a soft-deleted or unknown-ACL entity (issue 5).

Property test with a seeded generator: a few thousand entities with random ACLs (some unknown =
NULL, some empty), drafts and soft deletions, a fifth of them long enough for several chunks, then
10,000 random principals and queries through the real ``search`` (real database, real SQL); the model
is the cheap deterministic HashEmbedder. Results are entities (issue 14 §4): each answer must hold only
visible entities, each once, shown by one of its own chunks, AND exactly min(k, visible entities) of
them: a filter that returned nothing would pass the first half only.
"""

from __future__ import annotations

import random
from typing import Any

import psycopg

from app.queries import entities as q
from app.queries import settings as settings_q
from app.secrets import Keyring
from app.vector.search import Principal, search
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ENTITIES = 3000
QUERIES = 10_000
USERS = [f"u{n}@example.com" for n in range(150)]
GROUPS = [f"group:jira:g{n}" for n in range(30)]
WORDS = ["billing", "cache", "login", "export", "search", "sync", "report", "invoice", "queue", "retry", "webhook"]


def _random_acl(rng: random.Random) -> list[str] | None:
    roll = rng.random()
    if roll < 0.10:
        return None  # unknown: visible to nobody
    if roll < 0.15:
        return []  # known to be nobody's
    tokens = {f"user:{rng.choice(USERS)}" for _ in range(rng.randrange(0, 3))}
    tokens |= {rng.choice(GROUPS) for _ in range(rng.randrange(0, 3))}
    return sorted(tokens) or [f"user:{rng.choice(USERS)}"]


def test_random_principals_see_exactly_the_visible_chunks_and_nothing_else(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    rng = random.Random(20261130)
    source_id = plain_source(conn, keyring)
    embedder = HashEmbedder()
    acls: dict[str, list[str] | None] = {}
    drafts: set[str] = set()
    batch = []
    for n in range(ENTITIES):
        acl = _random_acl(rng)
        status = "draft" if rng.random() < 0.15 else rng.choice(["final", "archived"])
        acls[str(n)] = acl
        if status == "draft":
            drafts.add(str(n))
        # A fifth have 3-4 chunks: several near chunks of one entity must not take several places.
        paragraphs = 8 if rng.random() < 0.2 else 1
        text = "\n\n".join(" ".join(rng.choices(WORDS, k=40 if paragraphs > 1 else 8)) for _ in range(paragraphs))
        batch.append(entity(n, text, acl, status=status))
    load_entities(conn, source_id, batch, VectorStage(embedder))
    deleted = {str(n) for n in rng.sample(range(ENTITIES), ENTITIES // 10)}
    q.soft_delete_items(
        conn,
        source_id=source_id,
        run_id=0,
        rows=[{"source_type": "ticket", "source_entity_id": d} for d in sorted(deleted)],
    )
    conn.commit()
    ids = dict(conn.execute("select id, source_entity_id from entities where source_id = %s", (source_id,)).fetchall())
    chunk_owner = dict(conn.execute("select id, entity_id from entity_chunks").fetchall())
    multi = conn.execute("select count(*) from (select from entity_chunks group by entity_id having count(*) > 2) m")
    assert (multi.fetchone() or (0,))[0] > ENTITIES // 10
    conn.commit()

    def visible_set(tokens: set[str], include_drafts: bool) -> set[str]:
        return {
            e for e, acl in acls.items()
            if acl is not None and tokens & set(acl) and e not in deleted and (include_drafts or e not in drafts)
        }

    checked_nonempty = 0
    for n in range(QUERIES):
        include_drafts = n >= QUERIES - 1000
        if n == QUERIES - 1000:
            settings_q.put_setting(conn, key="search_include_drafts", value=True)
            conn.commit()
        user = rng.choice([*USERS, "stranger@example.com"]) if rng.random() < 0.9 else None
        groups = tuple(rng.sample([*GROUPS, "group:jira:nobody"], rng.randrange(0, 4)))
        principal = Principal(user=user, groups=groups)
        visible = visible_set(set(principal.tokens()), include_drafts)
        k = rng.randrange(1, 21)
        results = search(conn, embedder, query=" ".join(rng.choices(WORDS, k=3)), principal=principal, k=k)
        got = [ids[r.entity_id] for r in results]
        assert len(set(got)) == len(got), f"query {n}: an entity appears twice"
        assert all(chunk_owner[r.chunk_id] == r.entity_id for r in results)
        assert all(0 <= r.score <= 1 for r in results)
        outside = set(got) - visible
        assert not outside, f"query {n}: {principal} got chunks outside its ACL/visibility: {sorted(outside)}"
        assert all(acls[e] is not None and e not in deleted for e in got)
        assert len(got) == min(k, len(visible)), f"query {n}: {len(got)} results, {len(visible)} visible, k={k}"
        checked_nonempty += bool(got)
    assert checked_nonempty > QUERIES // 2  # the property was exercised on real answers, not on empty ones


def test_a_principal_with_no_tokens_sees_nothing(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    source_id = plain_source(conn, keyring)
    embedder = HashEmbedder()
    load_entities(conn, source_id, [entity(1, "billing export", ["group:jira:all"])], VectorStage(embedder))
    assert search(conn, embedder, query="billing", principal=Principal(user=None), k=5) == []
    assert search(conn, embedder, query="billing", principal=Principal(user="", groups=("",)), k=5) == []
    assert len(search(conn, embedder, query="billing", principal=Principal(None, ("jira:all",)), k=5)) == 1
