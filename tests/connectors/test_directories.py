"""The store of directories kept between runs (connectors.directories, decision 125), on its own clock."""

from __future__ import annotations

import pytest

from connectors import directories
from connectors.base import SourceConfig
from connectors.directories import Directories, SourceDirectories, directory_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_value_serves_while_younger_than_the_asker_accepts_and_never_at_zero() -> None:
    clock = Clock()
    store = Directories(clock)
    store.put("users", {"U1": "a"})
    clock.now += 299
    assert store.get("users", 300) == {"U1": "a"}
    assert store.get("users", 0) is None  # the setting at 0: nothing is taken
    clock.now += 2
    assert store.get("users", 300) is None


def test_items_age_each_on_their_own_and_a_put_leaves_the_old_dict_unchanged() -> None:
    clock = Clock()
    store = Directories(clock)
    store.put_item("projects", "ALPHA", "a", 300)
    held = store.get("projects", 300)
    clock.now += 200
    store.put_item("projects", "BETA", "b", 300)
    assert held == {"ALPHA": (1000.0, "a")}  # another run may hold it: never changed
    clock.now += 150  # ALPHA is 350 s old, BETA 150 s
    assert store.get_item("projects", "ALPHA", 300) is None
    assert store.get_item("projects", "BETA", 300) == "b"
    store.put_item("projects", "CORE", "c", 300)
    kept = store.get("projects", 300)
    assert isinstance(kept, dict) and set(kept) == {"BETA", "CORE"}  # the expired one went


def test_the_oldest_entries_go_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Directories(Clock())
    monkeypatch.setattr(directories, "MAX_DIRECTORIES", 3)
    for name in ("a", "b", "c", "d"):
        store.put(name, name)
    assert [store.get(n, 1) for n in ("a", "b", "c", "d")] == [None, "b", "c", "d"]


def test_a_key_names_the_credential_only_by_its_hash() -> None:
    config = SourceConfig(4, "https://x.example/", "xoxb-secret-token", "all", (), {})
    key = directory_key("slack", config, "users")
    assert "xoxb-secret-token" not in repr(key)
    rotated = directory_key("slack", SourceConfig(4, "https://x.example", "xoxb-other", "all", (), {}), "users")
    assert key != rotated and key[:3] == rotated[:3] == ("slack", 4, "https://x.example")


def test_a_source_s_view_takes_only_while_its_run_fetches_by_id() -> None:
    store = Directories(Clock())
    config = SourceConfig(4, "https://x.example", "t", "selected", ("B", "A"), {}, directory_ttl=300)
    kept = SourceDirectories("jira", config, store)
    kept.put("api", 3)
    kept.put_item("project", "ALPHA", "grants")
    assert kept.get("api") is None and kept.get_item("project", "ALPHA") is None  # a run that enumerates
    kept.taking = True
    assert kept.get("api") == 3 and kept.get_item("project", "ALPHA") == "grants"
    assert kept.key("api") == directory_key("jira", config, "api") and kept.scope == ("selected", ("A", "B"))
    off = SourceDirectories("jira", SourceConfig(4, "https://x.example", "t", "all", (), {}, directory_ttl=0), store)
    off.taking = True
    assert off.get("api") is None  # the setting at 0
