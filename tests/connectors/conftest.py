"""Where the real captured payloads live: ``<repo>/../shared/fixtures`` (read at run time, never copied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = (Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures").resolve()


def load_fixture(*parts: str) -> Any:
    """Parse one JSON fixture file: ``load_fixture("go-atlassian", "jira", "mocks", "get-issue.json")``."""
    return json.loads((FIXTURES.joinpath(*parts)).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES
