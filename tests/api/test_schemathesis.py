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
