"""Bad credentials end in a clear refusal or a failed run, and no rendering of one ever leaks (issue 11,
Deliver 4). Real server process, real CLI processes, a Jira emulator that echoes the request's
Authorization header back in its error bodies in one shape at a time (raw, bytes repr, base64, URL-encoded,
JSON, a dict repr, the Basic password alone).

Each canary credential carries the marker ``7Q2w9``; the test searches every API response, the server log,
CLI output, captured log records and the ``error_detail`` columns of ``sync_runs`` and ``dead_letters`` for
the marker and for the canary's encoded forms (computed here, independently of the code under test).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.pipeline.run import execute_run
from app.queries import sources as sq
from app.secrets import Keyring
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import Request, Response, RunningEmulator, serve
from tests.api.conftest import Server
from tests.conftest import REPO

MARKER = "7Q2w9"
CANARIES = {
    "plain": f"CanaryPlain{MARKER}xx",
    "url-special": f"Canary/+=&?%Url{MARKER}xx",
    "quotes": f"Canary\"'\\Quote{MARKER}xx",
    "basic": f"ops@example.com:CanaryBasic{MARKER}xx",
}
SHAPES = ("raw", "bytes-repr", "base64", "url", "json", "dict-repr", "password")
SCENARIOS = ("401", "500", "403-item")


class EchoingJira(JiraEmulator):
    """A Jira whose every error body quotes the request's Authorization header in ``shape``."""

    shape = "raw"

    def handle(self, req: Request) -> Response:
        resp = super().handle(req)
        if resp.status < 400 or req.path.startswith("/_emulator"):
            return resp
        auth = req.headers.get("authorization", "")
        scheme, _, cred = auth.partition(" ")
        password = cred
        if scheme.lower() == "basic":
            password = base64.b64decode(cred).decode().partition(":")[2]
        echo = {
            "raw": auth,
            "bytes-repr": repr(auth.encode()),
            "base64": base64.b64encode(auth.encode()).decode(),
            "url": urllib.parse.quote(auth, safe=""),
            "json": json.dumps({"authorization": auth}),
            "dict-repr": repr({"authorization": auth}),
            "password": password,
        }[self.shape]
        return Response(resp.status, f"denied; you sent {echo} (status {resp.status})".encode(), resp.headers)


def forms(canary: str) -> set[str]:
    """What a leak of ``canary`` looks like in text: the marker, and its encodings that hide the marker."""
    header = f"Bearer {canary}"
    out = {MARKER}
    if ":" in canary:
        header = "Basic " + base64.b64encode(canary.encode()).decode()
        out.add(base64.b64encode(canary.encode()).decode()[:16])
    for value in (canary, header):
        out.add(base64.b64encode(value.encode()).decode()[:16])
        out.add(base64.b64encode(value.encode()).decode()[4:20])
        out.add(base64.urlsafe_b64encode(value.encode()).decode()[:16])
    return out


def leaks(text: str, canary: str) -> list[str]:
    return sorted(f for f in forms(canary) if f in text)


@pytest.fixture(scope="module")
def echo_jira() -> Iterator[tuple[EchoingJira, RunningEmulator]]:
    app = EchoingJira(3, seed=3, token="unset")
    running = serve(app, "127.0.0.1", 0)
    try:
        yield app, running
    finally:
        running.stop()


def _source(api: Server, base_url: str, name: str, credential: str) -> int:
    with api.client() as c:
        r = c.post(
            "/api/v1/sources",
            json={"name": name, "connector_type": "jira", "base_url": base_url, "credential": credential},
        )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _texts(api: Server, source_id: int, run_id: int) -> list[str]:
    """Everything a client or an operator can read about this run."""
    with api.client() as c:
        got = [
            c.get(f"/api/v1/runs/{run_id}").text,
            c.get(f"/api/v1/sources/{source_id}/runs").text,
            c.get(f"/api/v1/sources/{source_id}").text,
            c.get(f"/api/v1/sources/{source_id}/dead-letters").text,
        ]
    with psycopg.connect(api.db_url) as conn:
        rows = conn.execute(
            "select error_detail from sync_runs where source_id = %s union all "
            "select error_detail from dead_letters where source_id = %s",
            (source_id, source_id),
        ).fetchall()
    return got + [r[0] or "" for r in rows]


