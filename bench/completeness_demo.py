"""Completeness audit figures on the demo data (issue 12, item 6).

Serves the demo company's three emulators (the sizes ``harvester demo`` uses), runs a full sync and then
a reconciliation of each source in-process, and prints the audit rows of each reconciliation: per scope
unit, the count the source reports vs the live entities held, and the run's error_detail.

    python bench/completeness_demo.py [--issues 60 --pages 40 --messages 150]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.connect import connect
from app.pipeline.run import execute_run
from app.queries import completeness as cq
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from bench._db import bench_database
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import serve
from connectors.emulators.slack import SlackEmulator

TOKEN = "demo-token"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=60)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--messages", type=int, default=150)
    args = parser.parse_args()
    emulators = {
        "jira": JiraEmulator(
            args.issues, seed=7, token=TOKEN, company="demo", confluence_pages=args.pages, slack_messages=args.messages
        ),
        "confluence": ConfluenceEmulator(
            pages=args.pages, seed=7, token=TOKEN, company="demo", jira_issues=args.issues
        ),
        "slack": SlackEmulator(
            messages=args.messages, seed=7, token=TOKEN, company="demo", jira_issues=args.issues,
            confluence_pages=args.pages,
        ),
    }
    running = {name: serve(app) for name, app in emulators.items()}
    try:
        with bench_database() as url, connect(url, autocommit=True) as conn:
            keyring = Keyring(current=os.urandom(32))
            for name, emu in running.items():
                credential = f"bot@demo.example:{TOKEN}" if name == "confluence" else TOKEN
                base = emu.base_url + ("/wiki" if name == "confluence" else "")
                source_id = create_source(
                    conn, keyring, NewSource(name=name, connector_type=name, base_url=base, credential=credential)
                )
                for mode in ("full", "reconciliation"):
                    run_id = start_run(conn, source_id, mode=mode, trigger="manual")
                    outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring)
                run = rq.get_run(conn, id=run_id)
                assert run is not None
                print(f"{name}: reconciliation #{run_id} {outcome.state}, {run.entities_done} items; "
                      f"error_detail={run.error_detail!r}")  # fmt: skip
                for row in cq.list_run_completeness(conn, run_id=run_id):
                    diff = row.live_count - row.source_count if row.source_count is not None else None
                    print(f"  {row.container:12} source {row.source_count!s:>5}  held {row.live_count:>5}  diff {diff}")
    finally:
        for emu in running.values():
            emu.stop()


if __name__ == "__main__":
    main()
