"""The `harvester` CLI (issue 14 §6): every malformed argument is one line naming it (exit 2, never a
traceback or an internal name); ``--json`` prints the API's field names; ``sources add`` tests the
connection first (auth failed / unreachable / scope not visible; ``--no-check`` skips); and
``POST /api/v1/sources/test`` answers the same reasons for a draft source without saving it.

Real processes throughout: the API server of tests/api/conftest.py, the Jira emulator over HTTP on
127.0.0.1, and ``python -m app.cli`` subprocesses against the API's database.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from app.cli import build_cli, main
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve
from connectors.emulators.slack import SlackEmulator
from tests.api.conftest import Server, free_port

REPO = Path(__file__).resolve().parents[2]
TOKEN = "cli-emulator-token-0001"
# What a user must never see: a traceback, an exception class, a Python-side name.
INTERNAL = re.compile(r"Traceback|[A-Z][a-z]+Error\b|Exception|Namespace|NoneType|<class|updated_from|as_json|argparse")


@pytest.fixture(scope="module")
def jira() -> Iterator[RunningEmulator]:
    running = serve(JiraEmulator(6, token=TOKEN), "127.0.0.1", 0)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def source(api: Server, jira: RunningEmulator) -> Iterator[dict[str, Any]]:
    """One Jira source registered through the API (removed afterwards)."""
    with api.client() as c:
        made = c.post(
            "/api/v1/sources",
            json={"name": "cli-walk", "connector_type": "jira", "base_url": jira.base_url, "credential": TOKEN},
        )
        assert made.status_code == 201, made.text
        yield made.json()
        c.delete(f"/api/v1/sources/{made.json()['id']}")


def cli(api: Server, tmp_path: Path, *args: str, embedder: str = "none") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": api.db_url,
        "HARVESTER_SECRET_KEY": api.secret_key,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_EMBEDDER": embedder,
    }
    env.pop("HARVESTER_SOURCE_CREDENTIAL", None)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("harvester: error: "), done.stderr
    assert not INTERNAL.search(done.stderr + done.stdout), done.stderr
    return lines[0]


S = "cli-walk"  # the source the fixture registers
BAD = [
    # (arguments, what the one line must name)
    (("bogus",), "bogus"),
    (("db",), "Missing command"),
    (("db", "bogus"), "bogus"),
    (("--log-level", "loud", "db", "status"), "--log-level"),
    (("sources", "add"), "--connector"),
    (("sources", "add", "--name", "x", "--connector", "gitlab", "--base-url", "http://h"), "--connector"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "example.com"), "--base-url"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "http://"), "--base-url"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "http://h", "--filters", "{bad json}"),
     "--filters"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "http://h", "--filters", "[1]"),
     "--filters"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "http://h", "--filters", '{"nope": true}'),
     "--filters"),
    (("sources", "add", "--name", "x", "--connector", "jira", "--base-url", "http://h", "--auth-method", "magic"),
     "--auth-method"),
    (("sources", "list", "--jsn"), "--jsn"),
    (("sources", "show"), "SOURCE"),
    (("sources", "show", "no-such-source"), "no-such-source"),
    (("sources", "show", "99999999999999999999"), "99999999999999999999"),
    (("runs", "show", "99999999999999999999"), "RUN_ID"),
    (("sources", "update", S), "nothing to change"),
    (("sources", "update", S, "--state", "gone"), "--state"),
    (("sources", "update", S, "--base-url", "ftp://x"), "--base-url"),
    (("sources", "update", S, "--filters", '{"nope": true}'), "--filters"),
    (("sources", "remove", S), "--yes"),
    (("sources", "test"), "SOURCE"),
    (("runs", "list", "--cursor", "bogus"), "cursor"),
    (("runs", "list", "--state", "bogus"), "--state"),
    (("dlq", "list", S, "--cursor", "bogus"), "cursor"),
    (("runs", "list", S, "--limit", "0"), "--limit"),
    (("runs", "show", "abc"), "RUN_ID"),
    (("runs", "show", "987654"), "RUN_ID"),
    (("runs", "cancel", "0"), "RUN_ID"),
    (("dlq", "list", S, "--reason", "bogus"), "--reason"),
    (("dlq", "list", "no-such-source"), "no-such-source"),
    (("dlq", "retry"), "SOURCE"),
    (("dlq", "retry", S), "no dead letters"),
    (("settings", "get", "nope"), "KEY"),
    (("settings", "set", "sync_interval"), "VALUE"),
    (("settings", "set", "sync_interval", "{bad"), "VALUE"),
    (("settings", "set", "sync_interval", "0"), "sync_interval"),
    (("settings", "set", "directory_ttl", "3601"), "directory_ttl"),
    (("settings", "set", "lock_wait_max", "0"), "lock_wait_max"),
    (("settings", "set", "response_max_mib", "4097"), "response_max_mib"),
    (("settings", "set", "response_max_seconds", "0"), "response_max_seconds"),
    (("settings", "set", "nope", "1"), "nope"),
    (("settings", "set", "sync_interval", "60", "--version", "x"), "--version"),
    (("sync",), "SOURCE"),
    (("sync", S, "--mode", "sometimes"), "--mode"),
    (("search", "q", "-k", "0"), "-k"),
    (("search", "q", "-k", "many"), "-k"),
    (("search", "q", "--updated-from", "yesterday"), "--updated-from"),
    (("search", "q", "--type", "bogus"), "--type"),
    (("reembed", "--batch", "0"), "--batch"),
    (("token", "create"), "--name"),
    (("token", "create", "--name", "x", "--scope", "god"), "--scope"),
    (("token", "create", "--name", "x", "--expires-in", "soon"), "expires"),
    (("token", "revoke", "--id", "x"), "--id"),
    (("worker", "--concurrency", "0"), "--concurrency"),
    (("serve", "--port", "99999"), "--port"),
    (("demo", "--issues", "0"), "--issues"),
]


@pytest.mark.parametrize(("args", "named"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_every_command_refuses_a_bad_argument_in_one_line_naming_it(
    api: Server, source: dict[str, Any], tmp_path: Path, args: tuple[str, ...], named: str
) -> None:
    done = cli(api, tmp_path, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in one_error_line(done)
    assert done.stdout == ""


def _keys(value: Any) -> Any:
    """The field names of a JSON document, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys(value[0])] if value else []
    return None