@pytest.mark.parametrize("canary_kind", sorted(CANARIES))
def test_no_rendering_of_a_canary_leaks_through_any_response_log_or_table(
    api: Server,
    echo_jira: tuple[EchoingJira, RunningEmulator],
    caplog: pytest.LogCaptureFixture,
    canary_kind: str,
) -> None:
    app, running = echo_jira
    canary = CANARIES[canary_kind]
    password = canary.partition(":")[2] or canary
    source_id = _source(api, running.base_url, f"canary-{canary_kind}", canary)
    keyring = Keyring(bytes.fromhex(api.secret_key))
    redacted_somewhere = 0
    caplog.set_level(logging.DEBUG)
    for scenario in SCENARIOS:
        for shape in SHAPES:
            app.shape = shape
            app.faults.clear()
            app.token = "not-the-canary" if scenario == "401" else password
            body: dict[str, Any] = {"mode": "full"}
            if scenario == "500":
                app.faults.add({"status": 500, "ratio": 1.0, "retry_after": 0})
            if scenario == "403-item":
                app.faults.add({"status": 403, "keys": [app.key_of(1)]})
                body = {"scope": {"kind": "items", "items": [{"source_type": "ticket", "source_entity_id": "10001"}]}}
            with api.client() as c:
                r = c.post(f"/api/v1/sources/{source_id}/runs", json=body)
            assert r.status_code == 202, r.text
            run_id = int(r.json()["id"])
            with psycopg.connect(api.db_url, autocommit=True) as conn:
                outcome = execute_run(conn, run_id, worker_id="canary-test", keyring=keyring)
            assert outcome.state in ("failed", "succeeded"), (scenario, shape, outcome)
            texts = _texts(api, source_id, run_id)
            for text in texts:
                assert not leaks(text, canary), (scenario, shape, leaks(text, canary), text[:400])
            redacted_somewhere += sum("***" in t or "••••" in t for t in texts)
    app.faults.clear()
    assert not leaks(caplog.text, canary)
    assert not leaks(api.logs(), canary)
    assert not leaks(b"".join(api.bodies).decode(errors="replace"), canary)
    # The echoes did reach the stored details (and were redacted there): the test can see a leak.
    assert redacted_somewhere >= len(SCENARIOS) * len(SHAPES)


def _cli(api: Server, tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": api.db_url,
        "HARVESTER_SECRET_KEY": api.secret_key,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        **extra,
    }
    env.pop("HARVESTER_SOURCE_CREDENTIAL", None)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("listing", ["thread", "process"])
def test_cli_sync_output_and_log_lines_carry_no_canary(
    api: Server, echo_jira: tuple[EchoingJira, RunningEmulator], tmp_path: Path, listing: str
) -> None:
    """With ``process`` the source is listed in a child process (decision 135): the answers that echo the
    credential are read, and the errors built, in the child; its log lines go to the same stderr."""
    app, running = echo_jira
    extra = {"HARVESTER_SOURCE_PROCESS": "on"} if listing == "process" else {}
    for kind in ("basic", "quotes"):
        canary = CANARIES[kind]
        source_id = _source(api, running.base_url, f"cli-canary-{kind}-{listing}", canary)
        for shape in ("raw", "bytes-repr", "base64", "password"):
            app.shape, app.token = shape, "not-the-canary"
            done = _cli(api, tmp_path, "-v", "sync", str(source_id), "--mode", "full", **extra)
            assert done.returncode == 1, done.stdout + done.stderr
            assert "failed" in done.stdout and "***" in done.stdout, done.stdout
            assert not leaks(done.stdout + done.stderr, canary), (shape, done.stdout, done.stderr[-2000:])
            assert "Traceback" not in done.stderr
            if listing == "process":
                assert "source processes: forkserver ready" in done.stderr, done.stderr[-2000:]


