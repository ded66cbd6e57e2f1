"""`harvester serve` and `harvester worker` run with least privilege and never run DDL (issue 9 §5).

The logins are the ones docs/operations.md recommends: members of harvester_api / harvester_worker only.
Real processes against a migrated database, a Jira emulator on 127.0.0.1, one API call that queues a
sync and the worker that runs it. A schema that is not current, or a login without the grants, stops
either process at start with one line naming what to do.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.api.auth import new_token, token_hash
from app.db.migrate import load_migrations, migrate
from app.queries import tokens as tq
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from tests.api.conftest import start_server
from tests.conftest import REPO

JIRA_TOKEN = "emulator-token-0001"
HOOK_SECRET = "least-privilege-hook-secret-0145"
ISSUES = 12


def _as_user(url: str, user: str, password: str) -> str:
    params = conninfo_to_dict(url)
    params.update(user=user, password=password)
    return make_conninfo("", **params)


class Logins:
    """Login roles created for one test (cluster-wide objects, so dropped afterwards)."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.names: list[str] = []

    def create(self, member_of: str | None) -> str:
        name = f"hv_login_{uuid.uuid4().hex[:10]}"
        password = uuid.uuid4().hex
        dbname = conninfo_to_dict(self.db_url)["dbname"]
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            conn.execute(sql.SQL("create role {} login password {}").format(sql.Identifier(name), password))
            self.names.append(name)
            if member_of is not None:
                conn.execute(sql.SQL("grant {} to {}").format(sql.Identifier(member_of), sql.Identifier(name)))
            conn.execute(
                sql.SQL("grant connect on database {} to {}").format(sql.Identifier(str(dbname)), sql.Identifier(name))
            )
        return _as_user(self.db_url, name, password)

    def drop(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            for name in self.names:
                conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(name)))
                conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))


@pytest.fixture()
def logins(fresh_db_url: str) -> Iterator[Logins]:
    made = Logins(fresh_db_url)
    try:
        yield made
    finally:
        made.drop()


@pytest.fixture()
def jira() -> Iterator[RunningEmulator]:
    running = serve(JiraEmulator(ISSUES, seed=3, token=JIRA_TOKEN), "127.0.0.1", 0)
    try:
        yield running
    finally:
        running.stop()


def _env(db_url: str, tmp: Path, secret_key: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_")},
        "HARVESTER_DATABASE_URL": db_url,
        "HARVESTER_SECRET_KEY": secret_key,
        "HARVESTER_DATA_DIR": str(tmp / "data"),
        "HARVESTER_EMBEDDER": "none",
    }


def _start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1", "--no-periodic"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _run_state(owner_url: str, run_id: int) -> tuple[str, str | None]:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute("select state, error_detail from sync_runs where id = %s", (run_id,)).fetchone()
    assert row is not None
    return str(row[0]), row[1]