def test_json_output_has_the_apis_field_names(api: Server, source: dict[str, Any], tmp_path: Path) -> None:
    sid = source["id"]
    with api.client() as c:
        run = c.post(f"/api/v1/sources/{sid}/runs", json={"mode": "full"})
        assert run.status_code == 202, run.text
        run_id = run.json()["id"]
        pairs = [
            (("sources", "list", "--json"), "/api/v1/sources"),
            (("sources", "show", S, "--json"), f"/api/v1/sources/{sid}"),
            (("runs", "list", S, "--json"), f"/api/v1/sources/{sid}/runs"),
            (("runs", "show", str(run_id), "--json"), f"/api/v1/runs/{run_id}"),
            (("dlq", "list", S, "--json"), f"/api/v1/sources/{sid}/dead-letters"),
            (("settings", "get", "--json"), "/api/v1/settings"),
            (("token", "list", "--json"), "/api/v1/tokens"),
        ]
        try:
            for args, path in pairs:
                done = cli(api, tmp_path, *args)
                assert done.returncode == 0, done.stderr
                from_cli = json.loads(done.stdout)
                from_api = c.get(path).json()
                assert _keys(from_cli) == _keys(from_api), args
                if isinstance(from_api, dict) and "id" in from_api:
                    assert from_cli["id"] == from_api["id"]
            # runs cancel answers what POST /runs/{id}/cancel answers (the run is queued: no worker here)
            cancelled = cli(api, tmp_path, "runs", "cancel", str(run_id), "--json")
            assert cancelled.returncode == 0, cancelled.stderr
            assert json.loads(cancelled.stdout)["state"] == "cancelled"
            assert c.get(f"/api/v1/runs/{run_id}").json()["state"] == "cancelled"
            again = cli(api, tmp_path, "runs", "cancel", str(run_id))
            assert again.returncode == 2 and "already cancelled" in one_error_line(again)
        finally:
            c.post(f"/api/v1/runs/{run_id}/cancel")
    shown = cli(api, tmp_path, "sources", "show", S, "--json")
    assert TOKEN not in shown.stdout  # the credential leaves as a mask only


def test_human_output_is_a_table_and_secrets_stay_masked(api: Server, source: dict[str, Any], tmp_path: Path) -> None:
    listed = cli(api, tmp_path, "sources", "list")
    assert listed.returncode == 0, listed.stderr
    head, *rows = listed.stdout.splitlines()
    assert head.split()[:3] == ["id", "name", "connector"] and any(S in r for r in rows)
    shown = cli(api, tmp_path, "sources", "show", str(source["id"]))
    assert shown.returncode == 0 and "base_url" in shown.stdout and TOKEN not in shown.stdout


def test_settings_set_then_get_round_trips_and_bumps_the_version(api: Server, tmp_path: Path) -> None:
    before = json.loads(cli(api, tmp_path, "settings", "get", "--json").stdout)
    done = cli(api, tmp_path, "settings", "set", "watchdog_silence", "7200", "--json")
    assert done.returncode == 0, done.stderr
    after = json.loads(done.stdout)
    assert after["values"]["watchdog_silence"] == 7200 and after["version"] > before["version"]
    value = cli(api, tmp_path, "settings", "get", "watchdog_silence")
    assert value.stdout.strip() == "7200"
    stale = cli(api, tmp_path, "settings", "set", "watchdog_silence", "7300", "--version", str(before["version"]))
    assert stale.returncode == 2 and "--version" in one_error_line(stale)
    cli(api, tmp_path, "settings", "set", "watchdog_silence", json.dumps(before["values"]["watchdog_silence"]))


def _names(api: Server) -> set[str]:
    with api.client() as c:
        return {s["name"] for s in c.get("/api/v1/sources", params={"limit": 500}).json()["items"]}


@pytest.mark.parametrize(
    ("case", "reason"),
    [("wrong-token", "auth failed"), ("closed-port", "unreachable"), ("hidden-project", "scope not visible")],
)
def test_sources_add_tests_the_connection_and_saves_nothing_when_it_fails(
    api: Server, jira: RunningEmulator, tmp_path: Path, case: str, reason: str
) -> None:
    base, credential, extra = jira.base_url, TOKEN, []
    if case == "wrong-token":
        credential = "not-the-token-42"
    elif case == "closed-port":
        base = f"http://127.0.0.1:{free_port()}"
    else:
        extra = ["--scope", "NOPE"]
    name = f"cli-{case}"
    args = ["sources", "add", "--name", name, "--connector", "jira", "--base-url", base, "--credential", credential]
    done = cli(api, tmp_path, *args, *extra)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_error_line(done)
    assert f"connection test failed: {reason}" in line and "--no-check" in line
    assert credential not in line
    if case == "hidden-project":
        assert "NOPE" in line
    assert name not in _names(api)
    # --no-check saves it anyway
    saved = cli(api, tmp_path, *args, *extra, "--no-check")
    assert saved.returncode == 0, saved.stderr
    source_id = int(saved.stdout.strip())
    tested = cli(api, tmp_path, "sources", "test", name, "--json")
    assert tested.returncode == 1
    assert json.loads(tested.stdout)["reason"] == reason.replace(" ", "_")
    removed = cli(api, tmp_path, "sources", "remove", str(source_id), "--yes")
    assert removed.returncode == 0, removed.stderr
    assert name not in _names(api)