UNSENDABLE = {
    "non-ASCII": "tok…€…en-0001",
    "newline": "token-0001\n",
    "carriage return": "tok\ren-0001",
    "NUL": "tok\x00en-0001",
    "tab": "tok\ten-0001",
    "DEL": "tok\x7fen-0001",
    "leading space": " token-0001",
}


@pytest.mark.parametrize("kind", sorted(UNSENDABLE))
def test_an_unsendable_credential_is_refused_at_input(
    api: Server, echo_jira: tuple[EchoingJira, RunningEmulator], tmp_path: Path, kind: str
) -> None:
    _, running = echo_jira
    value = UNSENDABLE[kind]
    name = f"unsendable-{kind.replace(' ', '-')}"
    body = {"name": name, "connector_type": "jira", "base_url": running.base_url, "credential": value}
    with api.client() as c:
        created = c.post("/api/v1/sources", json=body)
        assert created.status_code == 422, created.text
        assert created.json()["field"] == "credential"
        ok_id = _source(api, running.base_url, f"{name}-ok", "token-0001")
        patched = c.patch(f"/api/v1/sources/{ok_id}", json={"credential": value})
        assert patched.status_code == 422 and patched.json()["field"] == "credential", patched.text
        assert all(s["name"] != name for s in c.get("/api/v1/sources", params={"limit": 500}).json()["items"])
    if "\x00" in value:
        return  # an argv entry cannot hold a NUL byte
    done = _cli(
        api, tmp_path, "sources", "add", "--name", f"{name}-cli", "--connector", "jira",
        "--base-url", running.base_url, "--credential", value,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--credential" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_stored_unsendable_credential_fails_the_run_with_a_reason(
    api: Server, echo_jira: tuple[EchoingJira, RunningEmulator], tmp_path: Path
) -> None:
    """A value an older version accepted: the run ends failed with a reason, the next run can start."""
    _, running = echo_jira
    source_id = _source(api, running.base_url, "stored-unsendable", "placeholder-0001")
    keyring = Keyring(bytes.fromhex(api.secret_key))
    for value in ("tok…€…en-0001", "token-0001\n"):
        with psycopg.connect(api.db_url) as conn:
            sq.set_source_secrets(
                conn,
                id=source_id,
                credential_enc=keyring.encrypt(value, context=f"source:{source_id}"),
                webhook_secret_enc=None,
            )
        done = _cli(api, tmp_path, "sync", str(source_id), "--mode", "full")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr
        assert "failed" in done.stdout and "credential cannot be sent" in done.stdout, done.stdout
        with psycopg.connect(api.db_url) as conn:
            states = conn.execute(
                "select state, error_detail from sync_runs where source_id = %s order by id", (source_id,)
            ).fetchall()
        assert all(state == "failed" for state, _ in states), states
        assert "credential cannot be sent" in (states[-1][1] or "")
    assert len(states) == 2  # the second sync was not refused as "already has an active run"


def test_an_unusable_base_url_is_refused_at_input_and_fails_a_stored_run(api: Server, tmp_path: Path) -> None:
    body = {"name": "bad-url", "connector_type": "jira", "base_url": "http://[::1", "credential": "token-0001"}
    with api.client() as c:
        r = c.post("/api/v1/sources", json=body)
        assert r.status_code == 422 and r.json()["field"] == "base_url", r.text
    source_id = _source(api, "http://127.0.0.1:9", "stored-bad-url", "token-0001")
    with psycopg.connect(api.db_url) as conn:
        conn.execute("update sources set base_url = 'http://[::1' where id = %s", (source_id,))
    done = _cli(api, tmp_path, "sync", str(source_id), "--mode", "full")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "base_url is not a valid URL" in done.stdout, done.stdout
    with psycopg.connect(api.db_url) as conn:
        states = conn.execute("select state from sync_runs where source_id = %s", (source_id,)).fetchall()
    assert states == [("failed",)]
