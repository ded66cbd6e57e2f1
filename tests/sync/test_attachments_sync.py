"""Attachments as text on every connector (issue 12 §3), end to end: emulator over HTTP -> connector ->
execute_run with the vector stage -> PostgreSQL -> search.

A text attachment and a PDF become sections of their entity's text and are found by their content;
an attachment over the cap and one of an unknown type stay links with the reason in the metadata and
in the run's error_detail; the run succeeds, nothing goes to the dead-letter queue, nothing is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.sources import start_run
from app.vector.search import Principal, search
from app.vector.stage import VectorStage
from connectors.attachments import MAX_BYTES
from connectors.base import MAX_NOTES
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.slack import SlackEmulator
from tests.sync.conftest import Jira
from tests.sync.conftest import add_source as add_jira_source
from tests.sync.connectors_conftest import TOKEN, Emulator, add_source, dead_letters, entity, served
from tests.vector.fakes import HashEmbedder

PAGE = "100004"  # ENG page index 4 of the seed-5 world: unrestricted, readable by confluence-users
ENG_READER = Principal(user="someone@demo.example", groups=("group:confluence:confluence-users",))


@pytest.fixture()
def confluence() -> Iterator[Emulator]:
    with served(ConfluenceEmulator(pages=12, seed=5, token=TOKEN)) as emulator:
        yield emulator


@pytest.fixture()
def slack() -> Iterator[Emulator]:
    with served(SlackEmulator(messages=20, seed=3, token=TOKEN)) as emulator:
        yield emulator


def _full_with_vectors(
    conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, embedder: HashEmbedder
) -> dict[str, Any]:
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, chunks=VectorStage(embedder))
    row = conn.execute("select state, error_count, error_detail from sync_runs where id = %s", (run_id,)).fetchone()
    assert row is not None
    deleted = conn.execute(
        "select count(*) from entities where source_id = %s and deleted_at is not null", (source_id,)
    ).fetchone()
    return {"state": row[0], "errors": row[1], "detail": row[2] or "", "deleted": deleted[0] if deleted else None}


def _found(conn: psycopg.Connection[Any], embedder: HashEmbedder, query: str, who: Principal) -> set[str]:
    hits = search(conn, embedder, query=query, principal=who, k=20, hybrid=True)
    return {h.natural_key or "" for h in hits if "text" in h.matched_by}


def _attach(confluence: Emulator, page: str, **spec: Any) -> None:
    confluence.call("POST", f"/_emulator/pages/{page}/attachments", json=spec)


def test_confluence_text_and_pdf_attachments_are_searchable_and_the_rest_stay_links_with_a_reason(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    _attach(confluence, PAGE, name="runbook.md", media="text/markdown", text="Restart the zanzibarquokka relay.")
    _attach(confluence, PAGE, name="design.pdf", media="application/pdf", pdf_text="Pelicanrollout in three waves")
    _attach(confluence, PAGE, name="huge.log", media="text/plain", size=MAX_BYTES + 1)
    _attach(confluence, PAGE, name="blob.qx", media="application/x-quux-blob", size=10)
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")
    embedder = HashEmbedder()

    run = _full_with_vectors(conn, keyring, source_id, embedder)

    assert run["state"] == "succeeded" and run["errors"] == 0 and run["deleted"] == 0
    assert "attachment huge.log kept as a link: over the 256 KiB cap" in run["detail"]
    assert "unknown type application/x-quux-blob" in run["detail"]
    assert dead_letters(probe, source_id) == {}
    page = entity(probe, source_id, PAGE)
    assert page is not None and page["deleted_at"] is None
    assert "Attachment runbook.md:\nRestart the zanzibarquokka relay." in page["body"]
    assert "Attachment design.pdf:\nPelicanrollout in three waves" in page["body"]
    by_name = {a["title"]: a for a in page["metadata"]["attachments"]}
    assert by_name["runbook.md"]["inline"] and by_name["design.pdf"]["inline"]
    assert by_name["huge.log"]["text_skipped"].startswith("over the 256 KiB cap")
    assert by_name["blob.qx"]["text_skipped"] == "unknown type application/x-quux-blob"
    assert all(a["url"] for a in by_name.values())  # every attachment stays a link
    assert _found(probe, embedder, "zanzibarquokka", ENG_READER) == {PAGE}
    assert _found(probe, embedder, "pelicanrollout", ENG_READER) == {PAGE}
    assert _found(probe, embedder, "zanzibarquokka", Principal(user="stranger@elsewhere.example")) == set()


def test_a_run_keeps_a_bounded_number_of_notes_and_counts_the_rest_in_its_detail(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    # One note per attachment kept as a link: a source with many of them used to grow the run's notes (and
    # the scan that kept them unique) with its size; the detail showed only its first 2,000 characters.
    over = MAX_NOTES + 15
    for n in range(over):
        _attach(confluence, PAGE, name=f"huge-{n:03}.log", media="text/plain", size=MAX_BYTES + 1)
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")

    run = _full_with_vectors(conn, keyring, source_id, HashEmbedder())

    assert run["state"] == "succeeded" and run["errors"] == 0
    assert "attachment huge-000.log kept as a link: over the 256 KiB cap" in run["detail"]
    more = re.search(r"; and (\d+) more notes$", run["detail"])
    assert more is not None, run["detail"]
    assert int(more.group(1)) >= over - MAX_NOTES, run["detail"]
    assert len(run["detail"]) <= 2000
    # Only the notes are bounded: every attachment still says, on its entity, why it is a link.
    page = entity(probe, source_id, PAGE)
    assert page is not None
    skipped = [a for a in page["metadata"]["attachments"] if a["title"].startswith("huge-")]
    assert len(skipped) == over and all(a["text_skipped"].startswith("over the 256 KiB cap") for a in skipped)


def test_a_new_confluence_attachment_refetches_its_page_on_the_next_incremental_run(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")
    embedder = HashEmbedder()
    assert _full_with_vectors(conn, keyring, source_id, embedder)["state"] == "succeeded"
    _attach(confluence, PAGE, name="later.txt", media="text/plain", text="The okapimigration starts Monday.")

    run_id = start_run(conn, source_id, mode="incremental", trigger="schedule")
    execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, chunks=VectorStage(embedder))

    page = entity(probe, source_id, PAGE)
    assert page is not None and "okapimigration" in page["body"]
    assert _found(probe, embedder, "okapimigration", ENG_READER) == {PAGE}


def test_slack_text_and_pdf_files_are_searchable_and_the_rest_stay_links_with_a_reason(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, slack: Emulator
) -> None:
    files = [
        {"name": "query.sql", "mimetype": "text/x-sql", "text": "select narwhalindex from shards;"},
        {"name": "report.pdf", "mimetype": "application/pdf", "pdf_text": "Axolotlcapacity grew 40 percent"},
        {"name": "dump.csv", "mimetype": "text/csv", "size": MAX_BYTES + 10},
        {"name": "model.qx", "mimetype": "application/x-quux-blob", "size": 10},
        {"name": "shot.png", "mimetype": "image/png", "size": 10},
    ]
    posted = slack.call("POST", "/_emulator/messages", json={"channel": "C0GENERAL", "text": "files", "files": files})
    source_id = add_source(conn, keyring, "slack", slack.base_url)
    embedder = HashEmbedder()

    run = _full_with_vectors(conn, keyring, source_id, embedder)

    assert run["state"] == "succeeded" and run["errors"] == 0 and run["deleted"] == 0
    assert "attachment dump.csv kept as a link: over the 256 KiB cap" in run["detail"]
    assert "unknown type application/x-quux-blob" in run["detail"]
    assert "image/png" not in run["detail"]  # an image is an ordinary link
    assert dead_letters(probe, source_id) == {}
    msg = entity(probe, source_id, posted["id"])
    assert msg is not None
    assert "Attachment query.sql:\nselect narwhalindex from shards;" in msg["body"]
    assert "Attachment report.pdf:\nAxolotlcapacity grew 40 percent" in msg["body"]
    by_name = {f["name"]: f for f in msg["metadata"]["files"]}
    assert by_name["query.sql"]["inline"] and by_name["report.pdf"]["inline"]
    assert by_name["dump.csv"]["text_skipped"].startswith("over the 256 KiB cap")
    assert by_name["model.qx"]["text_skipped"] == "unknown type application/x-quux-blob"
    assert by_name["shot.png"]["text_skipped"] == "type image/png is not text or PDF"
    team = str(slack.app.team_id)
    member = Principal(user="someone@demo.example", groups=(f"group:slack:{team}:members",))
    natural = posted["id"].replace(":", "/")
    assert _found(probe, embedder, "narwhalindex", member) == {natural}
    assert _found(probe, embedder, "axolotlcapacity", member) == {natural}


def test_slack_file_download_needs_the_token(slack: Emulator) -> None:
    files = [{"name": "a.txt", "mimetype": "text/plain", "text": "secret plan"}]
    slack.call("POST", "/_emulator/messages", json={"channel": "C0GENERAL", "text": "x", "files": files})
    fid = next(iter(slack.app.files))
    url = f"/files-pri/{slack.app.team_id}-{fid}/download/a.txt"
    assert b"secret plan" not in slack.control.get(url).content
    assert slack.control.get(url, headers={"Authorization": f"Bearer {TOKEN}"}).content == b"secret plan"


def test_jira_pdf_attachment_is_read_within_the_cap(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    key = jira.key(3)
    jira.app.attach(3, "plan.pdf", "application/pdf", "Wombatfailover drill on Friday")
    source_id = add_jira_source(conn, keyring, jira)
    embedder = HashEmbedder()

    run = _full_with_vectors(conn, keyring, source_id, embedder)

    assert run["state"] == "succeeded" and run["errors"] == 0
    issue = entity(probe, source_id, jira.id(3))
    assert issue is not None and "Attachment plan.pdf:\nWombatfailover drill on Friday" in issue["body"]
    assert key


def test_an_attachment_read_waits_out_a_429_storm_longer_than_the_attempt_budget(jira: Jira) -> None:
    """A "slow down" answer is retried for the rate-limit patience, not a fixed number of attempts: a rate
    limit never turns into a failed run or a missing text (issue 12 §3 and §7)."""
    from connectors.atlassian import auth_headers
    from connectors.base import CallStats
    from connectors.http import SourceHttp
    from connectors.jira import CONNECTOR as JIRA

    aid = jira.app.attach(3, "plan.pdf", "application/pdf", "Storm-proof text")
    jira.fault(status=429, count=6, retry_after=0)
    stats = CallStats()
    http = SourceHttp(
        jira.base_url,
        headers=auth_headers(f"bot@example.com:{TOKEN}"),
        stats=stats,
        errors=JIRA.manifest.errors,
        max_attempts=3,
        rate_limit_patience=30,
    )
    try:
        body, _, why = http.get_bytes_capped(f"/secure/attachment/{aid}/plan.pdf", MAX_BYTES)
    finally:
        http.close()

    assert why == "" and body is not None and body.startswith(b"%PDF")
    assert stats.rate_limited == 6


def test_a_confluence_page_with_more_attachments_than_the_expansion_holds_reads_them_all(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, confluence: Emulator
) -> None:
    for n in range(30):  # the children.attachment expansion holds 25; the rest come from child/attachment
        _attach(confluence, PAGE, name=f"part{n:02d}.txt", media="text/plain", text=f"Fragment marker{n:02d}")
    source_id = add_source(conn, keyring, "confluence", confluence.base_url + "/wiki")

    run = _full_with_vectors(conn, keyring, source_id, HashEmbedder())

    assert run["state"] == "succeeded"
    page = entity(probe, source_id, PAGE)
    assert page is not None
    assert "Fragment marker29" in page["body"] and "Fragment marker00" in page["body"]
    assert len([a for a in page["metadata"]["attachments"] if a["title"].startswith("part")]) == 30
