"""Shared fixtures: a real PostgreSQL for every test (never a mock).

The server is the embedded one, started in a temporary data dir for the session, or the one at
``HARVESTER_TEST_DATABASE_URL``. A template database is migrated once; tests that need a clean
database get a fresh clone of it and drop it afterwards, so the suite can run twice in a row.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db import embedded
from app.db.migrate import migrate
from connectors import directories

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
TEMPLATE = "harvester_test_template"


def as_worker(monkeypatch: pytest.MonkeyPatch, database_url: str, secret_key: str, data_dir: Path) -> None:
    """The environment job functions read when a test calls them in-process, as a worker process has it:
    its database and key, and a data dir of their own (unset, it is the user's ~/.local/share/harvester)."""
    monkeypatch.setenv("HARVESTER_DATABASE_URL", database_url)
    monkeypatch.setenv("HARVESTER_SECRET_KEY", secret_key)
    monkeypatch.setenv("HARVESTER_DATA_DIR", str(data_dir))


def with_dbname(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo("", **params)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """URL of the maintenance database ('postgres') on the test server."""
    external = os.environ.get("HARVESTER_TEST_DATABASE_URL")
    if external:
        yield with_dbname(external, "postgres")
        return
    data_dir = Path(tempfile.mkdtemp(prefix="hv-test-", dir="/tmp"))
    server = embedded.start(data_dir)
    try:
        yield server.url("postgres")
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def template_url(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _drop(server_url, TEMPLATE)
    _create(server_url, TEMPLATE)
    url = with_dbname(server_url, TEMPLATE)
    migrate(url, tmp_path_factory.mktemp("template-backups"))
    yield url
    _drop(server_url, TEMPLATE)


@pytest.fixture()
def fresh_db_url(server_url: str, template_url: str) -> Iterator[str]:
    """A new database cloned from the migrated template; dropped after the test."""
    name = f"hv_{uuid.uuid4().hex[:12]}"
    _create(server_url, name, template=TEMPLATE)
    yield with_dbname(server_url, name)
    _drop(server_url, name)


@pytest.fixture()
def empty_db_url(server_url: str) -> Iterator[str]:
    """A new, empty database; dropped after the test."""
    name = f"hv_{uuid.uuid4().hex[:12]}"
    _create(server_url, name)
    yield with_dbname(server_url, name)
    _drop(server_url, name)


@pytest.fixture(scope="session")
def migrated_db_url(server_url: str, template_url: str) -> Iterator[str]:
    """One migrated database for read-mostly suites (pgTAP rolls every file back)."""
    name = f"hv_shared_{uuid.uuid4().hex[:8]}"
    _create(server_url, name, template=TEMPLATE)
    yield with_dbname(server_url, name)
    _drop(server_url, name)


def _create(server_url: str, name: str, template: str | None = None) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        stmt = sql.SQL("create database {}").format(sql.Identifier(name))
        if template:
            stmt = sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        conn.execute(stmt)


def _drop(server_url: str, name: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.fixture(autouse=True)
def _no_directories_from_an_earlier_test() -> Iterator[None]:
    """Directories a connector keeps for the next runs of a source (connectors.directories) are per process:
    a later test's emulator on a port an earlier one used, under the same source id, must not take them."""
    directories.SHARED.clear()
    yield
    directories.SHARED.clear()
