"""What mapping a Jira issue costs as the site's custom fields grow (decision 125).

``fields=*all`` sends every custom field of the site with every issue, most of them null: a site with a
few hundred custom fields sends a few hundred nulls an issue (the captured go-atlassian payloads: 52 custom
fields, 46 of them null, on a test site). This bench maps the Jira emulator's issues (captured over HTTP) as
they are and with ``--nulls`` null custom fields added, and prints the cost an issue and the ratio; the goal
is near 1.

    python bench/jira_null_fields.py [--items 600] [--nulls 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.registry import get_spec
from bench._overlap import CASES, bare, emulator
from bench.acl_growth import per_item
from connectors.base import RawItem


def with_nulls(items: list[RawItem], count: int) -> list[RawItem]:
    nulls = {f"customfield_{20000 + i}": None for i in range(count)}
    return [dataclasses.replace(i, payload={**i.payload, "fields": {**i.payload["fields"], **nulls}}) for i in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--nulls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    case = next(c for c in CASES if c.name == "jira")
    with emulator(case, args.items) as url:
        _, _, items = bare(case, url, keep=True)
    map_item = get_spec("jira").map_item
    plain, padded = with_nulls(items, 0), with_nulls(items, args.nulls)
    best = [float("inf"), float("inf")]
    for _ in range(args.repeats):  # alternated: a slower stretch of the host falls on both sides
        best[0] = min(best[0], per_item(map_item, plain))
        best[1] = min(best[1], per_item(map_item, padded))
    assert map_item(padded[0]).metadata == map_item(plain[0]).metadata, "the nulls changed the entity"
    print(
        f"jira {len(items)} issues: {1e6 * best[0]:.1f} us / {1e6 * best[1]:.1f} us an issue with 0 / {args.nulls}"
        f" null custom fields, ratio {best[1] / best[0]:.2f} (goal: near 1)"
    )


if __name__ == "__main__":
    main()
