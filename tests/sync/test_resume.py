"""A worker killed with SIGKILL mid-run; another resumes from the checkpoint (seed 003 "Довыдача")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.run import execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from tests.conftest import REPO
from tests.sync.conftest import TOKEN, JiraFactory, scalar

ISSUES = 2000


@pytest.fixture()
def cli_env(fresh_db_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HARVESTER_DATABASE_URL": fresh_db_url,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_SECRET_KEY": os.urandom(32).hex(),
    }


@pytest.fixture()
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )


def test_run_killed_mid_way_resumes_elsewhere_without_lost_or_doubled_rows(
    probe: psycopg.Connection[Any],
    fresh_db_url: str,
    cli_env: dict[str, str],
    spawned: list[subprocess.Popen[bytes]],
    jira_factory: JiraFactory,
) -> None:
    jira = jira_factory(ISSUES)
    added = _cli(
        cli_env,
        "sources",
        "add",
        "--name",
        "big",
        "--connector",
        "jira",
        "--base-url",
        jira.base_url,
        "--credential",
        TOKEN,
    )
    assert added.returncode == 0, added.stderr
    source_id = int(added.stdout.strip().splitlines()[-1])
    jira.fault(latency_ms=200)
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "sync", "big", "--mode", "full"],
        cwd=REPO,
        env=cli_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    spawned.append(proc)
    deadline = time.monotonic() + 120  # a guard against a hang, not an assertion on speed
    while not scalar(probe, "select coalesce(max(entities_done), 0) from sync_runs where source_id = %s", (source_id,)):
        assert proc.poll() is None, "the CLI sync ended before it was killed"
        assert time.monotonic() < deadline, "the CLI sync never committed a page"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_id = int(scalar(probe, "select id from sync_runs where source_id = %s", (source_id,)))
    killed = rq.get_run(probe, id=run_id)
    assert killed is not None and killed.state == "running"
    assert killed.entities_done is not None and killed.entities_done < ISSUES
    probe.execute("update platform_settings set value = '1' where key in ('stale_run_after', 'takeover_grace')")
    time.sleep(2.5)  # let the dead worker's heartbeat go stale, then the takeover grace pass
    jira.clear_faults()
    keyring = Keyring(bytes.fromhex(cli_env["HARVESTER_SECRET_KEY"]))

    with connect(fresh_db_url, autocommit=True) as conn:
        outcome = execute_run(conn, run_id, worker_id="other", keyring=keyring)

    assert outcome.state == "succeeded"
    run = rq.get_run(probe, id=run_id)
    assert run is not None
    assert (run.state, run.deliveries, run.worker_id) == ("succeeded", 2, "other")
    assert run.checkpoint is not None
    assert run.entities_done == ISSUES == run.checkpoint["enumerated"]
    counts = probe.execute(
        "select count(*), count(distinct (source_type, source_entity_id)) from entities where source_id = %s",
        (source_id,),
    ).fetchone()
    assert counts == (ISSUES, ISSUES)


def test_cli_sync_exits_zero_when_the_run_succeeds(
    probe: psycopg.Connection[Any], cli_env: dict[str, str], jira_factory: JiraFactory
) -> None:
    jira = jira_factory(20)
    added = _cli(
        cli_env,
        "sources",
        "add",
        "--name",
        "small",
        "--connector",
        "jira",
        "--base-url",
        jira.base_url,
        "--credential",
        TOKEN,
    )
    assert added.returncode == 0, added.stderr

    synced = _cli(cli_env, "sync", "small", "--mode", "full")

    assert synced.returncode == 0, synced.stderr
    assert "succeeded" in synced.stdout
    assert scalar(probe, "select count(*) from live_entities") == 20
