"""End-to-end sync fixtures: a Jira emulator on 127.0.0.1, a fresh database, and run helpers.

Every test drives the real pipeline (``execute_run``, the code the worker and ``harvester sync`` run)
against the emulator over real HTTP; faults and edits go through the emulator's control API.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import psutil
import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.run import ProgressCallback, RunOutcome, execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import RunningEmulator, serve

TOKEN = "emulator-token-0001"


@dataclass
class Jira:
    """A served emulator plus a control client; index ``i`` is key ``key(i)`` and id ``10000 + i``."""

    running: RunningEmulator
    app: JiraEmulator
    control: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.control = httpx.Client(base_url=self.running.base_url, timeout=30)

    @property
    def base_url(self) -> str:
        return self.running.base_url

    def key(self, i: int) -> str:
        return self.app.key_of(i)

    @staticmethod
    def id(i: int) -> str:
        return str(10000 + i)

    def keys(self) -> list[str]:
        return list(self._ok(self.control.get("/_emulator/issues")).json()["keys"])

    def patch(self, key: str, **fields: Any) -> dict[str, Any]:
        return dict(self._ok(self.control.patch(f"/_emulator/issues/{key}", json=fields)).json())

    def delete(self, key: str) -> None:
        self._ok(self.control.delete(f"/_emulator/issues/{key}"))

    def restore(self, key: str) -> None:
        self._ok(self.control.post(f"/_emulator/issues/{key}/restore"))

    def fault(self, **spec: Any) -> None:
        self._ok(self.control.post("/_emulator/faults", json=spec))

    def clear_faults(self) -> None:
        self._ok(self.control.delete("/_emulator/faults"))

    def stats(self) -> dict[str, Any]:
        return dict(self._ok(self.control.get("/_emulator/stats")).json())

    def close(self) -> None:
        self.control.close()
        self.running.stop()

    @staticmethod
    def _ok(resp: httpx.Response) -> httpx.Response:
        resp.raise_for_status()
        return resp


JiraFactory = Callable[..., Jira]


@pytest.fixture()
def jira_factory() -> Iterator[JiraFactory]:
    """Start emulators on demand (``issues``, ``seed``, ...); every one is stopped after the test."""
    started: list[Jira] = []

    def start(issues: int = 30, **kwargs: Any) -> Jira:
        kwargs.setdefault("token", TOKEN)
        app = JiraEmulator(issues, **kwargs)
        emulator = Jira(serve(app, "127.0.0.1", 0), app)
        started.append(emulator)
        return emulator

    try:
        yield start
    finally:
        for emulator in started:
            emulator.close()


@pytest.fixture()
def jira(jira_factory: JiraFactory) -> Jira:
    return jira_factory(30)


@pytest.fixture()
def keyring() -> Keyring:
    return Keyring(current=os.urandom(32))


@pytest.fixture()
def conn(fresh_db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """The pipeline's connection, opened as the worker opens it (autocommit: the pipeline declares its
    transactions); a test acting as an entry point wraps its own multi-statement units in ``conn.transaction()``."""
    with connect(fresh_db_url, autocommit=True) as c:
        yield c


@pytest.fixture()
def probe(fresh_db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A second, autocommit connection for assertions and concurrent actions."""
    with psycopg.connect(fresh_db_url, autocommit=True) as c:
        yield c


def add_source(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    jira: Jira,
    *,
    name: str = "jira",
    scope: Sequence[Any] = (),
) -> int:
    source_id = create_source(
        conn,
        keyring,
        NewSource(
            name=name,
            connector_type="jira",
            base_url=jira.base_url,
            credential=TOKEN,
            scope_mode="selected" if scope else "all",
            scope_list=scope,
        ),
    )
    return source_id


def sync(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    source_id: int,
    mode: str,
    *,
    trigger: str = "manual",
    scope: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[RunOutcome, rq.GetRunRow]:
    """Start a run and execute it to the end on ``conn``; the outcome and the journal row."""
    run_id = start_run(conn, source_id, mode=mode, trigger=trigger, scope=scope, options=options)
    outcome = execute_run(conn, run_id, worker_id="test-worker", keyring=keyring, on_progress=on_progress)
    run = rq.get_run(conn, id=run_id)
    assert run is not None
    return outcome, run


def scalar(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def live_ids(conn: psycopg.Connection[Any], source_id: int) -> list[str]:
    rows = conn.execute(
        "select source_entity_id from live_entities where source_id = %s order by source_entity_id::bigint",
        (source_id,),
    ).fetchall()
    return [r[0] for r in rows]


def forkservers(pid: int | None = None) -> list[psutil.Process]:
    """The forkserver of process ``pid`` (default: this one), whose children are its source processes
    (app.pipeline.source_process); none before its first source process."""
    return [p for p in psutil.Process(pid).children() if "forkserver" in " ".join(p.cmdline())]


def source_children(pid: int | None = None) -> list[psutil.Process]:
    """The source processes of process ``pid`` (default: this one): its forkserver's children."""
    return [c for s in forkservers(pid) for c in s.children()]
