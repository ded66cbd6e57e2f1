"""Schemathesis against the served OpenAPI, every operation, with an admin token: no 5xx, and every
response conforms to the documented status codes, content types and schemas. Bounded: 20 examples per
operation and a fixed seed, so the run is short and repeatable. The number of generated cases is printed
(pytest -s) and asserted to be substantial."""

from __future__ import annotations

import json
import subprocess
import sys
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
    st = Path(sys.executable).with_name("st")
    proc = subprocess.run(
        [
            str(st),
            "run",
            f"{api.base_url}/schema/openapi.json",
            "--header",
            f"Authorization: Bearer {api.token('admin')}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
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
            "--report",
            "json",
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
