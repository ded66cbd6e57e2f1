"""Admin API throughput vs a bare Litestar handler in the same run (issue 4, benchmarks).

Measures requests/s and p50/p95 latency of
  (a) ``GET /api/v1/sources/{id}/runs`` (a source with 200 runs; page of 50, bearer token checked),
  (b) ``POST /api/v1/webhooks/{id}`` (a signed Jira delivery, a new delivery id each time: HMAC check,
      dedupe insert and a deferred job in one transaction),
against (0) a bare Litestar app under the same uvicorn settings: ``GET`` and ``POST`` handlers that
return a constant. Each server is its own process on 127.0.0.1; the load generator is a bounded
asyncio + httpx loop with ``--concurrency`` requests in flight. Ratios (ours / bare) are printed.

    python bench/api_throughput.py [--requests 2000] [--concurrency 16]

The generator shares the machine with the servers, so absolute numbers are a floor; the ratios compare
like with like.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.api.auth import new_token, token_hash  # noqa: E402
from app.db import embedded  # noqa: E402
from app.db.connect import connect  # noqa: E402
from app.db.migrate import migrate  # noqa: E402
from app.queries import tokens as tq  # noqa: E402
from app.secrets import Keyring  # noqa: E402
from app.services.sources import NewSource, create_source  # noqa: E402

SECRET = "bench-webhook-secret-000000"
Req = tuple[str, str, dict[str, str], bytes | None]  # method, path, headers, body


def bare_app() -> object:
    """The baseline: Litestar with one constant GET and one constant POST, nothing else."""
    from litestar import Litestar, get, post

    @get("/const", sync_to_thread=False)
    def const_get() -> dict[str, str]:
        return {"status": "ok"}

    @post("/const", sync_to_thread=False, status_code=202)
    def const_post() -> dict[str, str]:
        return {"status": "accepted"}

    return Litestar([const_get, const_post])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def database() -> Iterator[str]:
    data_dir = Path(tempfile.mkdtemp(prefix="hv-bench-api-", dir="/tmp"))
    server = embedded.start(data_dir)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = server.url("postgres")
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        url = server.url(name)
        migrate(url, data_dir / "backups")
        yield url
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def serving(args: list[str], env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *args, "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/health", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def seed(url: str, keyring: Keyring) -> tuple[int, str]:
    with connect(url) as conn:
        source_id = create_source(
            conn,
            keyring,
            NewSource(
                name="bench",
                connector_type="jira",
                base_url="http://127.0.0.1:9",
                credential="t" * 20,
                webhook_secret=SECRET,
                webhook_enabled=True,
            ),
        )
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, started_at, finished_at, entities_done, "
            "entities_total) select %s, 'incremental', 'schedule', 'succeeded', now() - interval '1 minute', now(), "
            "100, 100 from generate_series(1, 200)",
            (source_id,),
        )
        token = new_token()
        tq.create_token(
            conn, name="bench", scope="read", token_hash=token_hash(token), expires_at=None, principals=None
        )
        conn.commit()
    return source_id, token


async def load(
    base: str, n: int, concurrency: int, make: Callable[[int], Req], expect: set[int]
) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p95 ms) of n requests with `concurrency` in flight."""
    latencies: list[float] = []
    counter = iter(range(n))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:

        async def worker() -> None:
            for i in counter:
                started = time.perf_counter()
                method, path, headers, body = make(i)
                response = await client.request(method, path, headers=headers, content=body)
                latencies.append(time.perf_counter() - started)
                if response.status_code not in expect:
                    raise RuntimeError(f"unexpected {response.status_code}: {response.text[:200]}")

        for i in range(min(50, n)):  # warm-up: connections, pools, caches
            method, path, headers, body = make(n + i)
            await client.request(method, path, headers=headers, content=body)
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[max(int(len(latencies) * 0.95) - 1, 0)]
    return n / wall, statistics.median(latencies) * 1000, p95 * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        import uvicorn

        uvicorn.run(bare_app(), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)  # type: ignore[arg-type]
        return

    key = os.urandom(32)
    with database() as url:
        source_id, token = seed(url, Keyring(key))
        env = {**os.environ, "HARVESTER_DATABASE_URL": url, "HARVESTER_SECRET_KEY": key.hex()}
        auth = {"Authorization": f"Bearer {token}"}

        def runs_request(i: int) -> Req:
            return "GET", f"/api/v1/sources/{source_id}/runs", auth, None

        def webhook_request(i: int) -> Req:
            body = json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": str(10000 + i % 500)}}).encode()
            signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            headers = {"X-Hub-Signature": signature, "X-Atlassian-Webhook-Identifier": f"bench-{i}"}
            return "POST", f"/api/v1/webhooks/{source_id}", headers, body

        results: dict[str, tuple[float, float, float]] = {}
        with serving([str(REPO / "bench" / "api_throughput.py"), "--bare-server"], env) as bare:
            results["bare GET"] = asyncio.run(
                load(bare, args.requests, args.concurrency, lambda i: ("GET", "/const", {}, None), {200})
            )
            results["bare POST"] = asyncio.run(
                load(bare, args.requests, args.concurrency, lambda i: ("POST", "/const", {}, None), {202})
            )
        serve = ["-m", "app.cli", "serve", "--host", "127.0.0.1", "--log-level", "warning"]
        with serving(serve, env) as ours:
            results["GET runs"] = asyncio.run(load(ours, args.requests, args.concurrency, runs_request, {200}))
            results["POST webhook"] = asyncio.run(load(ours, args.requests, args.concurrency, webhook_request, {202}))

    print(f"{args.requests} requests, {args.concurrency} in flight, {os.cpu_count()} CPUs")
    print(f"{'endpoint':14} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for name, (rps, p50, p95) in results.items():
        print(f"{name:14} {rps:8.0f} {p50:8.2f} {p95:8.2f}")
    for ours, bare in (("GET runs", "bare GET"), ("POST webhook", "bare POST")):
        rps_ratio = results[ours][0] / results[bare][0]
        p95_ratio = results[ours][2] / results[bare][2]
        print(f"{ours} vs {bare}: throughput x{rps_ratio:.2f}, p95 x{p95_ratio:.2f}")


if __name__ == "__main__":
    main()
