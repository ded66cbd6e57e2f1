"""GET /principals and GET /sources read the entity totals and still say what the entities say (decision 84).

A random history of entity writes (pages of new rows with ACLs that repeat principals or hold NULLs,
rewrites of ACLs, soft deletions and restores of single rows and of hundreds at once, moves between
sources, hard deletes) is written straight to `entities`; a real `harvester serve` process answers, and
each principal's count and each source's live count is compared with the same figure computed here from
the raw rows. A source is then deleted through the API. Last, the totals are spoiled and `migrate`
re-applies the trigger file, which rebuilds them.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

from app.db.migrate import migrate
from tests.api.conftest import Server

USERS = [f"user:jira:u{i}" for i in range(12)]
GROUPS = ["group:jira:all", "group:jira:dev", "group:slack:C01", "group:confluence:space-ENG"]


def _acl(rng: random.Random) -> list[str | None] | None:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.15:
        return []
    acl: list[str | None] = [*rng.sample(USERS, rng.randrange(0, 4)), *rng.sample(GROUPS, rng.randrange(0, 3))]
    if acl and rng.random() < 0.2:
        acl.append(rng.choice(acl))  # a repeat: still one entity for that principal
    if rng.random() < 0.05:
        acl.append(None)
    return acl


def _history(conn: psycopg.Connection[Any], rng: random.Random) -> list[int]:
    sources = [
        int(row[0])
        for row in conn.execute(
            "insert into sources (name, connector_type) "
            "select 'totals-' || g, (array['jira', 'slack', 'confluence'])[g] from generate_series(1, 3) g "
            "returning id"
        ).fetchall()
    ]
    serial = 0
    for _ in range(30):  # pages, as the pipeline writes them: one statement each
        rows = []
        for _ in range(rng.randrange(1, 40)):
            serial += 1
            rows.append((rng.choice(sources), f"E-{serial}", _acl(rng)))
        with conn.cursor() as cur:
            cur.executemany(
                "insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals) "
                "values (%s, 'issue', %s, 'final', 'h', %s)",
                rows,
            )
    ids = [int(r[0]) for r in conn.execute("select id from entities order by id").fetchall()]
    for _ in range(60):
        action = rng.choice(["acl", "soft", "restore", "move", "delete", "bulk"])
        one = rng.choice(ids)
        if action == "acl":
            conn.execute("update entities set acl_principals = %s where id = %s", (_acl(rng), one))
        elif action == "soft":
            conn.execute("update entities set deleted_at = now() where id = %s", (one,))
        elif action == "restore":
            conn.execute("update entities set deleted_at = null where id = %s", (one,))
        elif action == "move":
            conn.execute("update entities set source_id = %s where id = %s", (rng.choice(sources), one))
        elif action == "delete":
            conn.execute("delete from entities where id = %s", (one,))
            ids.remove(one)
        else:  # a reconciliation's worth: hundreds of rows flip in one statement
            conn.execute(
                "update entities set deleted_at = case when deleted_at is null then now() end, "
                "last_fetched_at = now() where source_id = %s and id %% %s = 0",
                (rng.choice(sources), rng.randrange(2, 5)),
            )
    return sources


def _expected(conn: psycopg.Connection[Any]) -> tuple[dict[str, int], dict[int, int]]:
    principals: Counter[str] = Counter()
    live: Counter[int] = Counter()
    for source_id, acl in conn.execute("select source_id, acl_principals from entities where deleted_at is null"):
        live[int(source_id)] += 1
        for principal in {p for p in (acl or []) if p is not None}:
            principals[principal] += 1
    return dict(principals), dict(live)


def _listed(server: Server, **params: str) -> dict[str, int]:
    seen: dict[str, int] = {}
    cursor: str | None = None
    with server.client("admin") as client:
        for _ in range(100):
            page = client.get(
                "/api/v1/principals", params={"limit": 5, **params, **({"cursor": cursor} if cursor else {})}
            )
            assert page.status_code == 200, page.text
            body = page.json()
            assert list(body["items"]) == sorted(body["items"], key=lambda i: i["principal"].encode())
            seen.update({i["principal"]: i["entities"] for i in body["items"]})
            cursor = body["next_cursor"]
            if cursor is None:
                return seen
    raise AssertionError("the principals listing never ended")


def _source_counts(server: Server, sources: list[int]) -> dict[int, int]:
    with server.client("admin") as client:
        listed = client.get("/api/v1/sources", params={"limit": 100})
        assert listed.status_code == 200, listed.text
        counts = {int(s["id"]): int(s["entity_count"]) for s in listed.json()["items"] if int(s["id"]) in sources}
        for source_id in sources:  # the one-source view says the same
            one = client.get(f"/api/v1/sources/{source_id}")
            assert one.status_code == 200 and one.json()["entity_count"] == counts[source_id], one.text
    return counts


def _assert_same(server: Server, sources: list[int]) -> None:
    with psycopg.connect(server.db_url) as conn:
        principals, live = _expected(conn)
    assert _listed(server) == principals
    assert _listed(server, kind="group") == {p: n for p, n in principals.items() if p.startswith("group:")}
    assert _listed(server, prefix="group:jira:") == {p: n for p, n in principals.items() if p.startswith("group:jira:")}
    assert _source_counts(server, sources) == {s: live.get(s, 0) for s in sources}


def test_principal_and_source_counts_equal_the_entities_and_survive_a_rebuild(
    fresh_api: Server, tmp_path: Path
) -> None:
    rng = random.Random(84)
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        sources = _history(conn, rng)
        principals, live = _expected(conn)
    assert len(principals) >= 12 and all(live.get(s, 0) > 0 for s in sources)

    _assert_same(fresh_api, sources)

    with fresh_api.client("admin") as client:
        assert client.delete(f"/api/v1/sources/{sources[2]}").status_code == 204
    _assert_same(fresh_api, sources[:2])

    # Spoiled totals (as if entities had been written past the triggers) come back from the entities
    # when migrate re-applies the trigger file.
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("update acl_principal_totals set entities = entities + 3")
        conn.execute("delete from source_entity_totals where source_id = %s", (sources[0],))
        assert _listed(fresh_api) != _expected(conn)[0]
        conn.execute("delete from schema_trigger_files where name = '700_entity_totals.sql'")
    migrate(fresh_api.db_url, tmp_path / "backups")
    _assert_same(fresh_api, sources[:2])
