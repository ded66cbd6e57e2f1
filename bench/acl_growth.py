"""What mapping an item costs as its container's rights grow (decisions 124 and 125).

Every issue of a Jira project carries the project's Browse grant, every message of a private Slack channel
its member list, and every Confluence page its space's read permission and, when restricted, the members of
the groups its restrictions name; a grant, a channel, a space or a group can name thousands of people. The
mapping turns them into the entity's ACL (each token once, sorted). Done anew for every item, that is
O(people) per item; it is now built once per grant, member list, space or restricted path. This bench maps
the same items (captured from the emulators over HTTP) with ``--small`` and ``--large`` people in their
context and prints the ratio per case; it should stay near 1. ``confluence`` is a page open to its space,
``confluence-restricted`` a page under an ancestor restricted to one group.

    python bench/acl_growth.py [--items 1000] [--small 10] [--large 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.registry import get_spec
from bench._overlap import CASES, bare, emulator
from connectors.base import Entity, RawItem


def people(count: int) -> list[str]:
    return [f"person{i}@acl.example" for i in range(count)]


def with_people(name: str, items: list[RawItem], count: int) -> list[RawItem]:
    """The same items, their container's people replaced by ``count`` of them: one list shared by all the
    items, as the clients share one per project, channel, space or group.

    ``confluence``: every page readable by the space's people; ``confluence-restricted``: every page under
    an ancestor restricted to one group of ``count`` people, the space readable by that group."""
    out = []
    shared = tuple(f"user:{p}" for p in people(count)) if name == "jira" else tuple(people(count))
    space = {"users": shared, "groups": ("staff",), "anonymous": False}
    restricted_space = {"users": (), "groups": ("staff", "big"), "anonymous": False}
    above = ({"id": "1", "users": (), "groups": ("big",)},)
    for item in items:
        ctx = item.context
        if name == "jira":
            context = dataclasses.replace(ctx, project_principals=shared, project_fields=())  # type: ignore[call-arg]
        elif name == "slack":
            context = dataclasses.replace(ctx, members=shared)  # type: ignore[call-arg]
        elif name == "confluence":
            context = dataclasses.replace(ctx, space_read=space, inherited_restrictions=(), group_members=None)  # type: ignore[call-arg]
        else:
            context = dataclasses.replace(
                ctx,
                space_read=restricted_space,
                inherited_restrictions=above,
                group_members={"big": shared, "staff": ()},
            )  # type: ignore[call-arg]
        out.append(dataclasses.replace(item, context=context))
    return out


def unrestricted(item: RawItem) -> RawItem:
    """A Confluence page without a read restriction of its own (the emulator restricts some)."""
    payload = {
        **item.payload,
        "restrictions": {"read": {"restrictions": {"user": {"results": []}, "group": {"results": []}}}},
    }
    return dataclasses.replace(item, payload=payload)


def private(item: RawItem) -> RawItem:
    """A Slack message as if its channel were private (its ACL is then the member list)."""
    ctx = item.context
    channel = {**(getattr(ctx, "channel", None) or {}), "is_private": True}
    return dataclasses.replace(item, context=dataclasses.replace(ctx, channel=channel))  # type: ignore[call-arg]


def per_item(map_item: Callable[[RawItem], Entity], items: list[RawItem]) -> float:
    started = time.perf_counter()
    for item in items:
        map_item(item)
    return (time.perf_counter() - started) / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"mapping an item, its container's rights naming {args.small} / {args.large} people, best of {args.repeats}")
    for case in (c for c in CASES if c.name in ("jira", "slack", "confluence")):
        with emulator(case, args.items) as url:
            _, _, items = bare(case, url, keep=True)
        if case.name == "slack":
            items = [private(i) for i in items]
        if case.name == "confluence":
            items = [unrestricted(i) for i in items]
        for name in (case.name, "confluence-restricted") if case.name == "confluence" else (case.name,):
            measure(name, get_spec(case.name).map_item, items, args)


def measure(name: str, map_item: Callable[[RawItem], Entity], items: list[RawItem], args: argparse.Namespace) -> None:
    small, large = with_people(name, items, args.small), with_people(name, items, args.large)
    best = {args.small: float("inf"), args.large: float("inf")}
    for _ in range(args.repeats):  # alternated: a slower stretch of the host falls on both sides
        best[args.small] = min(best[args.small], per_item(map_item, small))
        best[args.large] = min(best[args.large], per_item(map_item, large))
    acl = map_item(large[0]).acl.principals
    assert acl is not None and len(acl) >= args.large, "the large context did not reach the ACL"
    print(
        f"{name:<21} {len(items):>6} items: {1e6 * best[args.small]:8.1f} us / {1e6 * best[args.large]:8.1f} us"
        f" an item, ratio {args.large} / {args.small} people: {best[args.large] / best[args.small]:.2f}"
        " (goal: near 1)"
    )


if __name__ == "__main__":
    main()
