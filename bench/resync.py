"""Re-sync cost against the first full sync of the same source (issue 3 benchmarks).

One process runs the pipeline (``execute_run``, no embedding stage) against a Jira emulator in
another process. Timed, in order, on one source of ``--issues`` issues:

1. the first full sync (baseline);
2. an incremental re-sync with nothing changed (target <= 0.02 of 1), and the updated tuples of
   ``entities`` it caused (target 0, from pg_stat_user_tables);
3. a full re-sync with nothing changed (it must page through every issue again; printed for scale);
4. an incremental re-sync after 1 % of the issues changed (target <= 0.03 of 1);
5. a reconciliation with nothing gone at the source (it pages through every issue, then checks what
   vanished and collapses duplicates; printed for scale, like 3: before decision 79 its collapse step
   compared every pair of the source's rows, 3.9 s of a 6.6 s reconciliation at 5,000 issues).

``--beside N`` first gives the database another source of N entities and analyses it, so the benched
source is new to the planner's statistics, as a source added to a running installation is (autovacuum
analyses again only once a tenth of the table has changed). Before decision 82 the page statements
read every row of such a source for each page: TouchFetched was 5.1 s of a 14.7 s no-change full re-sync
of 20,000 issues beside 300,000.

    python bench/resync.py [--issues 10000] [--beside 300000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psycopg

from app.db.connect import connect
from app.heap import settle
from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from bench._db import bench_database
from bench._emulator import jira_emulator


def timed_run(conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, mode: str) -> tuple[float, int]:
    run_id = start_run(conn, source_id, mode=mode, trigger="manual")
    started = time.perf_counter()
    outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring)
    elapsed = time.perf_counter() - started
    assert outcome.state == "succeeded", outcome
    return elapsed, outcome.done


def updated_tuples(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("select pg_stat_force_next_flush()")
        row = c.execute("select n_tup_upd from pg_stat_user_tables where relname = 'entities'").fetchone()
        return int(row[0]) if row else 0


def add_analysed_source(conn: psycopg.Connection[Any], keyring: Keyring, entities: int) -> None:
    other = create_source(
        conn, keyring, NewSource(name="other", connector_type="jira", base_url="http://127.0.0.1:9", credential="x")
    )
    conn.execute(
        "insert into entities (source_id, source_type, source_entity_id, natural_key, status, title, body, "
        "content_hash) "
        "select %s, 'jira_issue', 'O-' || g, 'O-' || g, 'final', 'title ' || g, repeat('body ', 40), md5(g::text) "
        "from generate_series(1, %s) g",
        (other, entities),
    )
    conn.execute("vacuum analyze entities")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--issues", type=int, default=10000)
    ap.add_argument("--beside", type=int, default=0, help="entities of another, analysed source")
    args = ap.parse_args()
    settle()  # this process runs syncs as a worker does, and settles its heap as one (decision 92)
    keyring = Keyring(os.urandom(32))
    with jira_emulator(args.issues) as base_url, bench_database() as url, connect(url, autocommit=True) as conn:
        if args.beside:
            add_analysed_source(conn, keyring, args.beside)
        source_id = create_source(
            conn, keyring, NewSource(name="bench", connector_type="jira", base_url=base_url, credential="bench-token")
        )
        first, n = timed_run(conn, keyring, source_id, "full")
        # The cursor is the newest issue's time; nothing happens at the source in between.
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("select pg_stat_force_next_flush()")
        before = updated_tuples(url)
        inc_same, inc_n = timed_run(conn, keyring, source_id, "incremental")
        upd_inc = updated_tuples(url) - before
        before = updated_tuples(url)
        full_same, _ = timed_run(conn, keyring, source_id, "full")
        upd_full = updated_tuples(url) - before
        with httpx.Client(base_url=base_url) as control:
            keys = control.get("/_emulator/issues").json()["keys"]
            changed = keys[::100]
            for key in changed:
                control.patch(f"/_emulator/issues/{key}", json={"summary": f"edited {key}"}).raise_for_status()
        inc_changed, inc_changed_n = timed_run(conn, keyring, source_id, "incremental")
        reconcile, _ = timed_run(conn, keyring, source_id, "reconciliation")
    print(f"issues={args.issues} beside={args.beside} (entities of another source, analysed before the first sync)")
    print(f"  first full sync           {first:8.2f} s  ({n / first:,.0f} items/s)")
    print(
        f"  incremental, no change    {inc_same:8.2f} s  ratio {inc_same / first:.4f} (target <= 0.02); "
        f"{inc_n} items re-read (look-back), {upd_inc} updated tuples (target 0)"
    )
    print(f"  full re-sync, no change   {full_same:8.2f} s  ratio {full_same / first:.3f}; {upd_full} updated tuples")
    print(
        f"  incremental, 1 % changed  {inc_changed:8.2f} s  ratio {inc_changed / first:.4f} (target <= 0.03); "
        f"{inc_changed_n} items read for {len(changed)} changed"
    )
    print(f"  reconciliation, none gone {reconcile:8.2f} s  ratio {reconcile / first:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