def test_sources_add_saves_a_source_whose_connection_works_and_update_changes_it(
    api: Server, jira: RunningEmulator, tmp_path: Path
) -> None:
    done = cli(
        api, tmp_path, "sources", "add", "--name", "cli-good", "--connector", "jira",
        "--base-url", jira.base_url, "--credential", TOKEN, "--scope", "ALPHA",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    source_id = int(done.stdout.strip())
    try:
        tested = cli(api, tmp_path, "sources", "test", "cli-good")
        assert tested.returncode == 0 and ": ok:" in tested.stdout, tested.stdout + tested.stderr
        updated = cli(api, tmp_path, "sources", "update", "cli-good", "--state", "paused", "--json")
        assert updated.returncode == 0, updated.stderr
        assert json.loads(updated.stdout)["state"] == "paused"
        with api.client() as c:
            assert c.get(f"/api/v1/sources/{source_id}").json()["state"] == "paused"
    finally:
        cli(api, tmp_path, "sources", "remove", str(source_id), "--yes")


def test_the_api_tests_a_draft_source_without_saving_it(api: Server, jira: RunningEmulator) -> None:
    draft = {"name": "api-draft", "connector_type": "jira", "base_url": jira.base_url, "credential": TOKEN}
    secret = "draft-webhook-secret-xyz"
    with api.client() as c:
        ok = c.post("/api/v1/sources/test", json={**draft, "webhook_secret": secret})
        assert ok.status_code == 200, ok.text
        assert ok.json()["ok"] is True and ok.json()["reason"] == "ok"
        wrong = c.post("/api/v1/sources/test", json={**draft, "credential": "wrong-credential-77"})
        assert wrong.json() == {**wrong.json(), "ok": False, "reason": "auth_failed"}
        assert "wrong-credential-77" not in wrong.text
        hidden = c.post("/api/v1/sources/test", json={**draft, "scope_mode": "selected", "scope_list": ["NOPE"]})
        assert hidden.json()["reason"] == "scope_not_visible" and "NOPE" in hidden.json()["detail"]
        down = c.post("/api/v1/sources/test", json={**draft, "base_url": f"http://127.0.0.1:{free_port()}"})
        assert down.json()["reason"] == "unreachable"
        for body, field in (
            ({**draft, "base_url": None}, "base_url"),
            ({**draft, "base_url": "example.com"}, "base_url"),
            ({**draft, "connector_type": "gitlab"}, "connector_type"),
            ({**draft, "content_filters": {"nope": True}}, "content_filters.nope"),
        ):
            bad = c.post("/api/v1/sources/test", json=body)
            assert bad.status_code == 422, bad.text
            assert bad.json().get("field") == field, bad.text
        assert "api-draft" not in {s["name"] for s in c.get("/api/v1/sources", params={"limit": 500}).json()["items"]}
    with api.client("read") as r:
        assert r.post("/api/v1/sources/test", json=draft).status_code == 403
    assert TOKEN not in "".join(b.decode(errors="replace") for b in api.bodies)
    assert secret not in api.logs() and TOKEN not in api.logs()


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], bool]]:
    for name, command in group.commands.items():
        path = (*prefix, name)
        is_group = isinstance(command, click.Group)
        yield path, is_group
        if isinstance(command, click.Group):
            yield from _paths(command, path)


def test_every_command_has_help_and_a_group_without_its_subcommand_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths = list(_paths(build_cli()))
    assert len(paths) > 20
    for path, is_group in paths:
        assert main([*path, "--help"]) == 0, path
        assert "Usage: harvester " + " ".join(path) in capsys.readouterr().out
        if is_group:
            assert main(list(path)) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert err == [f"harvester: error: Missing command. (see 'harvester {' '.join(path)} --help')"]


@pytest.mark.parametrize(
    ("connector", "visible", "hidden"),
    [
        ("confluence", ["ENG"], "NOPE"),
        ("slack", ["#general", "C0RANDOM"], "#no-such-channel"),
    ],
)
def test_scope_visibility_is_checked_for_confluence_spaces_and_slack_channels(
    api: Server, connector: str, visible: list[str], hidden: str
) -> None:
    app: ConfluenceEmulator | SlackEmulator
    app = ConfluenceEmulator(pages=4, token=TOKEN) if connector == "confluence" else SlackEmulator(token=TOKEN)
    with serve(app, "127.0.0.1", 0) as running, api.client() as c:
        draft = {
            "name": f"draft-{connector}", "connector_type": connector, "base_url": running.base_url,
            "credential": TOKEN, "scope_mode": "selected", "scope_list": visible,
        }  # fmt: skip
        ok = c.post("/api/v1/sources/test", json=draft)
        assert ok.status_code == 200 and ok.json()["reason"] == "ok", ok.text
        hidden_too = c.post("/api/v1/sources/test", json={**draft, "scope_list": [*visible, hidden]})
        assert hidden_too.json()["reason"] == "scope_not_visible", hidden_too.text
        assert hidden in hidden_too.json()["detail"] and visible[0] not in hidden_too.json()["detail"]


def test_the_local_embedders_graph_derived_by_one_command_is_read_by_the_next(api: Server, tmp_path: Path) -> None:
    # Decision 148: the first process derives the int8 graph (~2 s of CPU) and keeps it in the data
    # directory; the next reads it. Both answer the same search.
    first = cli(api, tmp_path, "search", "replica lag", "--user", "nobody@example.com", "--json", embedder="local")
    second = cli(api, tmp_path, "search", "replica lag", "--user", "nobody@example.com", "--json", embedder="local")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "int8 graph derived in" in first.stderr and "int8 graph read from" not in first.stderr
    assert "int8 graph read from" in second.stderr and "int8 graph derived" not in second.stderr
    assert json.loads(first.stdout) == json.loads(second.stdout)
    (saved,) = (tmp_path / "data" / "models").glob("all-MiniLM-L6-v2-int8-dq-onnx-*.onnx")
    assert str(saved) in second.stderr
