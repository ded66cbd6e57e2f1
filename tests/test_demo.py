"""`harvester demo` end to end: its printed summary matches what the database holds (issue 6)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from tests.conftest import REPO, with_dbname


def test_demo_runs_the_whole_product_and_its_summary_matches_the_database(server_url: str, tmp_path: Path) -> None:
    database = f"hv_demo_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_")}
    env.update(
        HARVESTER_DATABASE_URL=with_dbname(server_url, "postgres"),
        HARVESTER_DATA_DIR=str(tmp_path / "d"),
        COLUMNS="200",
    )
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "demo",
                "--issues",
                "24",
                "--pages",
                "16",
                "--messages",
                "60",
                "--database",
                database,
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        text = out.stdout
        with psycopg.connect(with_dbname(server_url, database)) as conn:
            per_type = dict(
                conn.execute(
                    "select s.name || '/' || e.source_type, count(*) from live_entities e "
                    "join sources s on s.id = e.source_id group by 1"
                ).fetchall()
            )
            chunks, embedded, edges, refs = conn.execute(
                "select (select count(*) from entity_chunks), (select count(*) from entity_chunks "
                "where embedding is not null), (select count(*) from entity_edges), (select count(*) from entity_refs)"
            ).fetchone() or (None, None, None, None)
            states = [r[0] for r in conn.execute("select state from sync_runs order by id")]
            triggers = {r[0] for r in conn.execute("select trigger from sync_runs")}
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(database)))

    assert set(per_type) == {"Jira/ticket", "Confluence/page", "Slack/message"}
    assert per_type["Jira/ticket"] == 24 and per_type["Confluence/page"] == 16
    for key, count in per_type.items():
        name, kind = key.split("/")
        assert re.search(rf"{name}\s*│\s*{kind}\s*│\s*{count}\b", text), (key, count)
    assert f"summary: chunks {chunks} (embedded {embedded}), edges {edges}, refs {refs}" in text
    assert chunks and chunks == embedded and edges and refs
    assert states == ["succeeded"] * 3 and triggers == {"connect"}
    # Two people, one of whom sees what the other cannot.
    assert "searches as two people" in text
    assert "(only A may see this)" in text
