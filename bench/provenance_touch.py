"""Cost of recording fetch provenance on unchanged rows (issue 12, item 5).

A full run over N unchanged Jira issues: the content upsert writes nothing (equal hashes) and
TouchFetched then records last_fetched_at / last_run_id. Times the second full run end to end and the
TouchFetched statements alone (pg_stat_statements is not assumed: the statement is re-run on the same
pages in a rolled-back transaction).

    python bench/provenance_touch.py [--issues 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.connect import connect
from app.pipeline.run import execute_run
from app.queries import entities as eq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from bench._db import bench_database
from bench._emulator import jira_emulator

TOKEN = "bench-token"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=2000)
    args = parser.parse_args()
    with (
        bench_database() as url,
        jira_emulator(args.issues, token=TOKEN) as base_url,
        connect(url, autocommit=True) as conn,
    ):
        keyring = Keyring(current=os.urandom(32))
        source_id = create_source(
            conn, keyring, NewSource(name="jira", connector_type="jira", base_url=base_url, credential=TOKEN)
        )
        timings = []
        for _ in range(3):
            run_id = start_run(conn, source_id, mode="full", trigger="manual")
            t0 = time.perf_counter()
            assert execute_run(conn, run_id, worker_id="bench", keyring=keyring).state == "succeeded"
            timings.append(time.perf_counter() - t0)
        rows = [
            {"source_type": t, "source_entity_id": i}
            for t, i in conn.execute(
                "select source_type, source_entity_id from entities where source_id = %s", (source_id,)
            )
        ]
        with conn.transaction(force_rollback=True):
            t0 = time.perf_counter()
            for k in range(0, len(rows), 100):
                eq.touch_fetched(conn, source_id=source_id, run_id=-1, rows=rows[k : k + 100])
            touch = time.perf_counter() - t0
        print(
            f"issues={len(rows)} first full run {timings[0]:.2f}s; unchanged full runs {timings[1]:.2f}s, "
            f"{timings[2]:.2f}s; TouchFetched for all rows in pages of 100: {touch * 1000:.0f} ms "
            f"({touch / max(timings[1], 1e-9):.1%} of an unchanged full run)"
        )


if __name__ == "__main__":
    main()
