"""Re-sync cost against the first full sync of the same source (issue 3 benchmarks).

One process runs the pipeline (``execute_run``, no embedding stage) against a Jira emulator in
another process. Timed, in order, on one source of ``--issues`` issues:

1. the first full sync (baseline);
2. an incremental re-sync with nothing changed (target <= 0.02 of 1), and the updated tuples of
   ``entities`` it caused (from pg_stat_user_tables): the provenance touches of the rows it re-read
   unchanged (``last_fetched_at``, ``last_run_id``; issue 12, item 5) and the rows it rewrote (target 0);
3. a full re-sync with nothing changed (it must page through every issue again; printed for scale,
   with its updated tuples split the same way: one touch per issue, nothing rewritten);
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
from dataclasses import dataclass
from datetime import datetime
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


@dataclass(frozen=True, slots=True)
class Timed:
    elapsed: float
    done: int
    run_id: int
    mark: datetime  # the database's clock just before the run


def timed_run(conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, mode: str) -> Timed:
    run_id = start_run(conn, source_id, mode=mode, trigger="manual")
    mark = conn.execute("select clock_timestamp()").fetchone()
    assert mark is not None
    started = time.perf_counter()
    outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring)
    elapsed = time.perf_counter() - started
    assert outcome.state == "succeeded", outcome
    return Timed(elapsed, outcome.done, run_id, mark[0])


def writes(conn: psycopg.Connection[Any], source_id: int, run: Timed) -> tuple[int, int]:
    """(touched, rewritten): the source's rows the run stamped without changing their content (updated_at
    kept), and the rows whose content it rewrote (updated_at moved past the run's start)."""
    row = conn.execute(
        "select count(*) filter (where last_run_id = %s and updated_at < %s), count(*) filter (where updated_at >= %s) "
        "from entities where source_id = %s",
        (run.run_id, run.mark, run.mark, source_id),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def updated_tuples(conn: psycopg.Connection[Any], url: str) -> int:
    """n_tup_upd of entities once the pipeline's backend has published what it counted.

    A backend flushes its counts when it goes idle, at most once a second unless forced; forcing it on
    another connection flushes only that one. So the flush is forced on ``conn`` itself (autocommit: it
    happens before the reply to the next statement), else a run's last updates could be counted in the
    next run's window, or a run's own updates missed.
    """
    conn.execute("select pg_stat_force_next_flush()")
    conn.execute("select 1")
    with psycopg.connect(url, autocommit=True) as c:
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
        first = timed_run(conn, keyring, source_id, "full")
        # The cursor is the newest issue's time; nothing happens at the source in between.
        before = updated_tuples(conn, url)
        inc_same = timed_run(conn, keyring, source_id, "incremental")
        upd_inc = updated_tuples(conn, url) - before
        touched_inc, rewritten_inc = writes(conn, source_id, inc_same)
        before = updated_tuples(conn, url)
        full_same = timed_run(conn, keyring, source_id, "full")
        upd_full = updated_tuples(conn, url) - before
        touched_full, rewritten_full = writes(conn, source_id, full_same)
        with httpx.Client(base_url=base_url) as control:
            keys = control.get("/_emulator/issues").json()["keys"]
            changed = keys[::100]
            for key in changed:
                control.patch(f"/_emulator/issues/{key}", json={"summary": f"edited {key}"}).raise_for_status()
        inc_changed = timed_run(conn, keyring, source_id, "incremental")
        reconcile = timed_run(conn, keyring, source_id, "reconciliation")
    base = first.elapsed
    print(f"issues={args.issues} beside={args.beside} (entities of another source, analysed before the first sync)")
    print(f"  first full sync           {base:8.2f} s  ({first.done / base:,.0f} items/s)")
    print(
        f"  incremental, no change    {inc_same.elapsed:8.2f} s  ratio {inc_same.elapsed / base:.4f} (target <= 0.02); "
        f"{inc_same.done} items re-read (look-back); {upd_inc} updated tuples: {touched_inc} rows touched, "
        f"{rewritten_inc} rewritten (target 0)"
    )
    print(
        f"  full re-sync, no change   {full_same.elapsed:8.2f} s  ratio {full_same.elapsed / base:.3f}; "
        f"{upd_full} updated tuples: {touched_full} rows touched, {rewritten_full} rewritten (target 0)"
    )
    print(
        f"  incremental, 1 % changed  {inc_changed.elapsed:8.2f} s  ratio {inc_changed.elapsed / base:.4f} "
        f"(target <= 0.03); {inc_changed.done} items read for {len(changed)} changed"
    )
    print(f"  reconciliation, none gone {reconcile.elapsed:8.2f} s  ratio {reconcile.elapsed / base:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
