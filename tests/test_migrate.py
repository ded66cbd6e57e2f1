"""`harvester db migrate` / `db status`: concurrency, backups, checksums, permissions, bad input (issue 2)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from app.db.migrate import APPLICATION_NAME, MIGRATE_LOCK_KEY, load_migrations, migrate, server_problem
from app.errors import HarvesterError
from app.queries.migrations import ServerRequirementsRow, server_requirements

HARVESTER = [sys.executable, "-m", "app.cli"]
REPO = Path(__file__).resolve().parents[1]


def _applied(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("select version from schema_migrations order by version")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_")}
    env.update(extra)
    return env


def test_fresh_database_gets_every_migration_and_no_backup(empty_db_url: str, tmp_path: Path) -> None:
    result = migrate(empty_db_url, tmp_path / "backups")

    assert result.applied == [m.version for m in load_migrations()]
    assert _applied(empty_db_url) == result.applied
    assert result.backup is None
    assert not list((tmp_path / "backups").glob("*"))


def test_second_migrate_is_a_no_op(fresh_db_url: str, tmp_path: Path) -> None:
    result = migrate(fresh_db_url, tmp_path / "backups")

    assert result.applied == []
    assert result.backup is None


def test_two_processes_migrating_an_old_database_apply_once_with_one_backup(empty_db_url: str, tmp_path: Path) -> None:
    versions = [m.version for m in load_migrations()]
    old = versions[1]
    migrate(empty_db_url, tmp_path / "unused", target=old)
    data_dir = tmp_path / "data"
    env = _env(HARVESTER_DATABASE_URL=empty_db_url, HARVESTER_DATA_DIR=str(data_dir))

    # Hold the migration lock so both processes are provably waiting for it at the same time.
    with psycopg.connect(empty_db_url, autocommit=True) as holder:
        holder.execute("select pg_advisory_lock(%s)", (MIGRATE_LOCK_KEY,))
        procs = [
            subprocess.Popen([*HARVESTER, "db", "migrate"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            waiting = holder.execute(
                "select count(*) from pg_stat_activity where application_name = %s and datname = current_database()",
                (APPLICATION_NAME,),
            ).fetchone()
            if waiting and waiting[0] == 2:
                break
            time.sleep(0.05)
        holder.execute("select pg_advisory_unlock(%s)", (MIGRATE_LOCK_KEY,))
        outputs = [p.communicate(timeout=120) for p in procs]

    assert [p.returncode for p in procs] == [0, 0], outputs
    assert _applied(empty_db_url) == versions
    backups = sorted((data_dir / "backups").glob("*.dump"))
    assert len(backups) == 1
    assert backups[0].name.endswith(f"-schema-v{old}.dump")
    assert stat.S_IMODE(backups[0].stat().st_mode) == 0o600
    assert sum("applied " in out.decode() for out, _ in outputs) == 1


def test_backup_is_a_restorable_pg_dump_of_the_old_schema(empty_db_url: str, tmp_path: Path) -> None:
    versions = [m.version for m in load_migrations()]
    migrate(empty_db_url, tmp_path / "b", target=versions[0])
    result = migrate(empty_db_url, tmp_path / "b")
    assert result.backup is not None

    from app.db.embedded import pg_bin

    listing = subprocess.run([pg_bin("pg_restore"), "--list", result.backup], capture_output=True, check=True)
    assert b"TABLE public sources" in listing.stdout
    assert b"TABLE public entities" not in listing.stdout


def test_changed_applied_migration_is_refused_and_nothing_is_applied(empty_db_url: str, tmp_path: Path) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(REPO / "sql", sql_dir)
    files = sorted((sql_dir / "schema").glob("*.sql"))
    migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir, target=files[1].name.split("_")[0])
    files[0].write_text(files[0].read_text() + "\ncreate table sneaky (id int);\n-- migrate:down\n")
    # Touch the up section itself so the checksum differs.
    text = files[0].read_text().replace("create table sources (", "create table sources ( -- edited\n", 1)
    files[0].write_text(text)

    with pytest.raises(HarvesterError, match="was changed after it was applied"):
        migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir)

    assert len(_applied(empty_db_url)) == 2
    assert not list((tmp_path / "b").glob("*.dump"))


def _trigger_files(url: str) -> dict[str, tuple[str, object]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select name, checksum, applied_at from schema_trigger_files").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def test_trigger_files_are_reapplied_only_when_their_text_changed(empty_db_url: str, tmp_path: Path) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(REPO / "sql", sql_dir)
    migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir)
    first = _trigger_files(empty_db_url)
    assert set(first) == {p.name for p in (sql_dir / "triggers").glob("*.sql")}

    migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir)
    assert _trigger_files(empty_db_url) == first, "an unchanged trigger file is not applied again"

    edited = sql_dir / "triggers" / "100_timestamps.sql"
    edited.write_text(edited.read_text() + "\ncomment on function tg__set_updated_at() is 'edited';\n")
    migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir)

    after = _trigger_files(empty_db_url)
    assert after["100_timestamps.sql"][0] != first["100_timestamps.sql"][0]
    assert {n: v for n, v in after.items() if n != "100_timestamps.sql"} == {
        n: v for n, v in first.items() if n != "100_timestamps.sql"
    }
    with psycopg.connect(empty_db_url) as conn:
        comment = conn.execute("select obj_description('tg__set_updated_at'::regproc, 'pg_proc')").fetchone()
    assert comment == ("edited",)


def test_db_status_reports_external_mode_and_pending(empty_db_url: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [*HARVESTER, "db", "status"],
        env=_env(HARVESTER_DATABASE_URL=empty_db_url, HARVESTER_DATA_DIR=str(tmp_path / "d")),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert out.returncode == 0, out.stderr
    assert "external (HARVESTER_DATABASE_URL)" in out.stdout
    assert f"0 applied, {len(load_migrations())} pending" in out.stdout


def test_unreachable_database_gives_one_clear_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [*HARVESTER, "db", "migrate"],
        env=_env(
            HARVESTER_DATABASE_URL="postgresql://nobody:secret-pw@127.0.0.1:1/none",
            HARVESTER_DATA_DIR=str(tmp_path / "d"),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("harvester: error: cannot reach the database")
    assert "secret-pw" not in out.stderr + out.stdout


def test_read_only_data_dir_gives_one_clear_line(tmp_path: Path) -> None:
    # sysfs refuses writes even to root, unlike a chmod-ed directory.
    out = subprocess.run(
        [*HARVESTER, "db", "migrate"],
        env=_env(HARVESTER_DATA_DIR="/sys/harvester-data"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "cannot create the data directory /sys/harvester-data" in lines[0]


def test_embedded_start_repairs_open_data_dir_permissions() -> None:
    # Not under pytest's tmp_path: pytest re-closes its root temp dir to 0700 when another session
    # starts, which would cut the embedded server's own user off from its data directory.
    data = Path(tempfile.mkdtemp(prefix="hv-perm-", dir="/tmp")) / "open"
    (data / "backups").mkdir(parents=True)
    data.chmod(0o755)
    (data / "backups").chmod(0o755)
    env = _env(HARVESTER_DATA_DIR=str(data))
    try:
        out = subprocess.run([*HARVESTER, "db", "migrate"], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        # 0711 under root: the embedded server's own user must pass through, and can list nothing.
        assert stat.S_IMODE(data.stat().st_mode) == (0o711 if os.geteuid() == 0 else 0o700)
        assert stat.S_IMODE((data / "backups").stat().st_mode) == 0o700
        # The server keeps working with its parent closed again.
        status = subprocess.run([*HARVESTER, "db", "status"], env=env, capture_output=True, text=True, timeout=60)
        assert status.returncode == 0, status.stderr
        assert "0 pending" in status.stdout
    finally:
        subprocess.run([*HARVESTER, "db", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(data.parent, ignore_errors=True)


def test_a_non_transactional_migration_runs_its_statements_one_by_one(empty_db_url: str, tmp_path: Path) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(REPO / "sql", sql_dir)
    (sql_dir / "schema" / "29991231000000_concurrent_index.sql").write_text(
        "-- migrate:up transaction:false\n"
        "set lock_timeout = '5s';\n"
        "set statement_timeout = '10min';\n"
        "create index concurrently test_sources_connector_type_idx on sources (connector_type);\n"
        "-- migrate:down\n"
    )

    migrate(empty_db_url, tmp_path / "b", sql_dir=sql_dir)

    with psycopg.connect(empty_db_url) as conn:
        valid = conn.execute(
            "select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid "
            "where c.relname = 'test_sources_connector_type_idx'"
        ).fetchone()
    assert valid == (True,)
    assert _applied(empty_db_url)[-1] == "29991231000000"


def test_the_server_s_versions_are_read_before_any_migration_and_this_one_passes(empty_db_url: str) -> None:
    """The requirements check reads the real server (decision 156): its version and pgvector's, before the
    extension exists in an empty database and after a migration created it."""
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        before = server_requirements(conn)
        num, available = conn.execute(
            "select current_setting('server_version_num')::int, default_version from pg_available_extensions"
            " where name = 'vector'"
        ).fetchone() or (0, "")
    assert before is not None and (before.server_version_num, before.pgvector_available) == (num, available)
    assert before.pgvector_installed == "" and server_problem(before) is None
    migrate(empty_db_url, Path(tempfile.mkdtemp()))
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        after = server_requirements(conn)
        installed = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    assert after is not None and installed is not None and after.pgvector_installed == installed[0] != ""


@pytest.mark.parametrize(
    ("server", "installed", "available", "expected"),
    [
        (180006, "0.8.6", "0.8.6", None),
        (150020, "", "0.8.0", None),
        (150020, "0.8.1", "0.8.1", None),
        (140011, "", "0.8.6", "PostgreSQL 14.11 is too old: Harvester needs PostgreSQL 15 or later"),
        (
            150020,
            "",
            "",
            "pgvector is not installed on this PostgreSQL server; install pgvector >= 0.8.0 (or unset "
            "HARVESTER_DATABASE_URL to use the embedded server)",
        ),
        (
            150020,
            "",
            "0.7.4",
            "this PostgreSQL server has pgvector 0.7.4; Harvester needs 0.8.0 or later (its searches use HNSW "
            "iterative scans): install a newer pgvector on the server",
        ),
        (
            150020,
            "0.7.4",
            "0.7.4",
            "this database has pgvector 0.7.4; Harvester needs 0.8.0 or later (its searches use HNSW iterative "
            "scans): install a newer pgvector on the server, then run ALTER EXTENSION vector UPDATE",
        ),
        (
            150020,
            "0.7.4",
            "0.8.6",
            "this database has pgvector 0.7.4; Harvester needs 0.8.0 or later (its searches use HNSW iterative "
            "scans): the server has 0.8.6, run ALTER EXTENSION vector UPDATE here",
        ),
        (150020, "0.10.0", "0.10.0", None),
    ],
)
def test_a_server_too_old_for_the_schema_is_refused_in_one_line_naming_what_to_do(
    server: int, installed: str, available: str, expected: str | None
) -> None:
    """The rule on stand-in rows, in addition to the real servers of decision 156 (PostgreSQL 15.20 with
    pgvector 0.7.4 and 0.8.6, which CI does not have): pgvector 0.7 would migrate and then fail every search."""
    name = f"{server // 10000}.{server % 10000}"
    row = ServerRequirementsRow(server, name, installed, available)
    assert server_problem(row) == expected
