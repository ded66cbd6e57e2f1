"""A real `harvester serve` process on 127.0.0.1 against a real database, plus a Jira emulator.

Every test talks HTTP to the server (httpx); the server's stdout/stderr go to a file the secrets test
searches. Tokens are stored the way `harvester token create` stores them (SHA-256 only).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.api.auth import new_token, token_hash
from app.queries import tokens as tq
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from tests.conftest import REPO, TEMPLATE, _create, _drop, with_dbname

JIRA_TOKEN = "emulator-token-0001"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    base_url: str
    db_url: str
    secret_key: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    tokens: dict[str, str] = field(default_factory=dict)
    bodies: list[bytes] = field(default_factory=list)  # every response body seen by client(); secrets test

    def cli_env(self, data_dir: Path) -> dict[str, str]:
        """The whole environment of a one-shot CLI command against this server's database, with a data dir
        of its own (it audits into <data_dir>/audit.jsonl; the default is the user's home)."""
        return {
            "HARVESTER_DATABASE_URL": self.db_url,
            "HARVESTER_SECRET_KEY": self.secret_key,
            "HARVESTER_DATA_DIR": str(data_dir),
            "PATH": "/usr/bin:/bin",
        }

    def token(self, scope: str = "admin") -> str:
        if scope not in self.tokens:
            token = new_token()
            with psycopg.connect(self.db_url) as conn:
                tq.create_token(
                    conn,
                    name=f"test-{scope}-{uuid.uuid4().hex[:6]}",
                    scope=scope,
                    token_hash=token_hash(token),
                    expires_at=None,
                    principals=None,
                )
            self.tokens[scope] = token
        return self.tokens[scope]

    def client(self, scope: str | None = "admin") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token(scope)}"} if scope else {}

        def keep(response: httpx.Response) -> None:
            response.read()
            self.bodies.append(response.content)

        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30, event_hooks={"response": [keep]})

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start_server(db_url: str, tmp: Path, extra_env: dict[str, str] | None = None) -> Server:
    port = free_port()
    secret_key = os.urandom(32).hex()
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": db_url,
        "HARVESTER_SECRET_KEY": secret_key,
        "HARVESTER_DATA_DIR": str(tmp / "data"),
        **(extra_env or {}),
    }
    log_path = tmp / f"server-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--access-log"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", db_url, secret_key, proc, log_path)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{server.logs()}")
        try:
            httpx.get(f"{server.base_url}/health", timeout=2)
            return server
        except httpx.TransportError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"server did not start:\n{server.logs()}") from None
            time.sleep(0.1)


@pytest.fixture(scope="module")
def module_db_url(server_url: str, template_url: str) -> Iterator[str]:
    """One migrated database for a module's shared server (tests use distinct source names)."""
    name = f"hv_api_{uuid.uuid4().hex[:10]}"
    _create(server_url, name, template=TEMPLATE)
    yield with_dbname(server_url, name)
    _drop(server_url, name)


@pytest.fixture(scope="module")
def api(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The module's server process."""
    server = start_server(module_db_url, tmp_path_factory.mktemp("api"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def fresh_api(fresh_db_url: str, tmp_path: Path) -> Iterator[Server]:
    """A server of its own on a fresh database (tests that read the whole log or count everything)."""
    server = start_server(fresh_db_url, tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def jira() -> Iterator[RunningEmulator]:
    running = serve(JiraEmulator(20, seed=1, token=JIRA_TOKEN), "127.0.0.1", 0)
    try:
        yield running
    finally:
        running.stop()


SourceFactory = Callable[..., dict[str, Any]]


@pytest.fixture()
def make_source(api: Server, jira: RunningEmulator) -> SourceFactory:
    """POST a Jira source pointing at the emulator; returns the response body."""

    def make(**fields: Any) -> dict[str, Any]:
        body = {
            "name": f"jira-{uuid.uuid4().hex[:8]}",
            "connector_type": "jira",
            "base_url": jira.base_url,
            "credential": JIRA_TOKEN,
            **fields,
        }
        with api.client() as c:
            r = c.post("/api/v1/sources", json=body)
        assert r.status_code == 201, r.text
        created: dict[str, Any] = r.json()
        assert r.headers["location"] == f"/api/v1/sources/{created['id']}"
        return created

    return make


def job_count(db_url: str, task: str, source_id: int | None = None) -> int:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("select args from procrastinate_jobs where task_name = %s", (task,)).fetchall()
    return sum(1 for (args,) in rows if source_id is None or args.get("source_id") == source_id)
