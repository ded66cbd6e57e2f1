"""A worker killed with SIGKILL mid-run; another resumes from the checkpoint (seed 003 "Довыдача")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline import checkpoint
from app.pipeline.run import execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from bench._proxy import delayed
from tests.conftest import REPO
from tests.sync.conftest import TOKEN, Jira, JiraFactory, scalar

ISSUES = 2000
BULK = 300  # issues given one update time, three search pages


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


def _add_jira(env: dict[str, str], name: str, jira: Jira) -> int:
    """``harvester sources add`` for the emulated Jira, through the CLI; the new source's id."""
    added = _cli(env, "sources", "add", "--name", name, "--connector", "jira", "--base-url", jira.base_url,
                 "--credential", TOKEN)  # fmt: skip
    assert added.returncode == 0, added.stderr
    return int(added.stdout.strip().splitlines()[-1])


def _kill_after_a_page(probe: psycopg.Connection[Any], proc: subprocess.Popen[bytes], source_id: int, mode: str) -> int:
    """SIGKILL ``proc`` once its ``mode`` run of the source committed a page; the run's id."""
    query = "select id, entities_done from sync_runs where source_id = %s and mode = %s"
    deadline = time.monotonic() + 120  # a guard against a hang, not an assertion on speed
    while not ((row := probe.execute(query, (source_id, mode)).fetchone()) and row[1]):
        assert proc.poll() is None, f"the {mode} sync ended before it was killed"
        assert time.monotonic() < deadline, f"the {mode} sync never committed a page"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return int(row[0])


