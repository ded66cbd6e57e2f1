"""The served OpenAPI document is complete enough for a client generator (issue 14 §2, STYLE habit 7).

``openapi-python-client`` (a dev dependency) generates a typed client from ``/schema/openapi.json`` of a
real ``harvester serve`` process into a temp dir, refusing any warning; the test imports it and creates a
source, reads it back through the ``Location`` header and finds it by paging the list, all through the
generated code against the same server."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import JIRA_TOKEN, Server


def _generate(api: Server, tmp_path: Path) -> Any:
    doc = tmp_path / "openapi.json"
    doc.write_bytes(httpx.get(f"{api.base_url}/schema/openapi.json", timeout=30).content)
    package = tmp_path / "harvester_client"
    bindir = Path(sys.executable).parent
    proc = subprocess.run(
        [
            str(bindir / "openapi-python-client"),
            "generate",
            "--path",
            str(doc),
            "--meta",
            "none",
            "--output-path",
            str(package),
            "--fail-on-warning",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        # The generator formats its output with ruff, found on PATH (the venv's, a dev dependency too).
        env={**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    sys.path.insert(0, str(tmp_path))
    return importlib.import_module("harvester_client")


def test_a_generated_client_creates_and_lists_sources(api: Server, tmp_path: Path) -> None:
    client_pkg = _generate(api, tmp_path)
    try:
        create_source = importlib.import_module("harvester_client.api.sources.create_source")
        list_sources = importlib.import_module("harvester_client.api.sources.list_sources")
        get_source = importlib.import_module("harvester_client.api.sources.get_source")
        models = importlib.import_module("harvester_client.models")
        client = client_pkg.AuthenticatedClient(base_url=api.base_url, token=api.token("admin"))
        body = models.SourceCreate(
            name="generated-client-source",
            connector_type=models.SourceCreateConnectorType.JIRA,  # an enum: the installed connectors
            base_url="http://127.0.0.1:9",
            credential=JIRA_TOKEN,
            reconcile_window=models.WindowIn(day=models.WindowInDay.SATURDAY, time="22:30"),
        )
        created = create_source.sync_detailed(client=client, body=body)
        again = create_source.sync_detailed(client=client, body=body)
        source = created.parsed
        got = get_source.sync(client=client, source_id=source.id)
        found = []
        page = list_sources.sync(client=client, limit=1)
        while True:
            found += [s.name for s in page.items]
            if not page.next_cursor:
                break
            page = list_sources.sync(client=client, limit=1, cursor=page.next_cursor)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "harvester_client" or m.startswith("harvester_client.")]:
            del sys.modules[name]
    assert created.status_code == 201 and isinstance(source, models.SourceOut)
    assert created.headers["location"] == f"/api/v1/sources/{source.id}"
    assert source.reconcile_window.day == "saturday" and source.credential.set_ is True
    assert source.schedule.reconcile_window.inherited is False
    assert again.status_code == 409 and isinstance(again.parsed, models.Problem) and again.parsed.field == "name"
    assert got.name == "generated-client-source"
    assert "generated-client-source" in found
