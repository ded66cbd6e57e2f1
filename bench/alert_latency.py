"""Seconds from a run failing to its alert arriving at a local receiver, through a real `harvester worker`.

    .venv/bin/python -m bench.alert_latency [--repeat 5]

A source whose base URL has no listener fails at start; the run's end queues ``send_alert`` in the same
transaction as its incident; a real worker process (``--no-periodic``: sync and alerts queues) picks it
up by LISTEN/NOTIFY and POSTs to a receiver on 127.0.0.1. Measured from the run's failure commit
(execute_run returning) to the receiver's first byte.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg

from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.settings import update_settings
from app.services.sources import NewSource, create_source, start_run
from bench._db import bench_database

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    arrivals: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            arrivals.append(time.monotonic())
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a: Any) -> None:
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    key = os.urandom(32)
    keyring = Keyring(current=key)
    with bench_database() as url:
        env = {
            **os.environ,
            "HARVESTER_DATABASE_URL": url,
            "HARVESTER_SECRET_KEY": key.hex(),
            "HARVESTER_EMBEDDER": "none",
        }
        data_dir = Path(f"/tmp/hv-alert-bench-{os.getpid()}")
        env["HARVESTER_DATA_DIR"] = str(data_dir)
        worker = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--no-periodic", "--log-level", "warning"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        try:
            # Autocommit: execute_run declares each of its transactions itself (it refuses a connection with
            # an implicit one open), and everything else here commits statement by statement.
            with psycopg.connect(url, autocommit=True) as conn:
                port = receiver.server_address[1]
                update_settings(
                    conn, {"alert_channels": [{"kind": "webhook", "url": f"http://127.0.0.1:{port}/"}]}, keyring=keyring
                )
                time.sleep(3)  # the worker is listening
                samples = []
                for i in range(args.repeat):
                    source_id = create_source(
                        conn,
                        keyring,
                        NewSource(f"down-{i}", "jira", f"http://127.0.0.1:{free_port()}", credential="x" * 20),
                    )
                    run_id = start_run(conn, source_id, mode="full", trigger="manual")
                    before = len(arrivals)
                    outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring)
                    failed_at = time.monotonic()
                    assert outcome.state == "failed"
                    deadline = failed_at + 60
                    while len(arrivals) == before and time.monotonic() < deadline:
                        time.sleep(0.005)
                    samples.append(arrivals[-1] - failed_at)
            print(
                f"run failed -> alert received ({args.repeat} runs, real worker): "
                f"median {statistics.median(samples) * 1000:.0f} ms, max {max(samples) * 1000:.0f} ms"
            )
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            receiver.shutdown()
            shutil.rmtree(data_dir, ignore_errors=True)  # the worker's data directory


if __name__ == "__main__":
    main()
