"""Fan-out: a listing page's per-item requests a few at a time vs one by one (issue 15 §1).

For each connector, an emulator in its own process answers every API request ``--latency-ms`` late
(its ``latency_ms`` fault, as a remote source does). The connector's bare ``enumerate()`` runs twice
against it, same data, alternating ``--repeats`` times (best kept):

- sequential: ``SourceConfig(fanout=1)``, every request after the previous one;
- fan-out: ``SourceConfig(fanout=DEFAULT_FANOUT)`` (connectors.fanout), what production runs.

Printed per connector: wall time of each, their ratio (fan-out / sequential; below 1 is faster), the
API calls, and the most requests the emulator saw waiting at once. The emitted streams are compared
item by item (the fan-out must not change what a run commits).

    python bench/fanout.py [--items 300] [--latency-ms 100] [--repeats 1] [--only jira,confluence,slack]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from app.registry import get_spec
from bench._overlap import CASES, Case, emulator, set_latency
from bench.connector_sync import TOKEN
from connectors.base import CallStats, Checkpoint, RawItem, SourceConfig
from connectors.fanout import DEFAULT_FANOUT


class Enumerated(NamedTuple):
    """One bare ``enumerate()``: what it emitted (id, payload), its wall time, the API calls, the listing
    pages (checkpoints) and the most requests the emulator saw waiting at once."""

    items: list[tuple[str, Any]]
    elapsed: float
    calls: int
    pages: int
    in_flight: int


def enumerate_once(case: Case, base_url: str, **config: Any) -> Enumerated:
    """The connector's bare ``enumerate()`` against the emulator at ``base_url``, with ``config``'s
    ``SourceConfig`` fields (``fanout``, ``listing_ahead``...). Also bench/listing_ahead.py's."""
    httpx.delete(base_url + "/_emulator/stats").raise_for_status()
    stats = CallStats()
    connector = get_spec(case.module).create(
        SourceConfig(1, base_url + case.path, TOKEN, "all", (), {}, **config), stats
    )
    items: list[tuple[str, Any]] = []
    pages = 0
    started = time.perf_counter()
    try:
        for emitted in connector.enumerate(None, None):
            if isinstance(emitted, RawItem):
                items.append((emitted.source_entity_id, emitted.payload))
            elif isinstance(emitted, Checkpoint):
                pages += 1
    finally:
        connector.close()
    elapsed = time.perf_counter() - started
    seen = httpx.get(base_url + "/_emulator/stats").json()
    return Enumerated(items, elapsed, stats.api_calls, pages, int(seen["max_in_latency"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated connectors (default: all three)")
    args = parser.parse_args()
    only = {x for x in args.only.split(",") if x}
    load = os.getloadavg()
    print(f"load average at start {load[0]:.2f}; {args.latency_ms} ms per request; fan-out {DEFAULT_FANOUT}")
    head = ("connector", "items", "calls", "sequential s", "fan-out s", "ratio", "max in flight")
    print(f"{head[0]:<11}{head[1]:>6}{head[2]:>7}{head[3]:>14}{head[4]:>11}{head[5]:>7}{head[6]:>15}")
    for case in CASES:
        if only and case.name not in only:
            continue
        with emulator(case, args.items) as url:
            set_latency(url, args.latency_ms)
            best = {1: float("inf"), DEFAULT_FANOUT: float("inf")}
            streams: dict[int, list[tuple[str, Any]]] = {}
            calls = flight = 0
            for _ in range(args.repeats):
                for fanout in (1, DEFAULT_FANOUT):
                    got = enumerate_once(case, url, fanout=fanout)
                    best[fanout] = min(best[fanout], got.elapsed)
                    streams[fanout], calls = got.items, got.calls
                    flight = max(flight, got.in_flight) if fanout > 1 else flight
            if streams[1] != streams[DEFAULT_FANOUT]:
                raise SystemExit(f"{case.name}: the fan-out changed what enumerate() emits")
            seq, fan = best[1], best[DEFAULT_FANOUT]
            print(f"{case.name:<11}{len(streams[1]):>6}{calls:>7}{seq:>14.2f}{fan:>11.2f}{fan / seq:>7.2f}{flight:>15}",
                  flush=True)  # fmt: skip
    load = os.getloadavg()
    print(f"load average at end {load[0]:.2f}")


if __name__ == "__main__":
    main()
