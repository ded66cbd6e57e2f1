"""Admin API throughput vs a bare Litestar handler in the same run (issue 4, benchmarks).

Measures requests/s and p50/p95 latency of
  (a) ``GET /api/v1/sources/{id}/runs`` (a source with 200 runs; page of 50, bearer token checked),
  (b) ``POST /api/v1/webhooks/{id}`` (a signed Jira delivery, a new delivery id each time: HMAC check,
      dedupe insert and a deferred job in one transaction),
against (0) a bare Litestar app under the same uvicorn settings: ``GET`` and ``POST`` handlers that
return a constant, and (0') the floor of any handler that reads the database: a bare Litestar ``GET`` that
runs ``select 1`` through the API's own pool (``open_pool``: role harvester_api, the same checks) on a
worker thread, as ``GET runs`` does, and (0'') the same ``select 1`` awaited on the event loop through
psycopg_pool's AsyncConnectionPool (issue 15 §2: would an asyncio database path beat the thread hop?), and
(0''') bare Litestar serving the same rows: the runs-list SQL of (a) through the same pool on a thread,
the rows returned as JSON, no token, middleware or input guard (decision 60: ours / that isolates
our own overhead; ours / the constant handler stays the issue's goal), and (0'''') bare Litestar answering
with the very bytes ours answered (case ``bytes``, measured after ours: its body is read from ours once,
then served as a constant): a 28 KB page costs the loopback, the server's writes and the load generator's
reads more than a 16-byte constant, and on a fast host that alone doubles a bare handler's p95 (decision
105); ours / that is our own work per request with the transport held equal.
Each server is its own process on 127.0.0.1. Ratios (ours / bare) are printed.

``--loop``/``--http`` choose uvicorn's event loop and HTTP parser for every server (``auto``: uvloop and
httptools when installed, as ``harvester serve``); ``--cases`` picks the servers; ``--ours-from DIR``
serves ours from another checkout (e.g. ``git archive`` of main) for a before/after in one session.

Load generator (``--generator``): ``wrk`` (Debian package ``wrk``; one C thread with ``--concurrency``
connections for ``--duration`` seconds, p95 from its histogram) when it is installed, else a bounded
asyncio + httpx loop with ``--concurrency`` requests in flight. The Python loop costs about as much CPU
per request as the bare handler, so on a small machine it caps the baseline and flatters the ratio;
wrk does not (issue 15 §2: the ratio must measure the server).

    python bench/api_throughput.py [--generator wrk|python] [--duration 10] [--requests 2000] [--concurrency 16]
        [--loop auto|asyncio|uvloop] [--http auto|h11|httptools] [--cases bare,floor,afloor,rows,ours,bytes]
        [--ours-from DIR] [--before-from DIR] [--churn N]

``--churn N``: a thread updates one run of the measured page N times a second for the whole run (as a sync
in progress does), so every change clears the API's runs cache (decision 65) and its hit rate drops.

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
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.api.auth import new_token, token_hash  # noqa: E402
from app.db.connect import connect  # noqa: E402
from app.queries import runs as rq  # noqa: E402
from app.queries import tokens as tq  # noqa: E402
from app.secrets import Keyring  # noqa: E402
from app.services.sources import NewSource, create_source  # noqa: E402
from bench._db import bench_database  # noqa: E402

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


def bytes_app(body: bytes) -> object:
    """The baseline with the transport held equal: bare Litestar answering ``GET /const`` with ``body``
    (the bytes ours answered), as JSON, nothing else."""
    from litestar import Litestar, MediaType, get

    # Bytes are sent as they are (not serialised again); the media type names them JSON.
    @get("/const", sync_to_thread=False, media_type=MediaType.JSON)
    def const_bytes() -> bytes:
        return body

    return Litestar([const_bytes])


def _pool_lifespan(url: str, state: dict[str, Any]) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """A Litestar lifespan that opens the API's own pool on ``url`` at start-up, as ``state["db"]``, and closes
    it at shutdown (the baselines' database path is the API's)."""
    from contextlib import asynccontextmanager

    import anyio.to_thread

    from app.api.db import Database, open_pool

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        pool = await anyio.to_thread.run_sync(lambda: open_pool(url))
        state["db"] = Database(pool)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(pool.close)

    return lifespan


def floor_app(url: str) -> object:
    """The second baseline: one database round trip per request through the API's pool, nothing else."""
    from litestar import Litestar, get

    from app.api.db import Database

    state: dict[str, Database] = {}
    lifespan = _pool_lifespan(url, state)

    @get("/const", sync_to_thread=True)
    def select_one() -> dict[str, int]:
        with state["db"].read() as conn:
            row = conn.execute("select 1").fetchone()
        return {"one": row[0] if row else 0}

    @get("/health", sync_to_thread=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return Litestar([select_one, health], lifespan=[lifespan])


def rows_app(url: str, source_id: int) -> object:
    """The third baseline, bare Litestar serving the same rows (decision 60): one ``GET`` that runs the
    runs-list SQL ``GET runs`` runs (``ListRunsPage``, one source, a page of 50 fetched as 51) through the
    API's own pool in autocommit (``open_pool`` + ``Database.read()``) on a worker thread and returns the
    rows as JSON through Litestar's serializer: no token, no middleware, no input guard, no parameters, no
    progress or scrubbing. Ours divided by it is what our own layers cost on top of the same database
    work; ours divided by the constant handler stays the issue's goal."""
    from litestar import Litestar, get

    from app.api.db import Database

    state: dict[str, Database] = {}
    lifespan = _pool_lifespan(url, state)

    @get("/const", sync_to_thread=True)
    def same_rows() -> list[rq.SyncRunHistoryRow]:
        with state["db"].read() as conn:
            rows = rq.list_runs_page(
                conn,
                source_id=source_id,
                state=None,
                mode=None,
                run_type=None,
                trigger=None,
                started_from=None,
                started_to=None,
                before_id=None,
                lim=51,
            )
        return rows[:50]

    @get("/health", sync_to_thread=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return Litestar([same_rows, health], lifespan=[lifespan])


def async_floor_app(url: str) -> object:
    """The asyncio floor (issue 15 §2: would an asyncio-native database path beat the thread hop?): the
    same ``select 1`` awaited on the event loop through psycopg_pool's AsyncConnectionPool, its
    connections in autocommit and SET ROLE harvester_api, pinged on checkout unless handed back within
    ``RECENTLY_USED`` seconds, as the API's sync pool does."""
    import time
    from contextlib import asynccontextmanager

    from litestar import Litestar, get
    from psycopg_pool import AsyncConnectionPool

    from app.api.db import RECENTLY_USED

    returned: dict[int, float] = {}

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("set role harvester_api")

    async def check(conn: psycopg.AsyncConnection[Any]) -> None:
        if time.monotonic() - returned.get(id(conn), float("-inf")) >= RECENTLY_USED:
            await AsyncConnectionPool.check_connection(conn)

    state: dict[str, AsyncConnectionPool[psycopg.AsyncConnection[Any]]] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url, min_size=2, max_size=10, kwargs={"autocommit": True}, configure=configure, check=check, open=False
        )
        await pool.open(wait=True, timeout=30)
        state["pool"] = pool
        try:
            yield
        finally:
            await pool.close()

    @get("/const")
    async def select_one() -> dict[str, int]:
        async with state["pool"].connection() as conn:
            cur = await conn.execute("select 1")
            row = await cur.fetchone()
            returned[id(conn)] = time.monotonic()
        return {"one": row[0] if row else 0}

    @get("/health", sync_to_thread=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return Litestar([select_one, health], lifespan=[lifespan])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# base URL -> the serving process, whose CPU time per request the bench reports beside req/s: on a
# shared, loaded machine req/s of one server swings run to run, the CPU it spends per request does not.
SERVER_PIDS: dict[str, int] = {}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (and its threads) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def serving(args: list[str], env: dict[str, str], cwd: Path = REPO) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *args, "--port", str(port)],
        cwd=cwd,
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
        SERVER_PIDS[base] = proc.pid
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


def churn(url: str, source_id: int, per_second: float, stop: threading.Event) -> None:
    """Update the newest run of the source ``per_second`` times a second until ``stop`` (a worker's progress
    commits): each commit NOTIFYs harvester_runs and clears the API's runs cache."""
    with psycopg.connect(url, autocommit=True) as conn:
        run_id = conn.execute("select max(id) from sync_runs where source_id = %s", (source_id,)).fetchone()
        while not stop.wait(1.0 / per_second):
            conn.execute("update sync_runs set heartbeat_at = clock_timestamp() where id = %s", run_id)


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


WRK_SCRIPT = r"""
-- Requests come from a file (one per line: method, path, then header=value fields, then the body, tab
-- separated) and are sent round robin; done() prints what the bench parses.
local reqs = {}
local i = 0
init = function(args)
  for line in io.lines(args[1]) do
    local fields = {}
    for f in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = f end
    local headers = {}
    for k = 3, #fields - 1 do
      local name, value = fields[k]:match("^([^=]+)=(.*)$")
      headers[name] = value
    end
    local body = fields[#fields]
    if body == "" then body = nil end
    reqs[#reqs + 1] = wrk.format(fields[1], fields[2], headers, body)
  end
end
request = function()
  i = i + 1
  return reqs[(i - 1) % #reqs + 1]
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout))
end
"""


def wrk_load(base: str, duration: float, concurrency: int, requests: list[Req]) -> tuple[float, float, float, float]:
    """(requests/s, p50 ms, p95 ms, server CPU ms per request) from wrk: 2 s of warm-up, then ``duration``
    seconds measured."""
    with tempfile.TemporaryDirectory(prefix="hv-wrk-") as tmp:
        script, data = Path(tmp) / "bench.lua", Path(tmp) / "requests.tsv"
        script.write_text(WRK_SCRIPT)
        with data.open("w") as out:
            for method, path, headers, body in requests:
                fields = [method, path, *(f"{k}={v}" for k, v in headers.items()), (body or b"").decode()]
                out.write("\t".join(fields) + "\n")
        result: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
        pid = SERVER_PIDS.get(base)
        for seconds in (2, max(1, round(duration))):
            cpu_before = cpu_seconds(pid) if pid else 0.0
            cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "-s", str(script), base, "--", str(data)]
            out_text = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
            line = next(x for x in out_text.splitlines() if x.startswith("RESULT "))
            n, micros, p50, p95, errors = (int(v) for v in line.split()[1:])
            if errors:
                raise RuntimeError(f"wrk saw {errors} failed or non-2xx responses:\n{out_text}")
            cpu_ms = (cpu_seconds(pid) - cpu_before) * 1000 / n if pid and n else float("nan")
            result = (n / (micros / 1e6), p50 / 1000, p95 / 1000, cpu_ms)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per case (wrk)")
    parser.add_argument("--generator", choices=("wrk", "python"), default="wrk" if shutil.which("wrk") else "python")
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--async-floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rows-server", type=int, default=0, help=argparse.SUPPRESS)  # the source id
    parser.add_argument("--bytes-server", type=Path, default=None, help=argparse.SUPPRESS)  # the body's file
    parser.add_argument(
        "--cases",
        default="bare,floor,afloor,rows,ours,bytes",
        help="servers to measure: bare, floor, afloor, rows, ours, bytes (comma list; bytes needs ours)",
    )
    parser.add_argument(
        "--ours-from",
        type=Path,
        default=REPO,
        help="serve ours from this checkout (e.g. `git archive` of main) for a before/after in one session",
    )
    parser.add_argument(
        "--before-from",
        type=Path,
        default=None,
        help="also serve ours from this checkout, measured just before ours as 'before' rows (A/B in one run)",
    )
    parser.add_argument(
        "--loop", choices=("auto", "asyncio", "uvloop"), default="auto", help="uvicorn event loop, every server"
    )
    parser.add_argument(
        "--http", choices=("auto", "h11", "httptools"), default="auto", help="uvicorn HTTP parser, every server"
    )
    parser.add_argument(
        "--churn", type=float, default=0.0, help="update one run of the page N times a second while measuring"
    )
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server or args.floor_server or args.async_floor_server or args.rows_server or args.bytes_server:
        import uvicorn

        url = os.environ.get("HARVESTER_DATABASE_URL", "")
        served = bare_app()
        if args.floor_server or args.async_floor_server:
            served = floor_app(url) if args.floor_server else async_floor_app(url)
        if args.rows_server:
            served = rows_app(url, args.rows_server)
        if args.bytes_server:
            served = bytes_app(args.bytes_server.read_bytes())
        uvicorn.run(
            served,  # type: ignore[arg-type]
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            access_log=False,
            loop=args.loop,
            http=args.http,
        )
        return

    load_before = os.getloadavg()
    key = os.urandom(32)
    with bench_database() as url, tempfile.TemporaryDirectory(prefix="hv-api-bench-") as data_dir:
        source_id, token = seed(url, Keyring(key))
        # The served API's data dir (backups of its start-up migration check): not the user's default.
        env = {
            **os.environ,
            "HARVESTER_DATABASE_URL": url,
            "HARVESTER_SECRET_KEY": key.hex(),
            "HARVESTER_DATA_DIR": data_dir,
        }
        auth = {"Authorization": f"Bearer {token}"}

        def runs_request(i: int) -> Req:
            return "GET", f"/api/v1/sources/{source_id}/runs", auth, None

        def webhook_request(i: int) -> Req:
            # A distinct issue per delivery: the receiver also folds deliveries with an equal body.
            body = json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": str(10000 + i)}}).encode()
            signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            headers = {"X-Hub-Signature": signature, "X-Atlassian-Webhook-Identifier": f"bench-{i}"}
            return "POST", f"/api/v1/webhooks/{source_id}", headers, body

        Result = tuple[float, float, float, float]

        def measure(base: str, make: Callable[[int], Req], expect: set[int], distinct: int) -> Result:
            if args.generator == "wrk":
                return wrk_load(base, args.duration, args.concurrency, [make(i) for i in range(distinct)])
            return (*asyncio.run(load(base, args.requests, args.concurrency, make, expect)), float("nan"))

        stop_churn = threading.Event()
        churner = threading.Thread(target=churn, args=(url, source_id, args.churn, stop_churn), daemon=True)
        if args.churn > 0:
            churner.start()
        # Webhook deliveries must stay new for the whole run (a repeated id is answered from the dedupe
        # table): more distinct ones than the fastest server answers in warm-up + duration.
        deliveries = int(3000 * (args.duration + 2))
        results: dict[str, tuple[float, float, float, float]] = {}
        uv = ["--loop", args.loop, "--http", args.http]
        cases = set(args.cases.split(","))

        def const(i: int) -> Req:
            return ("GET", "/const", {}, None)

        if "bare" in cases:
            with serving([str(REPO / "bench" / "api_throughput.py"), "--bare-server", *uv], env) as bare:
                results["bare GET"] = measure(bare, const, {200}, 1)
                results["bare POST"] = measure(bare, lambda i: ("POST", "/const", {}, None), {202}, 1)
        if "floor" in cases:
            with serving([str(REPO / "bench" / "api_throughput.py"), "--floor-server", *uv], env) as floor:
                results["select 1 GET"] = measure(floor, const, {200}, 1)
        if "afloor" in cases:
            with serving([str(REPO / "bench" / "api_throughput.py"), "--async-floor-server", *uv], env) as floor:
                results["select 1 async"] = measure(floor, const, {200}, 1)
        if "rows" in cases:
            rows_server = [str(REPO / "bench" / "api_throughput.py"), "--rows-server", str(source_id), *uv]
            with serving(rows_server, env) as rows:
                results["same rows GET"] = measure(rows, const, {200}, 1)
        # `auto` passes nothing, so an older checkout's serve (--ours-from) without these flags runs too.
        chosen = [
            *(["--loop", args.loop] if args.loop != "auto" else []),
            *(["--http", args.http] if args.http != "auto" else []),
        ]
        serve = ["-m", "app.cli", "serve", "--host", "127.0.0.1", "--log-level", "warning", *chosen]
        if "ours" in cases and args.before_from is not None:
            with serving(serve, env, cwd=args.before_from) as before:
                results["GET runs before"] = measure(before, runs_request, {200}, 1)
        ours_body: bytes | None = None
        if "ours" in cases:
            with serving(serve, env, cwd=args.ours_from) as ours:
                results["GET runs"] = measure(ours, runs_request, {200}, 1)
                _, path, headers, _ = runs_request(0)
                ours_body = httpx.get(ours + path, headers=headers, timeout=30).raise_for_status().content
                results["POST webhook"] = measure(ours, webhook_request, {202}, deliveries)
        if "bytes" in cases and ours_body is not None:
            body_file = Path(data_dir) / "ours-body.json"
            body_file.write_bytes(ours_body)
            bytes_server = [str(REPO / "bench" / "api_throughput.py"), "--bytes-server", str(body_file), *uv]
            with serving(bytes_server, env) as same:
                results["bare same bytes"] = measure(same, const, {200}, 1)
            print(f"GET runs answers {len(ours_body):,} bytes; 'bare same bytes' answers the same bytes")

        stop_churn.set()
        if args.churn > 0:
            churner.join(timeout=10)

    if args.churn > 0:
        print(f"churn: one run of the page updated {args.churn:g} times a second (as a sync in progress)")
    volume = f"{args.duration:g} s" if args.generator == "wrk" else f"{args.requests} requests"
    print(f"generator {args.generator}, {volume}, {args.concurrency} in flight, {os.cpu_count()} CPUs")
    load_after = os.getloadavg()
    print(f"load average (1 min) {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(f"{'endpoint':16} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'CPU ms/req':>10}")
    for name, (rps, p50, p95, cpu_ms) in results.items():
        print(f"{name:16} {rps:8.0f} {p50:8.2f} {p95:8.2f} {cpu_ms:10.3f}")
    pairs = (
        ("GET runs", "bare GET"),
        ("GET runs", "bare same bytes"),
        ("bare same bytes", "bare GET"),
        ("POST webhook", "bare POST"),
        ("select 1 GET", "bare GET"),
        ("select 1 async", "bare GET"),
        ("GET runs", "select 1 GET"),
        ("GET runs", "select 1 async"),
        ("same rows GET", "bare GET"),
        ("GET runs", "same rows GET"),
        ("GET runs before", "bare GET"),
        ("GET runs before", "same rows GET"),
        ("GET runs", "GET runs before"),
        ("POST webhook", "select 1 GET"),
    )
    for ours, bare in pairs:
        if ours not in results or bare not in results:
            continue
        rps_ratio = results[ours][0] / results[bare][0]
        p95_ratio = results[ours][2] / results[bare][2]
        cpu_ratio = results[ours][3] / results[bare][3]
        print(f"{ours} vs {bare}: throughput x{rps_ratio:.2f}, p95 x{p95_ratio:.2f}, CPU/request x{cpu_ratio:.2f}")


if __name__ == "__main__":
    main()
