"""`harvester demo` end to end: its printed summary matches what the database holds (issue 6)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from app.secrets import Keyring
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
            per_type: dict[str, int] = dict(
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
            credentials = conn.execute("select id, credential_enc from sources order by id").fetchall()
        joined = _join_from_another_shell(text, database)
        with psycopg.connect(with_dbname(server_url, database)) as conn:
            joined_tokens = [r[0] for r in conn.execute("select name from api_tokens")]
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
    # Every child's output is kept in the data dir (issue 10 §3).
    logs = tmp_path / "d" / "demo-logs"
    assert {p.name for p in logs.iterdir()} >= {"worker.log", "jira-emulator.log"}
    assert f"logs     {logs}" in text
    # The demo can be joined (issue 14 item 7): its key is kept 0600 in the data dir and decrypts the
    # sources' credentials; the printed export lines make another shell use the demo database.
    key_file = tmp_path / "d" / "demo-secret.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    keyring = Keyring(bytes.fromhex(key_file.read_text()))
    assert all(keyring.decrypt(enc, context=f"source:{sid}") for sid, enc in credentials)
    assert key_file.read_text() not in text  # the key itself is never printed
    assert joined.returncode == 0, joined.stderr
    assert joined_tokens == ["joined-shell"]
    assert re.search(r"^A groups: group:", text, re.M) and re.search(r"^B groups: group:", text, re.M)


def _join_from_another_shell(text: str, database: str) -> subprocess.CompletedProcess[str]:
    """Run the demo's printed export lines in a fresh shell, then a command against the demo database."""
    exports = [line for line in text.splitlines() if line.startswith("export HARVESTER_")]
    assert len(exports) == 3 and database in exports[1]
    script = "\n".join([*exports, f"{sys.executable} -m app.cli token create --name joined-shell"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_")}
    return subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_a_demo_whose_runs_fail_says_why_and_exits_non_zero(server_url: str, tmp_path: Path) -> None:
    """A worker that cannot build its embedder fails every run; the demo names the reason and ends."""
    database = f"hv_demo_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_")}
    env.update(
        HARVESTER_DATABASE_URL=with_dbname(server_url, "postgres"),
        HARVESTER_DATA_DIR=str(tmp_path / "d"),
        # Valid configuration, broken at job time: this key cannot be sent as an HTTP header.
        HARVESTER_EMBEDDER="openai",
        HARVESTER_EMBEDDER_URL="http://127.0.0.1:9/v1",
        HARVESTER_EMBEDDER_MODEL="any",
        HARVESTER_EMBEDDER_DIMENSION="384",
        HARVESTER_EMBEDDER_API_KEY="demo-key-€-canary",
        COLUMNS="200",
    )
    try:
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", "demo", "--issues", "6", "--pages", "4", "--messages", "10",
             "--database", database],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(database)))
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    failed = [line for line in out.stdout.splitlines() if "ended failed" in line]
    assert len(failed) == 3, out.stdout[-3000:]
    assert all("the job broke: ValueError" in line and "API key" in line for line in failed), failed
    assert "demo-key-€-canary" not in out.stdout + out.stderr
