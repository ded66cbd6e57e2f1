"""A TCP proxy in front of a PostgreSQL server (its Unix socket or its TCP port) that delays every chunk by
half a round trip each way: the database a network hop away, as a managed PostgreSQL is, on a machine whose
kernel has no ``tc netem``. Used by bench/db_distance.py and tests/sync/test_resume.py.

Run as a process of its own (its event loop must not share the interpreter lock of the run it delays)::

    python bench/_proxy.py --socket /tmp/x/pg/.s.PGSQL.5432 --rtt-ms 2
    python bench/_proxy.py --target 127.0.0.1:5432 --rtt-ms 2

It listens on 127.0.0.1 at a free port and prints ``127.0.0.1:<port>`` on its first line. Each chunk read
from either side is written to the other ``rtt / 2`` after it arrived, in order; chunks in flight overlap,
so the delay adds latency, not a bandwidth limit. The event loop's timers have a resolution of about a
millisecond: the round trip a client sees is measured by the bench (``round_trip``), not assumed.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, chunk = await queue.get()
            if not chunk:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while chunk := await reader.read(1 << 16):
            queue.put_nowait((time.monotonic() + delay, chunk))
    except ConnectionError:
        pass  # the other side hung up: what is queued still goes out
    finally:
        queue.put_nowait((0.0, b""))
        with suppress(ConnectionError):
            await sender


async def _serve(socket_path: str | None, target: str | None, delay: float) -> None:
    async def connection(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            if socket_path is not None:
                server_r, server_w = await asyncio.open_unix_connection(socket_path)
            else:
                assert target is not None
                host, _, port = target.rpartition(":")
                server_r, server_w = await asyncio.open_connection(host, int(port))
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pump(client_r, server_w, delay), _pump(server_r, client_w, delay))

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


@contextmanager
def delayed(url: str, rtt_ms: float) -> Iterator[str]:
    """``url`` (its server on a Unix socket or a TCP port) reached through a proxy process that adds
    ``rtt_ms`` a round trip; the proxy stops on exit."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    host, port = str(params.get("host") or "localhost"), params.get("port") or 5432
    to = ["--socket", str(Path(host) / f".s.PGSQL.{port}")] if host.startswith("/") else ["--target", f"{host}:{port}"]
    proc = subprocess.Popen(
        [sys.executable, __file__, *to, "--rtt-ms", str(rtt_ms)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        host, _, port = proc.stdout.readline().strip().partition(":")
        if not port:
            raise RuntimeError(f"the delaying proxy did not start (exit code {proc.poll()})")
        params.update(host=host, port=port, sslmode="disable")
        yield make_conninfo("", **params)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def round_trip(url: str, samples: int = 50) -> float:
    """Milliseconds a ``select 1`` takes over ``url``, the mean of ``samples``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select 1")
        started = time.perf_counter()
        for _ in range(samples):
            conn.execute("select 1")
        return (time.perf_counter() - started) / samples * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    to = parser.add_mutually_exclusive_group(required=True)
    to.add_argument("--socket", help="the server's Unix socket file (.s.PGSQL.<port>)")
    to.add_argument("--target", help="the server's host:port")
    parser.add_argument("--rtt-ms", type=float, required=True, help="round trip added, milliseconds")
    args = parser.parse_args()
    try:
        asyncio.run(_serve(args.socket, args.target, args.rtt_ms / 2000))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
