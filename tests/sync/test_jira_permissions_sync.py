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


def test_an_issue_whose_people_show_an_account_id_only_is_visible_to_that_account(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    """Issue 13 §6: on Jira Cloud users carry ``accountId`` only (no ``name``/``key``, e-mail hidden); the
    reporter, granted Browse Projects by the scheme's ``reporter`` holder, finds the issue by account id."""
    jira.app.emails_hidden = True
    source_id = add_source(conn, keyring, jira, scope=["ALPHA", "BETA"])
    embedder = HashEmbedder()
    run_id = start_run(conn, source_id, mode="full", trigger="manual")

    outcome = execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, chunks=VectorStage(embedder))

    assert outcome.state == "succeeded"
    rows = probe.execute(
        "select natural_key, acl_principals from live_entities where source_id = %s and status <> 'draft'",
        (source_id,),
    ).fetchall()
    assert rows and not any("@" in p for r in rows for p in r[1])  # no e-mail anywhere: account ids only
    key, acl = rows[0]
    index = next(i for i in range(30) if jira.key(i) == key)
    reporter = str(jira.app.record(index)["reporter"]["accountId"])
    assert f"user:accountid:{reporter}" in acl
    found = search(conn, embedder, query="issue", principal=Principal(user=f"accountid:{reporter}"), k=50)
    assert key in {h.natural_key for h in found}
