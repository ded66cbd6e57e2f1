"""A worker's memory over many runs: does a long-lived ``harvester worker`` grow with the runs it has done?

A platform team runs workers for weeks; a run that leaves a little behind (a cache keyed by run, a thread, a
connection) shows up only after thousands of them. Real processes throughout: an embedded PostgreSQL, a Jira
emulator in its own process (``--issues`` issues) whose issues are edited a few times a second through its
control API, and one ``harvester worker --concurrency 1`` whose tick runs every second. The source's own
``sync_interval`` is 1 s, so the worker runs an incremental sync about every second or two, each loading the
issues edited since the one before; every ``--webhook-every`` runs a signed webhook delivery is sent as well.

The worker's resident memory (its own and its children's: the forkserver and any source process) is sampled
every 2 s once the first run (the full load) has ended. Printed: the runs done and the resident MiB at each
tenth of the time, and the ratio of the last tenth's median to the median of the second tenth (the first
is warm-up, not counted): about 1.00 when memory stays flat with the runs done.

    python bench/worker_soak.py [--minutes 5] [--issues 2000] [--worker-env MALLOC_ARENA_MAX=2]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import psutil  # noqa: E402
import psycopg  # noqa: E402

from app.secrets import Keyring  # noqa: E402
from app.services.sources import NewSource, create_source  # noqa: E402
from bench._db import bench_database  # noqa: E402
from bench._emulator import jira_emulator  # noqa: E402

TOKEN = "bench-token"
MB = 1024 * 1024


def resident(proc: psutil.Process) -> float:
    """MiB resident in ``proc`` and its children (a child that ends between listing and reading is skipped)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total / MB


FIRST_RUN_SECONDS = 600.0


def finished_runs(conn: psycopg.Connection, source_id: int) -> int:
    row = conn.execute(
        "select count(*) from sync_runs where source_id = %s and finished_at is not null", (source_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def wait_for_first_run(conn: psycopg.Connection, worker: subprocess.Popen[bytes], source_id: int, log: Path) -> None:
    """The clock starts once the first run (the full load) has ended, so every sample counts runs done.

    On a slow host the first run can outlast a short soak's first tenth; sampling from the worker's start
    then measured a "warm-up" with no run in it. Bounded and loud: a worker that exits, or never ends a
    run, stops the bench naming its log.
    """
    deadline = time.monotonic() + FIRST_RUN_SECONDS
    while finished_runs(conn, source_id) == 0:
        if worker.poll() is not None:
            raise SystemExit(f"the worker exited with {worker.returncode}; see {log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"no run ended within {FIRST_RUN_SECONDS:.0f} s of the worker's start; see {log}")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--edits-per-second", type=float, default=4.0)
    parser.add_argument(
        "--worker-env", action="append", default=[], metavar="NAME=VALUE", help="set in the worker's environment"
    )
    args = parser.parse_args()
    key = os.urandom(32)
    logs = Path(tempfile.mkdtemp(prefix="hv-bench-soak-", dir="/tmp"))
    rng = random.Random(7)
    with ExitStack() as stack:
        url = stack.enter_context(bench_database())
        base = stack.enter_context(jira_emulator(args.issues, seed=3, token=TOKEN))
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            source_id = create_source(
                conn,
                Keyring(key),
                NewSource(name="soak", connector_type="jira", base_url=base, credential=TOKEN),
            )
            conn.execute("update sources set sync_interval = 1 where id = %s", (source_id,))
        env = {
            **os.environ,
            "HARVESTER_DATABASE_URL": url,
            "HARVESTER_SECRET_KEY": key.hex(),
            "HARVESTER_EMBEDDER": "none",
            "HARVESTER_DATA_DIR": str(logs / "data"),
            "HARVESTER_TICK_CRON": "* * * * * *",  # every second: croniter's sixth field is seconds
            **dict(item.split("=", 1) for item in args.worker_env),
        }
        log = (logs / "worker.log").open("wb")
        worker = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(worker.wait, 30)
        stack.callback(worker.terminate)
        proc = psutil.Process(worker.pid)
        control = stack.enter_context(httpx.Client(base_url=base, timeout=30))
        keys = control.get("/_emulator/issues").raise_for_status().json()["keys"]
        samples: list[tuple[float, int, float]] = []  # (seconds, runs ended, MiB)
        with psycopg.connect(url, autocommit=True) as conn:
            wait_for_first_run(conn, worker, source_id, logs / "worker.log")
        started = time.monotonic()
        end = started + args.minutes * 60
        next_sample = started
        with psycopg.connect(url, autocommit=True) as conn:
            while time.monotonic() < end:
                if worker.poll() is not None:
                    raise SystemExit(f"the worker exited with {worker.returncode}; see {logs / 'worker.log'}")
                key_ = rng.choice(keys)
                control.patch(f"/_emulator/issues/{key_}", json={"summary": f"edited {time.time():.3f}"})
                now = time.monotonic()
                if now >= next_sample:
                    samples.append((now - started, finished_runs(conn, source_id), resident(proc)))
                    next_sample = now + 2.0
                time.sleep(1.0 / args.edits_per_second)
            failed = conn.execute(
                "select count(*) from sync_runs where source_id = %s and state = 'failed'", (source_id,)
            ).fetchone()[0]  # type: ignore[index]
    shutil.rmtree(logs, ignore_errors=True)
    tenth = len(samples) // 10 or 1
    extra = f" ({' '.join(args.worker_env)})" if args.worker_env else ""
    print(
        f"{args.minutes:g} min, {args.issues} issues, {args.edits_per_second:g} edits/s{extra}; failed runs: {failed}"
    )
    print("  seconds   runs ended   resident MiB (worker and its children)")
    for t, runs, mib in samples[::tenth]:
        print(f"  {t:7.0f}   {runs:10d}   {mib:12.1f}")
    t, runs, mib = samples[-1]
    print(f"  {t:7.0f}   {runs:10d}   {mib:12.1f}")
    warm = statistics.median(m for _, _, m in samples[tenth : 2 * tenth])
    last = statistics.median(m for _, _, m in samples[-tenth:])
    warm_runs = samples[2 * tenth - 1][1]
    print(
        f"resident MiB: {warm:.1f} after warm-up ({warm_runs} runs), {last:.1f} at the end ({runs} runs): "
        f"ratio {last / warm:.3f}; {(last - warm) / max(1, runs - warm_runs) * 1024:.1f} KiB a run"
    )


if __name__ == "__main__":
    main()
