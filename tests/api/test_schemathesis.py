"""Schemathesis against the served OpenAPI, every operation, with an admin token: no 5xx, and every
response conforms to the documented status codes, content types and schemas. Bounded: 20 examples per
operation, a fixed seed and a few steps per stateful scenario, so the run is short and repeatable.

Phases: examples, coverage (negative bodies, wrong types, missing fields), fuzzing, and stateful: links
between operations are inferred by Schemathesis (dependency analysis of the response schemas and
Location headers), so a created source's id feeds the reads, patches, runs and deletes that follow.

Every 5xx is a defect, counted twice: by the ``not_a_server_error`` check and, independently, from the
HAR recording of every request sent (issue 11, Deliver 6). The numbers are printed (pytest -s)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg

from app.api.auth import new_token, token_hash
from app.queries import tokens as tq
from tests.api.conftest import Server, SourceFactory
from tests.conftest import REPO

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def test_fuzzed_operations_never_fail_and_match_the_schema(
    api: Server, make_source: SourceFactory, tmp_path: Path
) -> None:
    for i in range(3):  # ids 1..3 exist, so fuzzed path ids reach real rows too
        make_source(name=f"fuzz-{i}", webhook_enabled=True, webhook_secret="fuzz-secret-000000")
    report = tmp_path / "schemathesis.json"
    har = tmp_path / "schemathesis.har"
    config = tmp_path / "schemathesis.toml"
    config.write_text("[phases.stateful]\nmax-steps = 8\n")
    st = Path(sys.executable).with_name("st")
    proc = subprocess.run(
        [
            str(st),
            "--config-file",
            str(config),
            "run",
            f"{api.base_url}/schema/openapi.json",
            "--header",
            f"Authorization: Bearer {api.token('admin')}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing,stateful",
            # Fuzzed ids 1..3 would revoke this run's own token and leave the rest of it answering 401;
            # revokeToken is exercised by the stateful test below, on tokens its scenarios created.
            "--exclude-operation-id",
            "revokeToken",
            "--max-examples",
            "20",
            "--seed",
            "20261130",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--report-json-path",
            str(report),
            "--report-har-path",
            str(har),
            "--report",
            "json,har",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert "unhandled" not in api.logs()
    assert REPO.exists() and report.exists()
    summary = json.loads(report.read_text())
    print("schemathesis summary:", json.dumps(summary)[:2000])
    assert summary["phases"]["stateful"]["status"] == "success", summary["phases"]
    entries = json.loads(har.read_text())["log"]["entries"]
    statuses = Counter(int(e["response"]["status"]) for e in entries)
    server_errors = {code: n for code, n in statuses.items() if code >= 500}
    print(f"schemathesis sent {len(entries)} requests; statuses {dict(sorted(statuses.items()))}")
    assert len(entries) > 1000
    assert not server_errors, server_errors


def test_stateful_phase_follows_the_documented_links(api: Server, tmp_path: Path) -> None:
    """Stateful only, through the links the document declares (app/api/openapi_doc.py LINKS): a source
    created by ``createSource`` is read, listed and run by id, and a started run is read and cancelled by
    id. Bounded: at most 12 steps per scenario, 30 scenarios, a fixed seed. The HAR shows it happened."""
    report = tmp_path / "stateful.json"
    har = tmp_path / "stateful.har"
    config = tmp_path / "schemathesis.toml"
    # Inference off: only the declared links drive the scenarios; valid data only, so a scenario gets past
    # its first step (the other phases of the test above send the invalid data).
    config.write_text(
        "[phases.stateful]\nmax-steps = 12\n\n[phases.stateful.inference]\nalgorithms = []\n\n"
        '[phases.stateful.generation]\nmode = "positive"\n'
    )
    st = Path(sys.executable).with_name("st")
    token = new_token()  # its own: whatever ran before on this server may have revoked the shared one
    with psycopg.connect(api.db_url) as conn:
        tq.create_token(
            conn, name="stateful-links", scope="admin", token_hash=token_hash(token), expires_at=None, principals=None
        )
    proc = subprocess.run(
        [
            str(st),
            "--config-file",
            str(config),
            "run",
            f"{api.base_url}/schema/openapi.json",
            "--header",
            f"Authorization: Bearer {token}",
            "--checks",
            CHECKS,
            "--phases",
            "stateful",
            "--max-examples",
            "30",
            "--seed",
            "20261130",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--report-json-path",
            str(report),
            "--report-har-path",
            str(har),
            "--report",
            "json,har",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    summary = json.loads(report.read_text())
    assert summary["phases"]["stateful"]["status"] == "success", summary["phases"]
    entries = json.loads(har.read_text())["log"]["entries"]
    created_sources: set[str] = set()
    started_runs: set[str] = set()
    followed: Counter[str] = Counter()
    by_operation: Counter[str] = Counter()
    for e in entries:
        method, url, status = e["request"]["method"], e["request"]["url"], int(e["response"]["status"])
        path = url.split("?", 1)[0].removeprefix(api.base_url)
        text = e["response"].get("content", {}).get("text") or "{}"
        if method == "POST" and path == "/api/v1/sources" and status == 201:
            created_sources.add(str(json.loads(text)["id"]))
        elif method == "POST" and path.endswith("/runs") and status == 202:
            started_runs.add(str(json.loads(text)["id"]))
        parts = path.split("/")
        if len(parts) >= 5 and parts[3] == "sources" and parts[4] in created_sources and method != "POST":
            followed["source"] += 1
        if len(parts) >= 5 and parts[3] == "sources" and parts[4] in created_sources and method == "POST":
            followed["start_run"] += 1
        if len(parts) >= 5 and parts[3] == "runs" and parts[4] in started_runs:
            followed["run"] += 1
        shape = "/".join("{id}" if p.isdigit() else p for p in parts)
        by_operation[f"{method} {shape} {status}"] += 1
    statuses = Counter(int(e["response"]["status"]) for e in entries)
    print(
        f"stateful: {len(entries)} requests; statuses {dict(sorted(statuses.items()))}; "
        f"created sources {len(created_sources)}, started runs {len(started_runs)}, followed {dict(followed)}"
    )
    print("by operation:", dict(sorted(by_operation.items())))
    assert not {code for code in statuses if code >= 500}
    assert created_sources and followed["source"] > 0 and followed["start_run"] > 0
    assert started_runs and followed["run"] > 0
