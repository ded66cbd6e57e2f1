"""The chaos harness (issue 11 §7): real `harvester worker` processes, a PostgreSQL of its own that the
tests kill -9 and restart, and Jira emulators with latency spikes and outages.

Budget: ``HARVESTER_CHAOS_ROUNDS`` rounds per scenario (default 1, a few minutes for the whole harness
in CI); ``pytest tests/chaos --chaos-long`` runs 10. Randomness comes from ``HARVESTER_CHAOS_SEED``
(default: a fresh seed); the seed of a failed test is printed in its report, and setting the variable
replays the same kill points and faults.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy
import psycopg
import pytest
from psycopg import sql

from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import serve
from tests.conftest import REPO, with_dbname
from tests.stacks import ask_for_stacks
from tests.sync.conftest import TOKEN, Jira

SEED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--chaos-long", action="store_true", help="run 10 chaos rounds per scenario")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report = outcome.get_result()
    seed = item.stash.get(SEED_KEY, None)
    if report.failed and seed is not None:
        report.sections.append(("chaos seed", f"HARVESTER_CHAOS_SEED={seed} replays this test"))
        print(f"\nchaos seed: HARVESTER_CHAOS_SEED={seed}", file=sys.stderr)


@pytest.fixture()
def rng(request: pytest.FixtureRequest) -> random.Random:
    seed = int(os.environ.get("HARVESTER_CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    request.node.stash[SEED_KEY] = seed
    print(f"chaos seed: {seed}")
    return random.Random(seed)


@pytest.fixture(scope="session")
def rounds(pytestconfig: pytest.Config) -> int:
    if pytestconfig.getoption("--chaos-long"):
        return 10
    return int(os.environ.get("HARVESTER_CHAOS_ROUNDS", "1"))


def _python(*code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "\n".join(code)], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


@dataclass
class ChaosServer:
    """An embedded PostgreSQL in its own temp dir, started and restarted from child processes (the
    embedded package caches a server per process, and the tests' shared server must never be killed)."""

    data_dir: Path
    url: str = ""

    def start(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            done = _python(
                "from pathlib import Path",
                "from app.db import embedded",
                f"print(embedded.start(Path({str(self.data_dir)!r})).url('postgres'))",
            )
            if done.returncode == 0:
                self.url = done.stdout.strip().splitlines()[-1]
                return
            # Orphaned backends of a killed postmaster can hold the shared memory for a moment.
            assert time.monotonic() < deadline, f"the chaos PostgreSQL did not start: {done.stderr[-2000:]}"
            time.sleep(0.5)

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "pg" / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """kill -9 the postmaster: no shutdown checkpoint, crash recovery at the next start."""
        pid = self.postmaster_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, "the killed postmaster did not go away"
            time.sleep(0.05)

    def stop(self) -> None:
        _python(
            "from pathlib import Path",
            "from app.db import embedded",
            f"embedded.start(Path({str(self.data_dir)!r})).stop()",
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child counts as gone
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        return True


@pytest.fixture(scope="session")
def chaos_server() -> Iterator[ChaosServer]:
    data_dir = Path(tempfile.mkdtemp(prefix="hv-chaos-", dir="/tmp"))
    server = ChaosServer(data_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Cluster:
    """One migrated database on the chaos server, the environment of its processes, and the workers."""

    server: ChaosServer
    url: str
    env: dict[str, str]
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{args[0]}-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def worker(self, **env: str) -> subprocess.Popen[bytes]:
        return self.spawn("worker", "--concurrency", "1", "--db-wait", "180", env=env)

    def logged(self, text: str) -> bool:
        """Whether any process of this cluster wrote ``text`` to its log."""
        return any(text in log.read_text(errors="replace") for log in self.logs.iterdir())

    def stacks_and_logs(self, lines: int = 200) -> str:
        """What a failed wait prints: each process still running is first asked for its threads' stacks
        (SIGUSR1, docs/operations.md; a paused one writes them when it is continued), then every log's tail."""
        ask_for_stacks(self.procs)
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in sorted(self.logs.iterdir())
        )

    def workers_alive(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.args[3] == "worker" and p.poll() is None]  # type: ignore[index]

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture()
def cluster(chaos_server: ChaosServer, tmp_path: Path) -> Iterator[Cluster]:
    name = f"chaos_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(chaos_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = with_dbname(chaos_server.url, name)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        **os.environ,
        "HARVESTER_DATABASE_URL": url,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_SECRET_KEY": os.urandom(32).hex(),
        "HARVESTER_EMBEDDER": "none",
        # Fast failure detection, so a kill is recovered within seconds rather than minutes.
        "HARVESTER_WORKER_HEARTBEAT": "1",
        "HARVESTER_STALLED_JOBS_CRON": "* * * * * */2",
    }
    c = Cluster(chaos_server, url, env, logs)
    migrated = c.cli("db", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    with c.connect() as conn:
        # A dead holder is taken over 2 s after its last beat (1 s stale + 1 s grace); kills are many.
        conn.execute(
            "update platform_settings set value = case key when 'max_deliveries' then '50'::jsonb else '1'::jsonb end "
            "where key in ('stale_run_after', 'takeover_grace', 'max_deliveries')"
        )
    try:
        yield c
    finally:
        c.close()
        for log in sorted(logs.iterdir()):
            # Errors only: the periodic tasks of a chaos worker log a line every two seconds.
            errors = [line for line in log.read_text(errors="replace").splitlines() if " ERROR " in line]
            if errors:
                print(f"--- {log.name}: {len(errors)} error line(s), the last ones ---", *errors[-10:], sep="\n")
        if chaos_server.url:
            with psycopg.connect(chaos_server.url, autocommit=True) as admin:
                admin.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.fixture()
def jira_emulators() -> Iterator[list[Jira]]:
    started: list[Jira] = []
    yield started
    for emulator in started:
        emulator.close()


def start_jira(started: list[Jira], issues: int, seed: int) -> Jira:
    app = JiraEmulator(issues, token=TOKEN, seed=seed)
    emulator = Jira(serve(app, "127.0.0.1", 0), app)
    started.append(emulator)
    return emulator
