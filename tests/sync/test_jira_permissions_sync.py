"""A Jira sync on a real-shaped permission scheme (issue 13, item 1): project roles, application roles,
issue people and a holder type nobody can resolve. Every issue the scheme grants is visible to
someone, the unresolved holder is named in the run's error_detail, and a person who reaches the
project only through a project role finds its issues in search."""

from __future__ import annotations

from typing import Any

import psycopg

from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.sources import start_run
from app.vector.search import Principal, search
from app.vector.stage import VectorStage
from tests.sync.conftest import Jira, add_source
from tests.vector.fakes import HashEmbedder


def test_role_based_scheme_sync_makes_issues_searchable_through_a_project_role(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    jira.app.service_desk_holder = True
    source_id = add_source(conn, keyring, jira, scope=["ALPHA", "BETA"])
    embedder = HashEmbedder()
    run_id = start_run(conn, source_id, mode="full", trigger="manual")

    outcome = execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, chunks=VectorStage(embedder))

    assert outcome.state == "succeeded"
    rows = probe.execute(
        "select natural_key, acl_principals, status from live_entities where source_id = %s", (source_id,)
    ).fetchall()
    assert rows and all(r[1] for r in rows)  # visible to at least one principal: 100 %
    detail = probe.execute("select error_detail from sync_runs where id = %s", (run_id,)).fetchone()
    assert detail is not None and "sd.customer.portal.only" in (detail[0] or "")

    # acc-000 is an accountId-only actor of ALPHA's Developers role; nothing else grants them ALPHA.
    final_alpha = [r[0] for r in rows if r[0].startswith("ALPHA-") and r[2] != "draft"]
    assert final_alpha
    role_member = Principal(user="accountid:acc-000")
    found = search(conn, embedder, query="issue", principal=role_member, k=50)
    assert {h.natural_key for h in found} & set(final_alpha)
    stranger = Principal(user="accountid:nobody", groups=("group:jira:outsiders",))
    assert search(conn, embedder, query="issue", principal=stranger, k=50) == []
