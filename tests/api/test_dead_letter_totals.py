"""The DLQ depth, wherever it is read, still says what the queue holds (decision 85).

GET /sources, the queue's summary, GET /metrics and the alert tick read dead_letter_totals, which statement
triggers on dead_letters keep. A random history is written through the pipeline's own statements
(UpsertDeadLetters: pages of new items, the same failure again, a new reason, an item twice in a page;
DeleteDeadLetters: loaded items, ones never parked) and through plain SQL (hundreds of rows at once,
reasons changed in bulk, items moved between sources, runs deleted under their dead letters). A real
`harvester serve` process answers, and each depth is compared with the same figure counted here from the
raw rows. A source is then deleted through the API. Last, the totals are spoiled and `migrate` re-applies
the trigger file, which rebuilds them.
"""

from __future__ import annotations

import datetime
import random
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.db.migrate import migrate
from app.queries import alerts as aq
from app.queries import dead_letters as dq
from tests.api.conftest import Server

REASONS = ("permission", "not_found", "malformed", "rate_limited", "unknown")


def _history(conn: psycopg.Connection[Any], rng: random.Random) -> list[int]:
    sources = [
        int(row[0])
        for row in conn.execute(
            "insert into sources (name, connector_type) "
            "select 'dlq-' || g, (array['jira', 'slack', 'confluence'])[g] from generate_series(1, 3) g "
            "returning id"
        ).fetchall()
    ]
    runs = [
        int(row[0])
        for row in conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, finished_at) "
            "select s, 'incremental', 'schedule', 'succeeded', now() "
            "from unnest(%s::bigint[]) s, generate_series(1, 3) returning id",
            (sources,),
        ).fetchall()
    ]
    items = [f"I-{i}" for i in range(60)]
    for _ in range(300):
        action = rng.choices(["park", "clear", "bulk", "rereason", "move", "drop_run"], [60, 25, 3, 5, 5, 2])[0]
        source = rng.choice(sources)
        if action == "park":  # a page's failures: new items, the same ones again (same reason or a new one)
            dq.upsert_dead_letters(
                conn,
                source_id=source,
                run_id=rng.choice(runs),
                rows=[
                    {"source_type": "issue", "source_entity_id": rng.choice(items), "reason": rng.choice(REASONS)}
                    for _ in range(rng.randrange(1, 6))
                ],
            )
        elif action == "clear":  # a page loaded: some of its items were parked, some never were
            chosen = rng.sample(items, rng.randrange(1, 12))
            dq.delete_dead_letters(
                conn, source_id=source, rows=[{"source_type": "issue", "source_entity_id": i} for i in chosen]
            )
        elif action == "bulk":  # a page of malformed items in one statement
            conn.execute(
                "insert into dead_letters (source_id, source_type, source_entity_id, reason) "
                "select %s, 'bulk', 'B-' || g || '-' || %s, (%s::text[])[1 + g %% 5] from generate_series(1, 200) g",
                (source, rng.random(), list(REASONS)),
            )
        elif action == "rereason":
            conn.execute(
                "update dead_letters set reason = %s where source_id = %s and id %% 3 = 0",
                (rng.choice(REASONS), source),
            )
        elif action == "move":
            conn.execute(
                "update dead_letters set source_id = %s "
                "where id = (select id from dead_letters where source_id = %s and source_type = 'bulk' limit 1)",
                (rng.choice(sources), source),
            )
        elif runs:  # a run deleted: its dead letters stay, run_id set to NULL
            conn.execute("delete from sync_runs where id = %s", (runs.pop(rng.randrange(len(runs))),))
    return sources


def _expected(conn: psycopg.Connection[Any]) -> dict[int, Counter[str]]:
    queue: dict[int, Counter[str]] = {}
    for source_id, reason in conn.execute("select source_id, reason from dead_letters"):
        queue.setdefault(int(source_id), Counter())[reason] += 1
    return queue


def _assert_same(server: Server, sources: list[int]) -> None:
    with psycopg.connect(server.db_url) as conn:
        queue = _expected(conn)
        names: dict[int, str] = dict(conn.execute("select id, name from sources").fetchall())
        threshold = sorted(sum(queue.get(s, Counter()).values()) for s in sources)[len(sources) // 2]
        alerts = {
            r.subject: r.detail
            for r in aq.list_alert_conditions(
                conn, dlq_threshold=threshold, now=datetime.datetime.now(datetime.UTC), worker_silence=3600
            )
            if r.kind == "dead_letters_over_threshold"
        }
    depth = {s: sum(queue.get(s, Counter()).values()) for s in sources}
    with server.client("admin") as client:
        listed = client.get("/api/v1/sources", params={"limit": 100})
        assert listed.status_code == 200, listed.text
        assert {int(s["id"]): s["dlq_depth"] for s in listed.json()["items"] if int(s["id"]) in sources} == depth
        for source_id in sources:
            one = client.get(f"/api/v1/sources/{source_id}")
            assert one.status_code == 200 and one.json()["dlq_depth"] == depth[source_id], one.text
            summary = client.get(f"/api/v1/sources/{source_id}/dead-letters/summary")
            assert summary.status_code == 200, summary.text
            assert summary.json()["by_reason"] == dict(queue.get(source_id, Counter()))
            assert summary.json()["total"] == depth[source_id]
    scraped_depth: dict[str, float] = {}
    scraped_reasons: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{server.base_url}/metrics").text):
        for sample in family.samples:
            if family.name == "harvester_dlq_depth":
                scraped_depth[sample.labels["source"]] = sample.value
            elif family.name == "harvester_dead_letters":
                scraped_reasons[(sample.labels["source_id"], sample.labels["reason"])] = sample.value
    assert {s: scraped_depth[names[s]] for s in sources} == depth
    assert {k: v for k, v in scraped_reasons.items() if int(k[0]) in sources} == {
        (str(s), reason): n for s in sources for reason, n in queue.get(s, Counter()).items()
    }
    assert alerts == {
        f"source:{s}": f"{n} dead letters, more than {threshold}" for s, n in depth.items() if n > threshold
    }


def test_dlq_depth_equals_the_queue_and_survives_a_rebuild(fresh_api: Server, tmp_path: Path) -> None:
    rng = random.Random(85)
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        sources = _history(conn, rng)
        queue = _expected(conn)
    assert all(len(queue.get(s, {})) >= 4 for s in sources), queue

    _assert_same(fresh_api, sources)

    with fresh_api.client("admin") as client:
        assert client.delete(f"/api/v1/sources/{sources[2]}").status_code == 204
    _assert_same(fresh_api, sources[:2])

    # Spoiled totals (as if dead letters had been written past the triggers) come back from the queue when
    # migrate re-applies the trigger file.
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("update dead_letter_totals set items = items + 2")
        conn.execute("delete from dead_letter_totals where source_id = %s and reason = 'malformed'", (sources[0],))
    with pytest.raises(AssertionError):
        _assert_same(fresh_api, sources[:2])
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("delete from schema_trigger_files where name = '800_dead_letter_totals.sql'")
    migrate(fresh_api.db_url, tmp_path / "backups")
    _assert_same(fresh_api, sources[:2])
