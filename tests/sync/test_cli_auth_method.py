"""``harvester sources add`` refuses an auth method the connector's manifest does not list, in one line
naming the field, and stores nothing (issue 12, item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.sync.conftest import scalar

REPO = Path(__file__).resolve().parents[2]


def test_cli_refuses_an_unsupported_auth_method_in_one_line(
    probe: psycopg.Connection[Any], fresh_db_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": fresh_db_url,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_SECRET_KEY": os.urandom(32).hex(),
    }
    args = ["sources", "add", "--name", "oauth-jira", "--connector", "jira", "--base-url", "http://127.0.0.1:9"]
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", *args, "--auth-method", "oauth"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "harvester: error: --auth-method: jira does not support 'oauth'; it supports ['static_token']"
    ]
    assert scalar(probe, "select count(*) from sources where name = 'oauth-jira'") == 0