def test_api_and_worker_logins_serve_a_call_and_run_a_sync(
    fresh_db_url: str, logins: Logins, jira: RunningEmulator, tmp_path: Path
) -> None:
    api_url = logins.create("harvester_api")
    worker_url = logins.create("harvester_worker")
    api = start_server(api_url, tmp_path, {"HARVESTER_EMBEDDER": "none"})
    worker = _start_worker(_env(worker_url, tmp_path, api.secret_key), tmp_path / "worker.log")
    try:
        token = new_token()
        with psycopg.connect(fresh_db_url) as conn:  # the owner issues tokens (`harvester token create`)
            tq.create_token(
                conn, name="least-privilege", scope="admin", token_hash=token_hash(token), expires_at=None,
                principals=None,
            )
        with httpx.Client(base_url=api.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            created = http.post(
                "/api/v1/sources",
                json={
                    "name": "Jira least privilege",
                    "connector_type": "jira",
                    "base_url": jira.base_url,
                    "credential": JIRA_TOKEN,
                    "webhook_enabled": True,
                    "webhook_secret": HOOK_SECRET,
                },
            )
            assert created.status_code == 201, created.text
            started = http.post(f"/api/v1/sources/{created.json()['id']}/runs", json={"mode": "full"})
            assert started.status_code == 202, started.text
        run_id = int(started.json()["id"])

        deadline = time.monotonic() + 120
        state, detail = _run_state(fresh_db_url, run_id)
        while state in ("queued", "running") and time.monotonic() < deadline:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text(errors="replace")
            time.sleep(0.3)
            state, detail = _run_state(fresh_db_url, run_id)

        assert (state, detail) == ("succeeded", None), (tmp_path / "worker.log").read_text(errors="replace")
        with psycopg.connect(fresh_db_url) as conn:
            loaded = conn.execute("select count(*) from entities").fetchone()
        assert loaded is not None and loaded[0] >= ISSUES

        # A webhook delivery: the API login adds its item to the pending set and defers the job, the worker
        # login takes the set into a run (decision 145).
        body = json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": "10003", "fields": {}}}).encode()
        signature = hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        hook = httpx.post(
            f"{api.base_url}/api/v1/webhooks/{created.json()['id']}",
            content=body,
            headers={"content-type": "application/json", "X-Hub-Signature": f"sha256={signature}"},
            timeout=30,
        )
        assert hook.status_code == 202, hook.text
        deadline = time.monotonic() + 120
        webhook_run = None
        while time.monotonic() < deadline:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text(errors="replace")
            with psycopg.connect(fresh_db_url) as conn:
                webhook_run = conn.execute(
                    "select state, error_detail, scope from sync_runs where trigger = 'webhook'"
                ).fetchone()
            if webhook_run is not None and webhook_run[0] not in ("queued", "running"):
                break
            time.sleep(0.3)
        assert webhook_run is not None, (tmp_path / "worker.log").read_text(errors="replace")
        assert webhook_run[:2] == ("succeeded", None), (tmp_path / "worker.log").read_text(errors="replace")
        assert webhook_run[2]["items"] == [{"source_type": "ticket", "source_entity_id": "10003"}]
        assert "permission denied" not in api.logs()
        assert "permission denied" not in (tmp_path / "worker.log").read_text(errors="replace")
    finally:
        _stop(worker)
        api.stop()


def _one_line_failure(args: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["worker"]])
def test_a_pending_migration_stops_serve_and_worker_with_one_line(
    empty_db_url: str, tmp_path: Path, command: list[str]
) -> None:
    versions = [m.version for m in load_migrations()]
    migrate(empty_db_url, tmp_path / "backups", target=versions[-2])

    line = _one_line_failure(command, _env(empty_db_url, tmp_path, os.urandom(32).hex()))

    assert f"1 migration(s) pending: {versions[-1]}" in line
    assert "run `harvester db migrate`" in line
    with psycopg.connect(empty_db_url) as conn:
        applied: Any = conn.execute("select max(version) from schema_migrations").fetchone()
    assert applied[0] == versions[-2], "serve/worker must not migrate"


def test_a_never_migrated_database_stops_serve_with_one_line(empty_db_url: str, tmp_path: Path) -> None:
    line = _one_line_failure(["serve", "--port", "0"], _env(empty_db_url, tmp_path, os.urandom(32).hex()))

    assert "has no Harvester schema" in line and "harvester db migrate" in line
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("select to_regclass('public.schema_migrations')").fetchone() == (None,)


def test_a_changed_trigger_file_record_stops_the_worker(fresh_db_url: str, tmp_path: Path) -> None:
    with psycopg.connect(fresh_db_url) as conn:
        conn.execute("update schema_trigger_files set checksum = repeat('0', 64) where name = '100_timestamps.sql'")

    line = _one_line_failure(["worker"], _env(fresh_db_url, tmp_path, os.urandom(32).hex()))

    assert "trigger file(s) not current: 100_timestamps.sql" in line and "harvester db migrate" in line


@pytest.mark.parametrize(
    ("command", "needs"), [(["serve", "--port", "0"], "harvester_api"), (["worker"], "harvester_worker")]
)
def test_a_login_without_the_role_is_refused_with_one_line(
    fresh_db_url: str, logins: Logins, tmp_path: Path, command: list[str], needs: str
) -> None:
    bare = logins.create(member_of=None)

    line = _one_line_failure(command, _env(bare, tmp_path, os.urandom(32).hex()))

    assert f"grant {needs} to hv_login_" in line
    assert "Traceback" not in line


def test_the_worker_login_may_not_serve_the_api(fresh_db_url: str, logins: Logins, tmp_path: Path) -> None:
    worker_url = logins.create("harvester_worker")

    line = _one_line_failure(["serve", "--port", "0"], _env(worker_url, tmp_path, os.urandom(32).hex()))

    assert "is not a member of harvester_api" in line
