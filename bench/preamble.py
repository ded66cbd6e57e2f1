"""What a listing waits for before its first item, with the reads before its first search asked at once and
in turn (issue 15 §1, decision 139).

Before its first search a Jira listing reads the API version (``/serverInfo``), each project its scope names
(``/project/{key}``: a hidden one is noted and left alone) and, for an incremental listing, the user's zone
its JQL is written in (``/myself``); a Confluence incremental listing reads the space list its CQL names and
the user's zone (``/user/current``). Those were asked one after the other; now what does not depend on each
other is asked together (the projects a few at a time). An emulator in its own process answers every
request ``--latency-ms`` late; Jira's has ``--projects`` projects, all named in the scope. Each connector's
``enumerate()`` runs both ways, alternated ``--repeats`` times (best kept):

- in turn: the reads as they were before decision 139 (a subclass that asks them one by one);
- at once: the product.

Printed per listing (Jira full and incremental over the last ``--changed`` issues, Confluence incremental
over the last ``--changed`` pages): seconds to the first item and to the listing's end, each way, and their
ratios (at once / in turn; below 1 is faster). The emitted streams are compared item by item (previews left
out: when a page is announced depends on timing).

    python bench/preamble.py [--items 300] [--projects 6] [--changed 10] [--latency-ms 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._overlap import CASES, emulator, set_latency
from bench.connector_sync import TOKEN
from connectors.base import CallStats, Connector, Preview, RawItem, SourceConfig
from connectors.confluence.client import ConfluenceConnector
from connectors.emulators import confluence as confluence_emulator
from connectors.emulators.jira import PROJECT_NAMES, STEP, T0
from connectors.fanout import FanOut
from connectors.jira.client import JiraConnector
from tests.connectors.test_fanout import shape

Make = Callable[[SourceConfig, CallStats], Connector]


class JiraInTurn(JiraConnector):
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


class ConfluenceInTurn(ConfluenceConnector):
    """The CQL's reads as every run made them before decision 139: the user's zone, then the space list."""

    def _cql(self, since: datetime, order: bool = True) -> str:
        self._user_tz()
        return super()._cql(since, order)


def listing(make: Make, config: SourceConfig, since: datetime | None) -> tuple[float, float, list[Any]]:
    """Seconds to the first item and to the end of one ``enumerate()``, and what it emitted."""
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


def compare(label: str, ways: dict[str, Make], config: SourceConfig, since: datetime | None, repeats: int) -> None:
    """Both ways of one listing, alternated, best of ``repeats``: one printed line."""
    best: dict[str, tuple[float, float]] = {}
    streams: dict[str, list[Any]] = {}
    for _ in range(repeats):
        for name, make in ways.items():
            first, end, streams[name] = listing(make, config, since)
            kept = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(kept[0], first), min(kept[1], end))
    if streams["at once"] != streams["in turn"]:
        raise SystemExit(f"{label}: the two listings emitted different streams")
    items = sum(1 for s in streams["at once"] if s[0] == "item")
    (f0, e0), (f1, e1) = best["in turn"], best["at once"]
    to_first = f"{f0:>17.2f} {f1:>10.2f} {f1 / f0:>6.2f}"
    print(f"{label:<23} {items:>6} {to_first} {e0:>15.2f} {e1:>10.2f} {e1 / e0:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--projects", type=int, default=6, help=f"at most {len(PROJECT_NAMES)}")
    parser.add_argument("--changed", type=int, default=10, help="items the incremental listings find")
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    projects = PROJECT_NAMES[: max(1, min(args.projects, len(PROJECT_NAMES)))]
    print(f"{args.latency_ms} ms per request; {args.items} items; Jira: {len(projects)} projects named in the scope")
    print(f"{'listing':<23} {'items':>6} {'first, in turn s':>17} {'at once s':>10} {'ratio':>6}"
          f" {'end, in turn s':>15} {'at once s':>10} {'ratio':>6}")  # fmt: skip
    jira = next(c for c in CASES if c.name == "jira")
    with emulator(jira, args.items, ("--projects", str(len(projects)))) as url:
        set_latency(url, args.latency_ms)
        config = SourceConfig(1, url, TOKEN, "selected", projects, {})
        ways: dict[str, Make] = {"in turn": JiraInTurn, "at once": JiraConnector}
        # The emulator's issue i is updated at T0 + i minutes: the last --changed issues are the delta.
        compare("jira full", ways, config, None, args.repeats)
        compare("jira incremental", ways, config, T0 + STEP * max(0, args.items - args.changed), args.repeats)
        set_latency(url, 0)
    confluence = next(c for c in CASES if c.name == "confluence")
    with emulator(confluence, args.items) as url:
        set_latency(url, args.latency_ms)
        config = SourceConfig(1, url + confluence.path, TOKEN, "all", (), {})
        ways = {"in turn": ConfluenceInTurn, "at once": ConfluenceConnector}
        # The emulator's page i is updated at END - (N - i) x STEP: the last --changed pages are the delta.
        since = confluence_emulator.END - confluence_emulator.STEP * args.changed
        compare("confluence incremental", ways, config, since, args.repeats)
        set_latency(url, 0)


if __name__ == "__main__":
    main()
