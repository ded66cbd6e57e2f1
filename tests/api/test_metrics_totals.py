"""GET /metrics reads run figures from sync_run_totals and still says what the whole journal says (decision 83).

A random history (finished runs of every mode, trigger and final state, durations on and around the
histogram's bounds, unfinished runs, edits and deletions of finished runs) is written straight to
sync_runs; a real `harvester serve` process answers /metrics, and each run figure is compared with the
same figure computed here from the raw journal: the duration histogram, the runs gauge and the per-source
counters. Then the totals are spoiled and `migrate` re-applies the trigger file, which rebuilds them.
"""

from __future__ import annotations

import bisect
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

from app.db.migrate import migrate
from tests.api.conftest import Server

MODES = ("full", "incremental", "reconciliation")
TRIGGERS = ("connect", "schedule", "webhook", "watchdog", "manual")
FINAL = ("succeeded", "failed", "cancelled")


def _history(conn: psycopg.Connection[Any], rng: random.Random, bounds: list[float]) -> list[int]:
    sources = [
        int(row[0])
        for row in conn.execute(
            "insert into sources (name, connector_type) "
            "select 'metrics-' || g, (array['jira', 'slack', 'confluence'])[g] from generate_series(1, 3) g "
            "returning id"
        ).fetchall()
    ]
    for _ in range(400):
        # On a bound, just past one, fractions, negatives (an end before the start), and past every bound.
        seconds = rng.choice([*bounds, *(b + 0.001 for b in bounds), rng.uniform(0, 30000), -3.0, 0.0])
        started = rng.random() < 0.8
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at, "
            "entities_done, api_calls, rate_limited) "
            "values (%(s)s, %(m)s, %(t)s, %(st)s, now() - interval '2 days', "
            "case when %(started)s then now() - interval '1 day' end, "
            "coalesce(case when %(started)s then now() - interval '1 day' end, now() - interval '2 days') "
            "+ make_interval(secs => %(sec)s), %(done)s, %(calls)s, %(limited)s)",
            {
                "s": rng.choice(sources),
                "m": rng.choice(MODES),
                "t": rng.choice(TRIGGERS),
                "st": rng.choice(FINAL),
                "started": started,
                "sec": seconds,
                "done": rng.choice([None, rng.randrange(0, 5000)]),
                "calls": rng.randrange(0, 300),
                "limited": rng.randrange(0, 4),
            },
        )
    ids = [int(r[0]) for r in conn.execute("select id from sync_runs order by id").fetchall()]
    for run_id in rng.sample(ids, 40):
        conn.execute("delete from sync_runs where id = %s", (run_id,))
        ids.remove(run_id)
    for run_id in rng.sample(ids, 40):
        conn.execute(
            "update sync_runs set api_calls = api_calls + 7, finished_at = finished_at + interval '13 seconds', "
            "state = %s, mode = %s where id = %s",
            (rng.choice(FINAL), rng.choice(MODES), run_id),
        )
    # One unfinished run per source at most (sync_runs_one_active_per_source): a queued and a running one.
    conn.execute(
        "insert into sync_runs (source_id, mode, trigger, state, started_at, entities_done, api_calls) "
        "values (%s, 'full', 'webhook', 'running', now(), 77, 5), "
        "(%s, 'incremental', 'schedule', 'queued', null, null, 0)",
        (sources[0], sources[1]),
    )
    return sources


