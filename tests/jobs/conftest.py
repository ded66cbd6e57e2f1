"""Real ``harvester worker`` processes against a fresh database and the Jira emulator.

Each worker is a subprocess started the way an operator starts it (``python -m app.cli worker``), with
the tick every 2 seconds (HARVESTER_TICK_CRON, seconds are croniter's LAST field). Every process a test
starts is killed when the test ends, whatever happened. When a wait times out, each process still running
is first asked for its threads' stacks (SIGUSR1, as docs/operations.md tells an operator), then the logs
are printed: a wait that failed under load says where the process was waiting.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from app.services.jobs import start_and_defer
from tests.conftest import REPO
from tests.stacks import ask_for_stacks
from tests.sync.conftest import conn, jira, jira_factory, keyring, probe  # noqa: F401  (shared fixtures)

TAIL = 60  # log lines printed by a failed wait, per process
DUMP_TAIL = 250  # ... once the process has written its stacks
FAST_TICK = (
    "* * * * * */2"  # every 2 seconds: croniter puts seconds LAST ("*/2 * * * * *" is every second of even minutes)
)


@dataclass
class Proc:
    """A started process and its combined log file."""

    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def tail(self, lines: int = TAIL) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)


@dataclass
class Procs:
    """Starts ``harvester`` subprocesses on the test database; all are killed at teardown."""

    db_url: str
    keyring: Keyring
    tmp: Path
    started: list[Proc]

    def env(self, **overrides: str) -> dict[str, str]:
        env = {
            **os.environ,
            "HARVESTER_DATABASE_URL": self.db_url,
            "HARVESTER_SECRET_KEY": self.keyring.current.hex(),
            "HARVESTER_DATA_DIR": str(self.tmp / "data"),
            "HARVESTER_TICK_CRON": FAST_TICK,
            "HARVESTER_EMBEDDER": "none",
            "PYTHONUNBUFFERED": "1",
        }
        env.update(overrides)
        return env

    def start(self, *args: str, **env: str) -> Proc:
        log = self.tmp / f"proc-{len(self.started)}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *args],
                cwd=REPO,
                env=self.env(**env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        proc = Proc(popen, log)
        self.started.append(proc)
        return proc

    def worker(self, *args: str, wait: bool = True, **env: str) -> Proc:
        """A worker process; with ``wait``, returns once it has registered with Procrastinate."""
        with psycopg.connect(self.db_url, autocommit=True) as c:
            before = _scalar(c, "select coalesce(max(id), 0) from procrastinate_workers")
        proc = self.start("worker", *args, **env)
        if wait:
            with psycopg.connect(self.db_url, autocommit=True) as c:
                wait_for(
                    lambda: _scalar(c, "select count(*) from procrastinate_workers where id > %s", (before,)) > 0,
                    30,
                    "the worker to register",
                    proc,
                )
        return proc

    def logs(self, lines: int = TAIL) -> str:
        return "\n".join(f"--- {p.log.name} (pid {p.pid})\n{p.tail(lines)}" for p in self.started)


@pytest.fixture()
def procs(fresh_db_url: str, keyring: Keyring, tmp_path: Path) -> Iterator[Procs]:  # noqa: F811
    running = Procs(fresh_db_url, keyring, tmp_path, [])
    try:
        yield running
    finally:
        for proc in running.started:
            proc.kill()


def _scalar(c: psycopg.Connection[Any], query: str, params: tuple[Any, ...] | Mapping[str, Any] = ()) -> Any:
    row = c.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def wait_for(
    predicate: Callable[[], Any], timeout: float, what: str, *procs: Proc | Procs, interval: float = 0.2
) -> Any:
    """Poll ``predicate`` until it returns a truthy value; fail with the processes' logs on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            every = (p.popen for item in procs for p in (item.started if isinstance(item, Procs) else [item]))
            lines = DUMP_TAIL if ask_for_stacks(every) else TAIL
            logs = "\n".join(p.logs(lines) if isinstance(p, Procs) else p.tail(lines) for p in procs)
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")
        time.sleep(interval)


def queued(db: psycopg.Connection[Any], source_id: int, mode: str = "full") -> int:
    """A manual run of ``mode`` and its run_sync job, committed together (app.services.jobs): a worker may
    take it at once."""
    run_id = start_and_defer(db, source_id, mode=mode, trigger="manual")
    db.commit()
    return run_id


def committed(db: psycopg.Connection[Any], run_id: int, procs: Procs, items: int = 100) -> None:
    """Wait until run ``run_id`` has committed ``items`` items (by default its first page of 100)."""
    done = "select coalesce(entities_done, 0) from sync_runs where id = %s"
    wait_for(lambda: _scalar(db, done, (run_id,)) >= items, 60, f"the run to commit {items} items", procs)


def ended(db: psycopg.Connection[Any], run_id: int, procs: Procs, timeout: float = 90) -> None:
    """Wait until run ``run_id``, running, has ended (taken over and resumed, it is running again)."""
    state = "select state from sync_runs where id = %s"
    wait_for(lambda: _scalar(db, state, (run_id,)) != "running", timeout, "the run to end", procs)
