"""Confluence polling sees blog posts (issue 12 §2): incremental CQL asks for ``blogpost`` beside pages,
so a blog post edited before or while a run pages is loaded by that run or the next one (end to end)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.pipeline.run import Progress
from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from tests.sync.conftest import sync
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, entity, served


@pytest.fixture()
def confluence() -> Iterator[Emulator]:
    with served(ConfluenceEmulator(pages=40, seed=5, token=TOKEN, blog_posts=2)) as emulator:
        yield emulator


def _title(probe: psycopg.Connection[Any], source_id: int, sid: str) -> str:
    row = entity(probe, source_id, sid)
    assert row is not None
    return str(row["title"])


def test_a_blog_post_edited_before_or_during_an_incremental_run_is_loaded(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")
    _, full = sync(conn, keyring, source_id, "full")
    assert full.state == "succeeded"
    assert _title(probe, source_id, "900001").endswith("weekly notes 2")
    confluence.call("PATCH", "/_emulator/blogposts/900001", json={"title": "Edited before the run"})
    raced: list[str] = []

    def race(progress: Progress) -> None:
        if not raced:  # after the first committed page, another blog post changes at the source
            edited = confluence.call("PATCH", "/_emulator/blogposts/900006", json={"title": "Edited mid-run"})
            raced.append(edited["id"])

    outcome, _ = sync(conn, keyring, source_id, "incremental", on_progress=race)
    assert outcome.state == "succeeded" and raced
    assert _title(probe, source_id, "900001") == "Edited before the run"

    sync(conn, keyring, source_id, "incremental")

    assert _title(probe, source_id, "900006") == "Edited mid-run"
    assert _title(probe, source_id, "900001") == "Edited before the run"
