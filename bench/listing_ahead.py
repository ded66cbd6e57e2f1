"""A listing's next page asked for while the page before is read, against not (issue 15 §1, decision 127).

For each connector, an emulator in its own process answers every API request ``--latency-ms`` late and its
listing requests ``--listing-ms`` late (the ``route_latency_ms`` fault): a real source's listing is often
its slowest call (Jira's search with every field and the changelog takes seconds for 100 issues). The
connector's bare ``enumerate()`` runs twice against it, same data, alternating ``--repeats`` times (best
kept):

- in turn: ``SourceConfig(listing_ahead=False)``, each listing page requested after the items of the page
  before were read (what a run with read-ahead off does, and every run before decision 127);
- ahead: ``SourceConfig(listing_ahead=True)``, what a run with read-ahead does.

Printed per connector: wall time of each and their ratio (ahead / in turn; below 1 is faster), the API
calls, the listing pages. The emitted streams are compared item by item (asking ahead must not change what
a run commits).

    python bench/listing_ahead.py [--items 600] [--latency-ms 100] [--listing-ms 500] [--repeats 1]
                                  [--only jira,confluence,slack]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench._overlap import CASES, emulator
from bench.fanout import enumerate_once

# Each connector's listing routes, as the emulator names them ("GET <pattern>"): Jira's search (v3 and
# v2), Confluence Cloud's space listings (v2) and CQL search, Slack's channel history. Confluence Server's
# listing shares its route (/rest/api/content) with the look-ups of linked pages by title, which a slow
# listing must not slow down: it is not measured here (tests/connectors/test_listing_ahead.py covers it).
LISTINGS = {
    "jira": r"/search",
    "confluence": r"/spaces/.+/(pages|blogposts)$|/content/search$",
    "slack": r"\.history$",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--listing-ms", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated connectors (default: all three)")
    args = parser.parse_args()
    only = {x for x in args.only.split(",") if x}
    load = os.getloadavg()
    print(
        f"load average at start {load[0]:.2f}; {args.latency_ms} ms per request, {args.listing_ms} ms per listing page"
    )
    head = ("connector", "items", "calls", "pages", "in turn s", "ahead s", "ratio")
    print(f"{head[0]:<11}{head[1]:>6}{head[2]:>7}{head[3]:>7}{head[4]:>11}{head[5]:>9}{head[6]:>7}")
    for case in CASES:
        if only and case.name not in only:
            continue
        with emulator(case, args.items) as url:
            faults = {"latency_ms": args.latency_ms, "route_latency_ms": {LISTINGS[case.module]: args.listing_ms}}
            httpx.post(url + "/_emulator/faults", json=faults).raise_for_status()
            best = {False: float("inf"), True: float("inf")}
            streams: dict[bool, list[tuple[str, Any]]] = {}
            calls = pages = 0
            for _ in range(args.repeats):
                for ahead in (False, True):
                    got = enumerate_once(case, url, listing_ahead=ahead)
                    best[ahead] = min(best[ahead], got.elapsed)
                    streams[ahead], calls, pages = got.items, got.calls, got.pages
            if streams[False] != streams[True]:
                raise SystemExit(f"{case.name}: asking ahead changed what enumerate() emits")
            turn, ahead_s = best[False], best[True]
            print(f"{case.name:<11}{len(streams[True]):>6}{calls:>7}{pages:>7}{turn:>11.2f}{ahead_s:>9.2f}"
                  f"{ahead_s / turn:>7.2f}", flush=True)  # fmt: skip
    load = os.getloadavg()
    print(f"load average at end {load[0]:.2f}")


if __name__ == "__main__":
    main()
