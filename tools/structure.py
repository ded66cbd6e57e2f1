"""Normalised schema dump (sql/structure.sql) so reviewers read plain DDL diffs (STYLE.md habit 1).

    python -m tools.structure write   # regenerate sql/structure.sql from a freshly migrated database
    python -m tools.structure check   # exit 1 and print a diff when the committed file is stale

Both migrate a throw-away database on the embedded server (or HARVESTER_TEST_DATABASE_URL's server).
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db.embedded import pg_bin

REPO = Path(__file__).resolve().parents[1]
STRUCTURE = REPO / "sql" / "structure.sql"


def normalise(dump: str) -> str:
    out: list[str] = []
    for line in dump.splitlines():
        if (
            line.startswith("--")
            or line.startswith("SET ")
            or line.startswith("SELECT pg_catalog.set_config")
        ):
            continue
        if line.startswith("\\restrict") or line.startswith("\\unrestrict"):
            continue  # pg_dump 18 adds a random per-dump key here
        out.append(line.rstrip())
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
    return text


def dump_schema(url: str) -> str:
    params = conninfo_to_dict(url)
    proc = subprocess.run(
        [
            str(pg_bin("pg_dump")),
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            "--dbname",
            make_conninfo("", **params),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return normalise(proc.stdout)


def fresh_dump(server_url: str) -> str:
    from app.db.migrate import migrate

    name = f"hv_structure_{uuid.uuid4().hex[:8]}"
    params = conninfo_to_dict(server_url)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        params["dbname"] = name
        url = make_conninfo("", **params)
        with tempfile.TemporaryDirectory() as tmp:
            migrate(url, Path(tmp))
        return dump_schema(url)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def diff(committed: str, regenerated: str) -> str:
    return "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            regenerated.splitlines(keepends=True),
            "sql/structure.sql (committed)",
            "sql/structure.sql (regenerated)",
        )
    )


def _server_url() -> str:
    import os

    external = os.environ.get("HARVESTER_TEST_DATABASE_URL")
    if external:
        params = conninfo_to_dict(external)
        params["dbname"] = "postgres"
        return make_conninfo("", **params)
    from app.config import load_config
    from app.db import embedded

    return embedded.start(load_config().data_dir).url("postgres")


def main(argv: list[str]) -> int:
    if argv[1:] not in (["write"], ["check"]):
        print(__doc__)
        return 2
    regenerated = fresh_dump(_server_url())
    if argv[1] == "write":
        STRUCTURE.write_text(regenerated)
        return 0
    d = diff(STRUCTURE.read_text() if STRUCTURE.exists() else "", regenerated)
    print(d)
    return 1 if d else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
