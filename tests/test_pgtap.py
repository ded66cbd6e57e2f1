"""Runs the pgTAP suite in tests_sql/ with pg_prove against a freshly migrated database.

Every .test.sql file rolls its transaction back, so the shared migrated database stays as migrated.
pgTAP is installed into its own schema (not public) because the database is shared with other suites
that read the schema; pg_prove finds it through search_path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from app.queries import chunks, dead_letters, entities, runs, webhooks

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "tests_sql"
INSTALL_HINT = "run scripts/install-pgtap.sh (pgTAP files for the embedded server and pg_prove)"


def _ensure_pgtap(url: str) -> str:
    """Creates the pgtap extension if missing and returns the schema that holds it."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace"
                " where e.extname = 'pgtap'"
            ).fetchone()
            if row is not None:
                return str(row[0])
            conn.execute("create schema if not exists tap")
            # Test files switch to harvester_api / harvester_worker and still call pgTAP functions.
            conn.execute("grant usage on schema tap to public")
            conn.execute("create extension pgtap schema tap")
            return "tap"
    except psycopg.errors.FeatureNotSupported as exc:
        pytest.fail(f"pgTAP is not installed on the server ({exc}); {INSTALL_HINT}")
    except psycopg.errors.UndefinedFile as exc:
        pytest.fail(f"pgTAP is not installed on the server ({exc}); {INSTALL_HINT}")


# Queries the pgTAP files exercise through their result rows, wrapped as SQL functions in schema
# tap_queries from the generated modules' own text, so a test can never drift from the query the app runs.
QUERY_FUNCTIONS: list[tuple[str, str, str, str]] = [
    (
        "upsert_entities",
        entities.UPSERT_ENTITIES,
        "source_id bigint, rows json, run_id bigint default null",
        "table (id bigint, source_type text, source_entity_id text, inserted boolean)",
    ),
    ("upsert_chunks", chunks.UPSERT_CHUNKS, "rows jsonb", "void"),
    ("upsert_dead_letters", dead_letters.UPSERT_DEAD_LETTERS, "source_id bigint, run_id bigint, rows jsonb", "void"),
    ("delete_dead_letters", dead_letters.DELETE_DEAD_LETTERS, "source_id bigint, rows jsonb", "void"),
    ("record_delivery", webhooks.RECORD_DELIVERY, "source_id bigint, delivery_id text", "text"),
    ("prune_deliveries", webhooks.PRUNE_DELIVERIES, "", "void"),
    ("lock_webhook_pending", webhooks.LOCK_WEBHOOK_PENDING, "lock_class integer, source_id bigint", "void"),
    ("add_webhook_pending", webhooks.ADD_WEBHOOK_PENDING, "source_id bigint, items jsonb", "void"),
    (
        "take_webhook_pending",
        webhooks.TAKE_WEBHOOK_PENDING,
        "source_id bigint, max_items integer",
        "table (source_type text, source_entity_id text)",
    ),
    ("webhook_pending_exists", webhooks.WEBHOOK_PENDING_EXISTS, "source_id bigint", "boolean"),
    ("drop_webhook_pending", webhooks.DROP_WEBHOOK_PENDING, "source_id bigint", "void"),
    (
        "claim_run",
        runs.CLAIM_RUN,
        "id bigint, worker_id text, stale_after integer, grace integer",
        "table (id bigint, source_id bigint, mode text, trigger text, scope jsonb, checkpoint jsonb,"
        " entities_done integer, entities_total integer, error_count integer, api_calls integer,"
        " rate_limited integer, deliveries integer, options jsonb)",
    ),
    ("hold_run_lease", runs.HOLD_RUN_LEASE, "id bigint, generation integer, worker_id text", "table (id bigint)"),
    ("heartbeat", runs.HEARTBEAT, "id bigint, generation integer, worker_id text", "void"),
    ("release_run_lease", runs.RELEASE_RUN_LEASE, "id bigint, generation integer, worker_id text", "void"),
    (
        "save_progress",
        runs.SAVE_PROGRESS,
        "id bigint, generation integer, worker_id text, checkpoint jsonb, entities_done integer,"
        " entities_total integer, error_count integer, api_calls integer, rate_limited integer",
        "void",
    ),
    (
        "finish_run",
        runs.FINISH_RUN,
        "id bigint, generation integer, worker_id text, state text, error_detail text, entities_done integer,"
        " entities_total integer, error_count integer, api_calls integer, rate_limited integer",
        "void",
    ),
]


def _install_query_functions(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create schema if not exists tap_queries")
        conn.execute("grant usage on schema tap_queries to public")
        for name, text, args, returns in QUERY_FUNCTIONS:
            # %(param)s -> the function's argument, qualified so it never loses to a column of that name.
            body = re.sub(r"%\((\w+)\)s", rf"{name}.\1", text).replace("%%", "%")
            conn.execute(
                sql.SQL("create or replace function tap_queries.{}({}) returns {} language sql as {}").format(
                    sql.Identifier(name), sql.SQL(args), sql.SQL(returns), sql.Literal(body)
                )
            )
        # One item through the page statement, for the files that park items one at a time.
        conn.execute(
            "create or replace function tap_queries.upsert_dead_letter(source_id bigint, run_id bigint,"
            " source_type text, source_entity_id text, reason text, error_detail text) returns void language sql"
            " as $$select tap_queries.upsert_dead_letters(source_id, run_id, jsonb_build_array(jsonb_build_object("
            "'source_type', source_type, 'source_entity_id', source_entity_id, 'reason', reason,"
            " 'error_detail', error_detail)))$$"
        )


def _pg_prove_command(url: str) -> tuple[list[str], dict[str, str]]:
    """pg_prove arguments and environment for a libpq URL.

    pg_prove passes --dbname to psql as a plain name, so a socket directory given as ?host=... in a URL
    would be lost: the URL is split into --host/--port/--dbname/--username, the password goes to PGPASSWORD.
    """
    params = conninfo_to_dict(url)
    cmd = ["pg_prove", "--recurse", "--failures", "--ext", ".sql"]
    for option, key in (("--host", "host"), ("--port", "port"), ("--dbname", "dbname"), ("--username", "user")):
        value = params.get(key)
        if value:
            cmd += [option, str(value)]
    env = dict(os.environ)
    password = params.get("password")
    if password:
        env["PGPASSWORD"] = str(password)
    return cmd, env


def test_pgtap_suite_passes(migrated_db_url: str) -> None:
    files = sorted(SUITE.rglob("*.test.sql"))
    assert len(files) > 0, f"no pgTAP files found under {SUITE}"
    if shutil.which("pg_prove") is None:
        pytest.fail(f"pg_prove is not on PATH; {INSTALL_HINT}")

    schema = _ensure_pgtap(migrated_db_url)
    _install_query_functions(migrated_db_url)
    cmd, env = _pg_prove_command(migrated_db_url)
    env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} -c search_path=public,{schema}".strip()
    proc = subprocess.run(
        [*cmd, str(SUITE.relative_to(REPO))],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    print(proc.stdout)
    print(proc.stderr)

    assert proc.returncode == 0, f"pg_prove failed with exit code {proc.returncode}; see its output above"
    # pg_prove silently skips files it does not recognise: every .test.sql file must have run.
    ran = re.search(r"^Files=(\d+), Tests=(\d+)", proc.stdout, re.MULTILINE)
    assert ran is not None, "pg_prove printed no summary line"
    assert int(ran.group(1)) == len(files), f"pg_prove ran {ran.group(1)} files, {len(files)} exist"
    assert int(ran.group(2)) > 0