def _expected(conn: psycopg.Connection[Any], bounds: list[float]) -> dict[str, Any]:
    rows = conn.execute(
        "select s.name, s.connector_type, r.source_id, r.mode, r.trigger, r.state, r.entities_done, r.api_calls, "
        "r.rate_limited, extract(epoch from r.finished_at - coalesce(r.started_at, r.created_at))::float8 "
        "from sync_runs r join sources s on s.id = r.source_id"
    ).fetchall()
    hist: dict[tuple[str, ...], list[float]] = defaultdict(list)
    runs: Counter[tuple[str, str]] = Counter()
    items: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    limited: Counter[str] = Counter()
    webhook: Counter[str] = Counter()
    for name, connector, sid, mode, trigger, state, done, api_calls, rate_limited, seconds in rows:
        runs[(str(sid), state)] += 1
        items[str(sid)] += done or 0
        calls[str(sid)] += api_calls
        limited[str(sid)] += rate_limited
        webhook[str(sid)] += trigger == "webhook"
        if state in FINAL:
            hist[(name, connector, mode, state)].append(max(seconds, 0.0))
    buckets = {
        key: {
            **{str(b): float(bisect.bisect_right(sorted(values), b)) for b in bounds},
            "+Inf": float(len(values)),
        }
        for key, values in hist.items()
    }
    sums = {key: sum(values) for key, values in hist.items()}
    return {
        "buckets": buckets,
        "sums": sums,
        "runs": runs,
        "items": items,
        "calls": calls,
        "limited": limited,
        "webhook": webhook,
    }


def _scraped(server: Server) -> dict[str, Any]:
    text = httpx.get(f"{server.base_url}/metrics").text
    buckets: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    sums: dict[tuple[str, ...], float] = {}
    per_source: dict[str, Counter[Any]] = defaultdict(Counter)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if family.name == "harvester_run_duration_seconds":
                key = (labels["source"], labels["connector"], labels["mode"], labels["state"])
                if sample.name.endswith("_bucket"):
                    buckets[key][labels["le"]] = sample.value
                elif sample.name.endswith("_sum"):
                    sums[key] = sample.value
            elif family.name == "harvester_runs":
                per_source["runs"][(labels["source_id"], labels["state"])] = int(sample.value)
            elif family.name in (
                "harvester_items_processed",
                "harvester_source_api_calls",
                "harvester_rate_limited_calls",
                "harvester_webhook_runs",
            ):
                per_source[family.name][labels["source_id"]] = int(sample.value)
    return {"buckets": dict(buckets), "sums": sums, **per_source}


def _assert_same(scraped: dict[str, Any], expected: dict[str, Any], sources: list[int]) -> None:
    assert scraped["buckets"] == expected["buckets"]
    assert scraped["sums"].keys() == expected["sums"].keys()
    for key, total in expected["sums"].items():
        assert abs(scraped["sums"][key] - total) < 1e-6 * max(1.0, total), key
    assert scraped["runs"] == {k: v for k, v in expected["runs"].items() if k[0] in map(str, sources)}
    for family, name in (
        ("harvester_items_processed", "items"),
        ("harvester_source_api_calls", "calls"),
        ("harvester_rate_limited_calls", "limited"),
        ("harvester_webhook_runs", "webhook"),
    ):
        assert {s: scraped[family][str(s)] for s in sources} == {s: expected[name][str(s)] for s in sources}, family


def test_run_figures_equal_the_journal_and_survive_a_rebuild(fresh_api: Server, tmp_path: Path) -> None:
    rng = random.Random(83)
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        row = conn.execute("select harvester_run_duration_bounds()").fetchone()
        assert row is not None
        bounds = [float(b) for b in row[0]]
        sources = _history(conn, rng, bounds)
        expected = _expected(conn, bounds)
    assert len(expected["sums"]) >= 20 and expected["runs"][(str(sources[0]), "running")] == 1

    _assert_same(_scraped(fresh_api), expected, sources)

    # Spoiled totals (as if a run had been written past the triggers) come back from the journal when
    # migrate re-applies the trigger file.
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("update sync_run_totals set runs = runs + 5, api_calls = 0")
        conn.execute("delete from sync_run_totals where bucket = 1")
        assert _scraped(fresh_api)["buckets"] != expected["buckets"]
        conn.execute("delete from schema_trigger_files where name = '600_run_totals.sql'")
    migrate(fresh_api.db_url, tmp_path / "backups")
    _assert_same(_scraped(fresh_api), expected, sources)
