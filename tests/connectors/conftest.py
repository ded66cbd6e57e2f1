"""Where the real captured payloads live: ``tests/fixtures/<repository>/...`` (provenance and licence of
each file in ``tests/fixtures/README.md``), so mapping tests run in a clean clone and never skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load_fixture(*parts: str) -> Any:
    """Parse one JSON fixture file: ``load_fixture("go-atlassian", "jira", "mocks", "get-issue.json")``."""
    return json.loads((FIXTURES.joinpath(*parts)).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    assert FIXTURES.is_dir(), f"fixtures missing at {FIXTURES}"
    return FIXTURES
