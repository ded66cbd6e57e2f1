"""Connections the product opens encode jsonb with the project's dumper, registered per connection."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

# Runs in a fresh interpreter so no earlier import in the test session can have set anything globally.
_PROBE = """
import sys
from datetime import datetime
import psycopg
from psycopg.types.json import Jsonb
from app.db.connect import connect

url = sys.argv[1]
value = {"at": datetime(2024, 1, 2, 3, 4, 5), "text": "a\\u0000b", 1: "non-string key"}
with connect(url) as conn:
    got = conn.execute("select %s::jsonb", [Jsonb(value)]).fetchone()[0]
assert got == {"at": "2024-01-02T03:04:05", "text": "ab", "1": "non-string key"}, got
assert "app.pipeline.transform" not in sys.modules, "connect() pulled in the pipeline"
with psycopg.connect(url) as plain:  # a connection not made by connect(): the stock dumper, untouched
    try:
        plain.execute("select %s::jsonb", [Jsonb(value)])
    except TypeError:
        pass
    else:
        raise AssertionError("the project's dumper leaked to a connection connect() did not make")
print("ok")
"""


def test_connect_registers_the_project_json_dumper_without_importing_the_pipeline(migrated_db_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, migrated_db_url], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
