"""429 count and wall time of concurrent runs on one credential, with and without the shared budget
(issue 12, item 7).

A Jira emulator (own process) limits the API to ``--rate`` requests per second (429 + Retry-After +
X-RateLimit-* past it). ``--runs`` threads each enumerate the whole instance with the same credential:
once with per-request backoff only (each client honours Retry-After alone), once with the per-credential
budget in PostgreSQL (``PgRateGate``: a 429 seen by one run pauses all; X-RateLimit-Limit becomes a
shared token bucket). Both use the time-bounded retry of "slow down" answers, so neither fails.

    python bench/rate_budget.py [--issues 300 --runs 4 --rate 10 --page-size 50]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.connect import connect
from app.services.rate_budget import PgRateGate, credential_key
from bench._db import bench_database
from bench._emulator import jira_emulator
from connectors.base import CallStats, RawItem, SourceConfig
from connectors.jira.client import JiraConnector

TOKEN = "bench-token"


def _round(base_url: str, url: str | None, runs: int, page_size: int) -> tuple[float, int, int, list[int]]:
    httpx.delete(f"{base_url}/_emulator/faults").raise_for_status()
    httpx.post(f"{base_url}/_emulator/faults", json={"rate_per_second": ARGS.rate}).raise_for_status()
    before = httpx.get(f"{base_url}/_emulator/stats").json()
    counts: list[int] = []
    stats = [CallStats() for _ in range(runs)]

    def one(k: int) -> None:
        conn: Any = connect(url, autocommit=True) if url else None
        try:
            gate = PgRateGate(conn, credential_key("jira", base_url, TOKEN)) if conn is not None else None
            config = SourceConfig(1, base_url, TOKEN, "all", (), {"neighbours": False}, rate_gate=gate)
            connector = JiraConnector(config, stats[k], page_size=page_size, max_wait=60)
            try:
                counts.append(sum(isinstance(i, RawItem) for i in connector.enumerate(None, None)))
            finally:
                connector.close()
        finally:
            if conn is not None:
                conn.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(k,)) for k in range(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    after = httpx.get(f"{base_url}/_emulator/stats").json()
    limited = int(after["by_status"].get("429", 0)) - int(before["by_status"].get("429", 0))
    return wall, limited, sum(s.api_calls for s in stats), counts


def main() -> None:
    with jira_emulator(ARGS.issues, token=TOKEN) as base_url, bench_database() as url:
        results = []
        for label, db in (("per-request backoff", None), ("shared budget (PostgreSQL)", url)):
            wall, limited, calls, counts = _round(base_url, db, ARGS.runs, ARGS.page_size)
            results.append((wall, limited))
            print(f"{label:28} runs={ARGS.runs} items/run={counts} calls={calls} 429s={limited} wall={wall:.1f}s")
        (base_wall, base_429), (wall, limited) = results
        print(f"shared vs backoff: 429s {limited}/{base_429} = {limited / max(base_429, 1):.2f}x, "
              f"wall {wall:.1f}/{base_wall:.1f} s = {wall / base_wall:.2f}x (both below 1.00 is the goal)")


parser = argparse.ArgumentParser()
parser.add_argument("--issues", type=int, default=300)
parser.add_argument("--runs", type=int, default=4)
parser.add_argument("--rate", type=int, default=10)
parser.add_argument("--page-size", type=int, default=50)
ARGS = parser.parse_args()

if __name__ == "__main__":
    main()
