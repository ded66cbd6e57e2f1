"""What a Jira listing waits for before its first issue, with the reads before its first search asked at once
and in turn (issue 15 §1, decision 139).

Before its first search a Jira listing reads the API version (``/serverInfo``), each project its scope names
(``/project/{key}``: a hidden one is noted and left alone) and, for an incremental listing, the user's zone
its JQL is written in (``/myself``). Those were asked one after the other; the version and the zone are now
asked together, and the projects a few at a time. An emulator in its own process answers every request
``--latency-ms`` late, with ``--projects`` projects all named in the scope. The connector's ``enumerate()``
runs both ways, alternated ``--repeats`` times (best kept):

- in turn: the reads as they were before decision 139 (a subclass that asks them one by one);
- at once: the product.

Printed per listing (full, and incremental over the last ``--changed`` issues): seconds to the first issue
and to the listing's end, each way, and their ratios (at once / in turn; below 1 is faster). The emitted
streams are compared item by item (previews left out: when a page is announced depends on timing).

    python bench/jira_preamble.py [--items 300] [--projects 6] [--changed 10] [--latency-ms 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench._overlap import CASES, emulator, set_latency
from bench.connector_sync import TOKEN
from connectors.base import CallStats, Preview, RawItem, SourceConfig
from connectors.emulators.jira import PROJECT_NAMES, STEP, T0
from connectors.fanout import FanOut
from connectors.jira.client import JiraConnector
from tests.connectors.test_fanout import shape


class InTurn(JiraConnector):
    """The reads before the first search as every run made them before decision 139: the version, then each
    scope project, then the zone, one after the other (the rest of the listing is the product's)."""

    def _instance(self, since: datetime | None) -> int:
        return self.api()

    def _invisible_projects(self) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
        shared, self.fanout = self.fanout, FanOut(1, name="in-turn")
        try:
            return super()._invisible_projects()
        finally:
            self.fanout.close()
            self.fanout = shared


def listing(make: type[JiraConnector], config: SourceConfig, since: datetime | None) -> tuple[float, float, list[Any]]:
    """Seconds to the first issue and to the end of one ``enumerate()``, and what it emitted."""
    connector = make(config, CallStats())
    first = 0.0
    shapes: list[Any] = []
    started = time.perf_counter()
    try:
        for emitted in connector.enumerate(since, None):
            if not first and isinstance(emitted, RawItem):
                first = time.perf_counter() - started
            if not isinstance(emitted, Preview):  # when a page is announced depends on timing (decision 138)
                shapes.append(shape(emitted))
    finally:
        connector.close()
    return first, time.perf_counter() - started, shapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--projects", type=int, default=6, help=f"at most {len(PROJECT_NAMES)}")
    parser.add_argument("--changed", type=int, default=10, help="issues the incremental listing finds")
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    projects = PROJECT_NAMES[: max(1, min(args.projects, len(PROJECT_NAMES)))]
    case = next(c for c in CASES if c.name == "jira")
    print(f"{args.latency_ms} ms per request; {len(projects)} projects named in the scope; {args.items} issues")
    print(f"{'listing':<12} {'items':>6} {'first, in turn s':>17} {'at once s':>10} {'ratio':>6}"
          f" {'end, in turn s':>15} {'at once s':>10} {'ratio':>6}")  # fmt: skip
    with emulator(case, args.items, ("--projects", str(len(projects)))) as url:
        set_latency(url, args.latency_ms)
        config = SourceConfig(1, url, TOKEN, "selected", projects, {})
        # The emulator's issue i is updated at T0 + i minutes: the last --changed issues are the delta.
        since = T0 + STEP * max(0, args.items - args.changed)
        for label, when in (("full", None), ("incremental", since)):
            best: dict[str, tuple[float, float]] = {}
            streams: dict[str, list[Any]] = {}
            for _ in range(args.repeats):
                for name, make in (("in turn", InTurn), ("at once", JiraConnector)):
                    first, end, streams[name] = listing(make, config, when)
                    kept = best.get(name, (float("inf"), float("inf")))
                    best[name] = (min(kept[0], first), min(kept[1], end))
            if streams["at once"] != streams["in turn"]:
                raise SystemExit(f"{label}: the two listings emitted different streams")
            items = sum(1 for s in streams["at once"] if s[0] == "item")
            (f0, e0), (f1, e1) = best["in turn"], best["at once"]
            to_first = f"{f0:>17.2f} {f1:>10.2f} {f1 / f0:>6.2f}"
            print(f"{label:<12} {items:>6} {to_first} {e0:>15.2f} {e1:>10.2f} {e1 / e0:>6.2f}")
        with httpx.Client(base_url=url, timeout=30) as control:
            control.delete("/_emulator/faults").raise_for_status()


if __name__ == "__main__":
    main()
