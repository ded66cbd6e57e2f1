"""Values derived from a container's rights, built once per container rather than once per item.

A Jira project's Browse grant and a Slack channel's member list can name thousands of people, and every
item of the container carries the same one (the clients share one tuple per project or channel). Turning
it into an ACL (each token once, sorted) per item made mapping an item O(people): 4.4 ms an issue and
3.7 ms a message with 5,000 people (``bench/acl_growth.py``, decision 124).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class PerContainer(Generic[V]):
    """``build(items)``, remembered for the tuple ``items`` is.

    A tuple the client shares among a container's items is found by its identity at no cost; the memo holds
    it, so its id cannot be reused while remembered, and a tuple cannot change. Anything else (a list, a
    tuple built per item) is found by its value: hashed and compared, O(len) in C. Something unhashable
    in it is built each time. At most ``size`` of each are kept; past that the memo starts over.
    """

    def __init__(self, build: Callable[[Iterable[Any]], V], size: int = 256) -> None:
        self._build = build
        self._size = size
        self._by_identity: dict[int, tuple[tuple[Any, ...], V]] = {}
        self._by_value = functools.lru_cache(maxsize=size)(build)
        self._lock = threading.Lock()  # mapping runs on the run's thread and, with embedding ahead, another

    def __call__(self, items: Iterable[Any]) -> V:
        if type(items) is tuple:
            hit = self._by_identity.get(id(items))
            if hit is not None and hit[0] is items:
                return hit[1]
            value = self._build(items)
            with self._lock:
                if len(self._by_identity) >= self._size:
                    self._by_identity.clear()
                self._by_identity[id(items)] = (items, value)
            return value
        try:
            return self._by_value(tuple(items))
        except TypeError:
            return self._build(items)
