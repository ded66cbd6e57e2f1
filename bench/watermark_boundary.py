"""What the run's watermark and checkpoint cost an item when many items share one update time (decision 125).

A bulk import or a migration can give thousands of a source's items the same ``updated``. The watermark keeps
the ids seen at its boundary time (``app.pipeline.watermark``), and every page's checkpoint carried them all.
Advanced one item at a time, each item copied the boundary's ids: O(ids) an item, quadratic over a run; each
page's checkpoint sorted and stored them all: O(ids) a page. This bench does a run's watermark and checkpoint
work for ``--small`` and ``--large`` items on pages of ``--page``, all at one update time, and prints the cost
an item and the ratio large ÷ small, the way the run does it now and the way it did it before; the goal is
near 1.

    python bench/watermark_boundary.py [--small 2000] [--large 20000] [--page 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.pipeline.checkpoint import RunCheckpoint
from app.pipeline.watermark import MovingWatermark, Watermark

AT = datetime(2026, 12, 4, 12, tzinfo=UTC)


def now(items: int, page: int) -> None:
    """The run's page loop as it is: the page's items advance the run's watermark in place, then the page's
    checkpoint stores some of the boundary's ids."""
    mark = MovingWatermark(Watermark())
    for start in range(0, items, page):
        mark.advance_all((f"ITEM-{i}", AT) for i in range(start, min(items, start + page)))
        json.dumps(RunCheckpoint(max_updated=mark.updated, boundary_ids=mark.ids).to_json())


def before(items: int, page: int) -> None:
    """The loop before decision 125: ``advance`` for every item, and every boundary id in every checkpoint."""
    mark = Watermark()
    for start in range(0, items, page):
        for i in range(start, min(items, start + page)):
            mark = mark.advance(f"ITEM-{i}", AT)
        json.dumps({"max_updated": AT.isoformat(), "boundary_ids": sorted(mark.ids)})


def per_item(loop: Callable[[int, int], None], items: int, page: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        loop(items, page)
        best = min(best, (time.perf_counter() - started) / items)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"a run's watermark and checkpoints, {args.small} / {args.large} items at one update time,"
        f" pages of {args.page}"
    )
    for name, loop in (("now", now), ("before", before)):
        small = per_item(loop, args.small, args.page, args.repeats)
        large = per_item(loop, args.large, args.page, args.repeats)
        print(
            f"{name:<6} {1e6 * small:9.2f} us / {1e6 * large:9.2f} us an item,"
            f" ratio {args.large} / {args.small} items: {large / small:.2f} (goal: near 1)"
        )


if __name__ == "__main__":
    main()
