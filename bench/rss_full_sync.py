"""Peak memory of a full sync: `harvester sync` in its own process against a Jira emulator of
``--issues`` issues (issue 3 benchmarks: a 1,000,000-issue full sync stays flat and <= 500 MB).

The sync process's RSS is sampled every 0.2 s together with the run's progress, and printed at each
tenth of the way so flatness is visible; the baseline is the same process's RSS after its first page.
No embedding stage (HARVESTER_EMBEDDER=none): this measures the pipeline, not the model.

    python bench/rss_full_sync.py [--issues 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
import psycopg

from bench._db import bench_database
from bench._emulator import jira_emulator

MB = 1024 * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--issues", type=int, default=1_000_000)
    args = ap.parse_args()
    data_dir = Path("/tmp") / f"hv-rss-{os.getpid()}"  # the CLI's data directory, removed at the end
    try:
        return _measure(args.issues, data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _measure(issues: int, data_dir: Path) -> int:
    with jira_emulator(issues) as base_url, bench_database() as url:
        env = dict(
            os.environ,
            HARVESTER_DATABASE_URL=url,
            HARVESTER_SECRET_KEY=os.urandom(32).hex(),
            HARVESTER_EMBEDDER="none",
            HARVESTER_DATA_DIR=str(data_dir),
        )
        harvester = [sys.executable, "-m", "app.cli"]
        subprocess.run(
            [
                *harvester,
                "sources",
                "add",
                "--name",
                "big",
                "--connector",
                "jira",
                "--base-url",
                base_url,
                "--credential",
                "bench-token",
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*harvester, "sync", "big", "--mode", "full"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        ps = psutil.Process(proc.pid)
        peak, baseline, next_tenth = 0, 0, 1
        with psycopg.connect(url, autocommit=True) as db:
            while proc.poll() is None:
                try:
                    rss = ps.memory_info().rss
                except psutil.NoSuchProcess:
                    break
                peak = max(peak, rss)
                row = db.execute("select coalesce(max(entities_done), 0) from sync_runs").fetchone()
                done = int(row[0]) if row else 0
                if done and not baseline:
                    baseline = rss
                if done >= next_tenth * issues / 10:
                    print(
                        f"  {done:>9,} done  rss {rss / MB:7.1f} MB  elapsed {time.perf_counter() - started:7.1f} s",
                        flush=True,
                    )
                    next_tenth += 1
                time.sleep(0.2)
        elapsed = time.perf_counter() - started
    print(f"issues={issues} exit={proc.returncode} time {elapsed:.0f} s ({issues / elapsed:,.0f} items/s)")
    # A small run can end between two samples before one of them saw its first page: no baseline then.
    first = (
        f"after the first page {baseline / MB:.1f} MB; growth {max(peak - baseline, 0) / MB:.1f} MB"
        if baseline
        else "the run ended before a sample saw its first page"
    )
    print(f"  peak RSS {peak / MB:.1f} MB (target <= 500); {first}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
