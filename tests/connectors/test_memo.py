"""connectors.memo.PerContainer (decision 124): a container's ACL built once, whichever way its rights come."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from connectors.memo import PerContainer


class Builds:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, items: Iterable[Any]) -> tuple[str, ...]:
        self.calls += 1
        return tuple(sorted({str(i) for i in items}))


def test_a_shared_tuple_is_built_once_and_another_tuple_gets_its_own() -> None:
    build = Builds()
    memo = PerContainer(build)
    grant = ("user:b", "user:a", "user:b")
    assert [memo(grant) for _ in range(5)] == [("user:a", "user:b")] * 5
    assert build.calls == 1
    assert memo(("user:c",)) == ("user:c",) and build.calls == 2
    assert memo(grant) == ("user:a", "user:b") and build.calls == 2


def test_lists_with_the_same_members_are_built_once() -> None:
    build = Builds()
    memo = PerContainer(build)
    assert memo(["x", "y"]) == memo(["y", "x", "y"][1:]) == ("x", "y")  # equal content: one build
    assert build.calls == 1
    assert memo(["x", "z"]) == ("x", "z") and build.calls == 2


def test_something_unhashable_is_built_each_time_and_still_right() -> None:
    build = Builds()
    memo = PerContainer(build)
    odd: list[Any] = ["user:a", {"not": "a token"}]
    assert memo(odd) == memo(odd) == ("user:a", "{'not': 'a token'}")
    assert build.calls == 2


def test_past_its_size_the_memo_starts_over_and_stays_right() -> None:
    build = Builds()
    memo = PerContainer(build, size=2)
    grants = [(f"user:{i}",) for i in range(5)]
    assert [memo(g) for g in grants] == [(f"user:{i}",) for i in range(5)]
    assert [memo(g) for g in grants] == [(f"user:{i}",) for i in range(5)]
    assert build.calls == 10  # size 2, five grants in turn: every one built again
