"""What a run that fetches one item by id (a webhook delivery, a dead-letter retry) asks of the source,
with the directories an earlier run read kept for it and without (decision 125).

A delivery's run used to read the workspace's directories whole before its one item: Slack's ``users.list``
and ``conversations.list``, about 75 requests an event at 10,000 people and 5,000 channels. A run of the same
source now takes them from the run before it while they are younger than the platform setting
``directory_ttl`` (connectors.directories). Per connector, this bench does a full run, then one by-id run of
one item with ``directory_ttl`` 0 (every run reads its own, as before) and one with the default, and prints
the requests and the wall time of each and their ratio. Slack's workspace has ``--people`` members.
Jira's and Confluence's by-id runs keep nothing yet: their ratios are the baseline for when they do.

    python bench/fetch_by_id.py [--items 200] [--people 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.registry import get_spec
from bench._overlap import CASES, Case, emulator
from bench.connector_sync import TOKEN
from connectors.base import CallStats, RawItem, SourceConfig
from connectors.directories import DEFAULT_DIRECTORY_TTL, SHARED


def by_id(case: Case, config: SourceConfig, item: RawItem, base_url: str) -> tuple[int, float]:
    """Requests the source answered and seconds taken for one by-id run of ``item``."""
    with httpx.Client(base_url=base_url, timeout=30) as control:
        control.delete("/_emulator/stats").raise_for_status()
        connector = get_spec(case.name).create(config, CallStats())
        started = time.perf_counter()
        out = list(connector.fetch([(item.source_type, item.source_entity_id)]))
        elapsed = time.perf_counter() - started
        connector.close()
        assert any(isinstance(i, RawItem) and i.source_entity_id == item.source_entity_id for i in out), out
        return int(control.get("/_emulator/stats").json()["requests"]), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--people", type=int, default=10_000, help="Slack workspace members")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"one item fetched by id after a full run: directory_ttl 0 / {DEFAULT_DIRECTORY_TTL:.0f} s")
    for case in CASES:
        extra = ("--more-people", str(max(0, args.people - 20))) if case.name == "slack" else ()
        with emulator(case, args.items, extra) as url:
            config = SourceConfig(1, url + case.path, TOKEN, "all", (), {})
            SHARED.clear()
            connector = get_spec(case.name).create(config, CallStats())
            item = next(i for i in connector.enumerate(None, None) if isinstance(i, RawItem))
            for _ in connector.enumerate(None, None):
                pass  # the full run whose directories the by-id runs may take
            connector.close()
            best = {}
            for ttl in (0.0, DEFAULT_DIRECTORY_TTL):
                asked = dataclasses.replace(config, directory_ttl=ttl)
                runs = [by_id(case, asked, item, url) for _ in range(args.repeats)]
                best[ttl] = (min(r[0] for r in runs), min(r[1] for r in runs))
            (r0, t0), (r1, t1) = best[0.0], best[DEFAULT_DIRECTORY_TTL]
            print(
                f"{case.name:<10} requests {r0:4d} / {r1:4d}, ratio {r1 / r0:.2f};"
                f" wall {1e3 * t0:8.1f} / {1e3 * t1:8.1f} ms, ratio {t1 / t0:.2f}"
            )


if __name__ == "__main__":
    main()
