"""A burst of webhook deliveries while the source is busy, against one run of the same items (decision 145).

Real processes: an embedded PostgreSQL, a Jira emulator in its own process answering every request
``--latency-ms`` later (a real source's pace), and one ``harvester worker`` as an operator starts it. One
fresh source with webhooks on:

- burst: a full run of the source holds it (``--issues`` issues); while it runs, ``--deliveries`` signed
  ``jira:issue_updated`` deliveries, one issue each, are accepted the way the API accepts them
  (``app.services.webhooks.receive``, each in its own transaction). The clock runs from the moment the
  full run is seen ended to the moment every delivered issue has been loaded by an ended webhook run.
- baseline, next: one items-scoped run of the same issues queued on the now idle source, from its commit
  to its end (what the burst's changes cost at best: one run of all of them, with the source's directories
  as warm as the burst's runs found them).

Printed: the runs the burst's deliveries became, the catch-up time, the baseline's time and their ratio.
Before decision 145 each delivery was a job starting a run of its own, retried every 10 s while the source
was busy, so the burst became one run per delivery, about 10 s apart.

    python bench/webhook_burst.py [--deliveries 20] [--issues 300] [--latency-ms 100]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psycopg

from app.secrets import Keyring
from app.services.jobs import APPLY_WEBHOOK, defer_in, start_and_defer
from app.services.sources import NewSource, create_source
from app.services.webhooks import receive
from bench._db import bench_database
from bench._emulator import jira_emulator
from bench.two_workers import workers

TOKEN = "bench-token"
SECRET = "bench-webhook-secret-0145"
FIRST_ID = 10000  # the emulator's first issue id


def issue_id(i: int) -> str:
    return str(FIRST_ID + i)


def hooked_source(url: str, keyring: Keyring, base: str) -> int:
    with psycopg.connect(url) as conn:
        return create_source(
            conn,
            keyring,
            NewSource(
                name=f"bench-{uuid.uuid4().hex[:8]}",
                connector_type="jira",
                base_url=base,
                credential=TOKEN,
                webhook_enabled=True,
                webhook_secret=SECRET,
            ),
        )


def deliver(url: str, keyring: Keyring, source_id: int, i: int) -> None:
    """One signed delivery for issue ``i``, accepted in its own transaction as the API accepts it."""
    body = json.dumps(
        {"webhookEvent": "jira:issue_updated", "timestamp": i, "issue": {"id": issue_id(i), "fields": {}}}
    ).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    with psycopg.connect(url) as conn:

        def defer(sid: int) -> None:
            defer_in(conn, APPLY_WEBHOOK, source_id=sid)

        intake = receive(conn, keyring, source_id, {"X-Hub-Signature": f"sha256={signature}"}, body, defer)
    if intake.outcome != "accepted":
        raise RuntimeError(f"delivery {i} was {intake.outcome}")


def wait(predicate: Callable[[], Any], what: str, timeout: float = 1800) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def ended(conn: psycopg.Connection[Any], run_id: int) -> bool:
    row = conn.execute("select state from sync_runs where id = %s", (run_id,)).fetchone()
    if row is not None and row[0] in ("failed", "cancelled"):
        raise RuntimeError(f"run {run_id} ended {row[0]}")
    return row is not None and row[0] == "succeeded"


def webhook_runs_done(conn: psycopg.Connection[Any], source_id: int, wanted: set[str]) -> list[int] | None:
    """The ids of the source's webhook runs once they all ended and took every wanted item, else None."""
    rows = conn.execute(
        "select id, state, scope from sync_runs where source_id = %s and trigger = 'webhook' order by id",
        (source_id,),
    ).fetchall()
    if any(state in ("failed", "cancelled") for _, state, _ in rows):
        raise RuntimeError(f"a webhook run failed: {rows}")
    if any(state != "succeeded" for _, state, _ in rows):
        return None
    taken = {item["source_entity_id"] for _, _, scope in rows for item in scope["items"]}
    return [r[0] for r in rows] if wanted <= taken else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=20)
    parser.add_argument("--issues", type=int, default=300, help="issues of the full run that holds the source")
    parser.add_argument("--latency-ms", type=int, default=100, help="emulator latency on every API request")
    args = parser.parse_args()
    key = os.urandom(32)
    keyring = Keyring(key)
    logs = Path(tempfile.mkdtemp(prefix="hv-bench-webhook-logs-", dir="/tmp"))
    wanted = {issue_id(i) for i in range(args.deliveries)}
    items = [{"source_type": "ticket", "source_entity_id": i} for i in sorted(wanted)]
    try:
        with ExitStack() as stack:
            url = stack.enter_context(bench_database())
            base = stack.enter_context(jira_emulator(max(args.issues, args.deliveries), token=TOKEN))
            with httpx.Client(base_url=base, timeout=30) as control:
                control.delete("/_emulator/faults").raise_for_status()
                control.post("/_emulator/faults", json={"latency_ms": args.latency_ms}).raise_for_status()
            env = {
                **os.environ,
                "HARVESTER_DATABASE_URL": url,
                "HARVESTER_SECRET_KEY": key.hex(),
                "HARVESTER_EMBEDDER": "none",
                "HARVESTER_DATA_DIR": str(logs / "data"),
            }
            busy = hooked_source(url, keyring, base)
            stack.enter_context(workers(1, env, logs))
            with psycopg.connect(url, autocommit=True) as conn:
                # The burst: deliveries while a full run holds the source.
                with conn.transaction():
                    full = start_and_defer(conn, busy, mode="full", trigger="manual")
                wait(
                    lambda: conn.execute("select state = 'running' from sync_runs where id = %s", (full,)).fetchone()
                    == (True,),
                    "the full run to start",
                )
                for i in range(args.deliveries):
                    deliver(url, keyring, busy, i)
                if ended(conn, full):
                    raise RuntimeError("the full run ended before the burst was delivered: raise --issues")
                wait(lambda: ended(conn, full), "the full run")
                free = time.perf_counter()
                runs = wait(lambda: webhook_runs_done(conn, busy, wanted), "the burst's webhook runs")
                catch_up = time.perf_counter() - free

                # Baseline: the burst's items in one run on the now idle source.
                started = time.perf_counter()
                with conn.transaction():
                    one = start_and_defer(
                        conn, busy, mode="incremental", trigger="manual", scope={"kind": "items", "items": items}
                    )
                wait(lambda: ended(conn, one), "the baseline run")
                baseline = time.perf_counter() - started
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; source latency "
        f"{args.latency_ms} ms per request; {args.deliveries} deliveries during a full run of {args.issues} issues"
    )
    print(f"baseline: one run of the {args.deliveries} items on the idle source {baseline:8.2f} s")
    print(
        f"burst:    {args.deliveries} deliveries became {len(runs)} run(s), loaded {catch_up:8.2f} s after the "
        f"source was free"
    )
    print(f"burst ÷ baseline {catch_up / baseline:.2f}; runs per delivery {len(runs) / args.deliveries:.2f}")


if __name__ == "__main__":
    main()
