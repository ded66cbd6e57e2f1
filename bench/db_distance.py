"""A full run with its database a network hop away, as a managed PostgreSQL is (issue 15 §1, decision 142).

Each connector's emulator runs in its own process, fed the same data as bench/overlap.py. The database is
an embedded server on a Unix socket, reached directly and through ``bench/_proxy.py``, a process that
delays every chunk by half of ``--rtt-ms`` each way (this VM's kernel has no ``tc netem``); the round trip a
client sees is measured and printed next to the one asked for. For each connector and distance, runs
alternate ``--repeats`` times and the best of each is kept:

- ``apart``: every page in a transaction of its own, as before decision 142 (``JOIN_MAX_ITEMS = 0``);
- ``joined``: the product's writer, which joins pages handed over while it is behind into one transaction.

Printed per row: the seconds of each, ``joined ÷ apart`` (below 1: joining saved time), the bare
``enumerate()`` loop's seconds ÷ the joined run's (the no-latency goal's ratio at that distance), the
seconds the run's thread waited for the writer in each, and how many pages joined the write of the page
before them. With the database on the socket (distance 0) the writer keeps up and few pages join.

    python bench/db_distance.py [--items 2000] [--rtt-ms 2,5] [--repeats 2] [--only jira,slack]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import app.pipeline.run as run_module
from app.heap import settle
from app.pipeline.run import DEFAULT_PREFETCH, RunOutcome
from bench._overlap import CASES, Case, bare, emulator, load_average, pipeline
from bench._proxy import delayed, round_trip
from bench.connector_sync import migrated_template, postgres


@dataclass
class Best:
    seconds: float = float("inf")
    outcome: RunOutcome | None = None

    def keep(self, seconds: float, outcome: RunOutcome) -> None:
        if seconds < self.seconds:
            self.seconds, self.outcome = seconds, outcome


def timed(case: Case, base_url: str, server_url: str, template: str, join_max: int) -> tuple[float, RunOutcome]:
    saved = run_module.JOIN_MAX_ITEMS
    run_module.JOIN_MAX_ITEMS = join_max
    try:
        return pipeline(case, base_url, server_url, template, DEFAULT_PREFETCH)
    finally:
        run_module.JOIN_MAX_ITEMS = saved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rtt-ms", default="2,5", help="comma-separated round trips to add, milliseconds")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated connector names")
    args = parser.parse_args(argv)
    distances = [float(x) for x in args.rtt_ms.split(",") if x]
    if any(d <= 0 for d in distances):
        raise SystemExit("--rtt-ms: each round trip must be above 0 (distance 0, the socket, is always run)")
    wanted = [c for c in CASES if c.name in ({n for n in args.only.split(",") if n} or {c.name for c in CASES})]
    settle()  # this process runs syncs as a worker does (decision 92)
    joined_max = run_module.JOIN_MAX_ITEMS
    print(f"load average before: {load_average()}; prefetch {DEFAULT_PREFETCH} pages; joined writes up to "
          f"{joined_max} items")  # fmt: skip
    with postgres() as direct, migrated_template(direct) as template:
        print(f"{'connector':<11} {'rtt ms':>6} {'seen':>6} {'apart s':>8} {'joined s':>9} {'joined/apart':>13} "
              f"{'bare/joined':>12}   writer waits apart / joined, pages joined")  # fmt: skip
        for case in wanted:
            with emulator(case, args.items) as url:
                bare_s = min(bare(case, url)[1] for _ in range(args.repeats))
                _rows(case, url, direct, template, distances, args.repeats, bare_s, joined_max)


def _rows(
    case: Case,
    url: str,
    direct: str,
    template: str,
    distances: list[float],
    repeats: int,
    bare_s: float,
    joined_max: int,
) -> None:
    for rtt in (0.0, *distances):
        with delayed(direct, rtt) if rtt else nullcontext(direct) as server_url:
            seen = round_trip(server_url)
            apart, joined = Best(), Best()
            for _ in range(repeats):
                apart.keep(*timed(case, url, server_url, template, 0))
                joined.keep(*timed(case, url, server_url, template, joined_max))
        a, j = apart.outcome, joined.outcome
        assert a is not None and j is not None
        if a.write_joined:
            raise SystemExit(f"{case.name}: {a.write_joined} pages joined with joining off")
        print(f"{case.name:<11} {rtt:>6.1f} {seen:>6.2f} {apart.seconds:>8.2f} {joined.seconds:>9.2f} "
              f"{joined.seconds / apart.seconds:>13.2f} {bare_s / joined.seconds:>12.2f}   "
              f"{a.write_wait:.2f} / {j.write_wait:.2f} s, {j.write_joined} pages joined"
              f"   load {load_average()}")  # fmt: skip


if __name__ == "__main__":
    main()
