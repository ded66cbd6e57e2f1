"""Jira scope semantics (seed 000 ``scope_list``): under ``scope_mode = 'all'`` the list is a deny-list."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectors.base import CallStats, RawItem, SourceConfig
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from connectors.jira.client import JiraConnector, scope_clause

TOKEN = "jira-scope-token"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with serve(JiraEmulator(40, seed=3, token=TOKEN)) as running:
        yield running


def _config(base_url: str, mode: str, scope: tuple[str, ...]) -> SourceConfig:
    return SourceConfig(
        source_id=1,
        base_url=base_url,
        credential=f"bot@example.com:{TOKEN}",
        scope_mode=mode,  # type: ignore[arg-type]
        scope_list=scope,
        content_filters={},
    )


def test_deny_list_under_scope_mode_all_becomes_project_not_in() -> None:
    assert scope_clause(_config("http://x", "all", ("ALPHA", "BETA"))) == "project not in (ALPHA, BETA)"
    assert scope_clause(_config("http://x", "all", ())) is None


def test_scope_mode_all_skips_the_denied_projects(emu: RunningEmulator) -> None:
    connector = JiraConnector(_config(emu.base_url, "all", ("ALPHA",)), CallStats(), page_size=20)
    try:
        items = [i for i in connector.enumerate(None, None) if isinstance(i, RawItem)]
    finally:
        connector.close()

    containers = {i.container for i in items}
    assert items and "ALPHA" not in containers
    assert {"BETA", "CORE", "OPS"} <= containers