def _spawn_full_sync(env: dict[str, str], name: str, spawned: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """``harvester sync <name> --mode full`` as a process of its own (killed at the test's end if alive)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "sync", name, "--mode", "full"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    spawned.append(proc)
    return proc


def _let_it_be_taken_over(probe: psycopg.Connection[Any]) -> None:
    probe.execute("update platform_settings set value = '1' where key in ('stale_run_after', 'takeover_grace')")
    time.sleep(2.5)  # let the dead worker's heartbeat go stale, then the takeover grace pass


def _assert_resumed_once(probe: psycopg.Connection[Any], run_id: int, source_id: int) -> None:
    """The run ended on its second delivery, elsewhere, having loaded every issue exactly once."""
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


def test_run_killed_mid_way_resumes_elsewhere_without_lost_or_doubled_rows(
    probe: psycopg.Connection[Any],
    fresh_db_url: str,
    cli_env: dict[str, str],
    spawned: list[subprocess.Popen[bytes]],
    jira_factory: JiraFactory,
) -> None:
    jira = jira_factory(ISSUES)
    source_id = _add_jira(cli_env, "big", jira)
    jira.fault(latency_ms=200)
    proc = _spawn_full_sync(cli_env, "big", spawned)
    run_id = _kill_after_a_page(probe, proc, source_id, "full")
    killed = rq.get_run(probe, id=run_id)
    assert killed is not None and killed.state == "running"
    assert killed.entities_done is not None and killed.entities_done < ISSUES
    _let_it_be_taken_over(probe)
    jira.clear_faults()
    keyring = Keyring(bytes.fromhex(cli_env["HARVESTER_SECRET_KEY"]))

    with connect(fresh_db_url, autocommit=True) as conn:
        outcome = execute_run(conn, run_id, worker_id="other", keyring=keyring)

    assert outcome.state == "succeeded"
    _assert_resumed_once(probe, run_id, source_id)


def test_cli_sync_exits_zero_when_the_run_succeeds(
    probe: psycopg.Connection[Any], cli_env: dict[str, str], jira_factory: JiraFactory
) -> None:
    jira = jira_factory(20)
    _add_jira(cli_env, "small", jira)

    synced = _cli(cli_env, "sync", "small", "--mode", "full")

    assert synced.returncode == 0, synced.stderr
    assert "succeeded" in synced.stdout
    assert scalar(probe, "select count(*) from live_entities") == 20


def test_a_killed_bulk_import_run_resumes_with_its_capped_boundary_and_loads_nothing_twice(
    probe: psycopg.Connection[Any],
    fresh_db_url: str,
    cli_env: dict[str, str],
    spawned: list[subprocess.Popen[bytes]],
    jira_factory: JiraFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 125 end to end: a page's checkpoint keeps at most ``BOUNDARY_IDS_KEPT`` of the ids sharing
    the run's last update time. An incremental run over a bulk import (300 issues at one time, three pages)
    is killed after its first page; its checkpoint then holds 7 of the 100 ids (the cap set to 7 in the
    killed process). The run resumed elsewhere loads the rest, no row twice and none lost; the cursor lacks
    the forgotten ids, so the next incremental run maps those again and changes no row."""
    jira = jira_factory(BULK)
    source_id = _add_jira(cli_env, "bulk", jira)
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    full = _cli(cli_env, "sync", "bulk", "--mode", "full")
    assert full.returncode == 0, full.stderr
    at = datetime(2030, 1, 1, 12, tzinfo=UTC)
    touched = [jira.patch(jira.key(i), summary=f"imported {i}", updated=at.isoformat())["id"] for i in range(BULK)]
    jira.fault(latency_ms=200)
    capped = (
        "import sys; from app.pipeline import checkpoint; checkpoint.BOUNDARY_IDS_KEPT = 7; "
        "from app.cli import main; sys.argv = ['harvester', 'sync', 'bulk', '--mode', 'incremental']; "
        "sys.exit(main())"
    )
    proc = subprocess.Popen([sys.executable, "-c", capped], cwd=REPO, env=cli_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    spawned.append(proc)
    run_id = _kill_after_a_page(probe, proc, source_id, "incremental")
    killed = rq.get_run(probe, id=run_id)
    assert killed is not None and killed.state == "running" and killed.checkpoint is not None
    assert killed.entities_done is not None and 0 < killed.entities_done < BULK
    kept = killed.checkpoint["boundary_ids"]
    assert len(kept) == 7 and set(kept) <= set(touched)
    _let_it_be_taken_over(probe)
    jira.clear_faults()
    keyring = Keyring(bytes.fromhex(cli_env["HARVESTER_SECRET_KEY"]))
    monkeypatch.setattr(checkpoint, "BOUNDARY_IDS_KEPT", 7)

    with connect(fresh_db_url, autocommit=True) as conn:
        outcome = execute_run(conn, run_id, worker_id="other", keyring=keyring)

    assert outcome.state == "succeeded"
    resumed = rq.get_run(probe, id=run_id)
    assert resumed is not None and (resumed.state, resumed.deliveries) == ("succeeded", 2)
    rows = "select source_entity_id, title, content_hash from entities where source_id = %s order by 1"
    loaded = probe.execute(rows, (source_id,)).fetchall()
    assert len(loaded) == len({r[0] for r in loaded}) == BULK  # none twice
    assert sorted(r[1] for r in loaded) == sorted(f"imported {i}" for i in range(BULK))  # none lost
    cursor = scalar(probe, "select incremental_cursor from sources where id = %s", (source_id,))
    assert datetime.fromisoformat(cursor["updated"]) == at
    assert set(kept) <= set(cursor["ids"]) < set(touched)  # the first page's other ids were forgotten
    forgotten = len(touched) - len(cursor["ids"])

    again = _cli(cli_env, "sync", "bulk", "--mode", "incremental")

    assert again.returncode == 0, again.stderr
    last = rq.get_run(probe, id=int(scalar(probe, "select max(id) from sync_runs where source_id = %s", (source_id,))))
    assert last is not None and last.state == "succeeded"
    assert last.entities_done == forgotten  # only the forgotten ids, mapped again
    assert probe.execute(rows, (source_id,)).fetchall() == loaded  # and no row changed


def test_a_run_whose_database_is_a_hop_away_joins_pages_and_a_killed_one_resumes_exactly(
    probe: psycopg.Connection[Any],
    fresh_db_url: str,
    cli_env: dict[str, str],
    spawned: list[subprocess.Popen[bytes]],
    jira_factory: JiraFactory,
) -> None:
    """Decision 142 through the real boundary: the database 40 ms a round trip away (bench/_proxy.py, a
    process that delays every byte), a ``harvester sync`` process whose writer falls behind and joins pages
    into one transaction, killed with SIGKILL after its first commit (a joined write in flight rolls back).
    The run resumed elsewhere, as far from the database, joins pages too, and loads every issue once."""
    jira = jira_factory(ISSUES)
    source_id = _add_jira(cli_env, "far", jira)
    with delayed(fresh_db_url, 40) as far:
        proc = _spawn_full_sync({**cli_env, "HARVESTER_DATABASE_URL": far}, "far", spawned)
        run_id = _kill_after_a_page(probe, proc, source_id, "full")
        killed = rq.get_run(probe, id=run_id)
        assert killed is not None and killed.state == "running"
        assert killed.entities_done is not None and 0 < killed.entities_done < ISSUES
        _let_it_be_taken_over(probe)
        keyring = Keyring(bytes.fromhex(cli_env["HARVESTER_SECRET_KEY"]))

        with connect(far, autocommit=True) as conn:
            outcome = execute_run(conn, run_id, worker_id="other", keyring=keyring)

    assert outcome.state == "succeeded", outcome.detail
    # Each write waits eight round trips of 40 ms; the next pages are mapped long before it ends.
    assert outcome.write_joined > 0
    _assert_resumed_once(probe, run_id, source_id)
