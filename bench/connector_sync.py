"""Full-sync throughput per connector against its emulator, vs a bare paging loop (issue 6, Measure).

For each of jira, confluence and slack, in one process and against one emulator with no injected
latency:

(a) bare: the connector's ``enumerate(None, None)`` alone, counting RawItems (HTTP, paging, ACL facts,
    no database) — the ceiling the source API and the client allow;
(b) pipeline: a fresh database cloned from a migrated template, a source registered through
    ``app.services.sources`` and a full run through ``execute_run`` (mapping, hashing, upserts of
    entities/edges/refs, seen-set, resolve, cursor) — what ``harvester sync`` and the worker do, with
    the vector projection off (embedding has its own benchmark, bench/embed_throughput.py).

Prints items/s for both and the ratio b/a. Runs (a) and (b) alternate ``--repeats`` times and the best
of each is kept, so a noisy neighbour hurts both alike.

    python bench/connector_sync.py [--items 2000] [--repeats 2] [--only jira,slack]

The database: ``HARVESTER_DATABASE_URL``'s server when set (scratch databases are created and dropped
there), else an embedded PostgreSQL in a temporary directory, stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db.connect import connect
from app.db.migrate import migrate
from app.heap import settle
from app.pipeline.run import execute_run
from app.registry import get_spec
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from bench._db import embedded_server
from connectors.base import CallStats, RawItem, SourceConfig
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import EmulatorApp, serve
from connectors.emulators.slack import SlackEmulator

TOKEN = "bench-token-0001"


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[int], EmulatorApp]
    path: str  # appended to the emulator's base URL (Confluence Cloud lives under /wiki)


# Slack items are messages plus thread replies (~0.56 per top-level message in the generated data),
# and the DM channel is out of scope by default: 1,280 top-level messages make ~2,000 items.
CASES = (
    Case("jira", lambda n: JiraEmulator(n, seed=1, token=TOKEN), ""),
    Case("confluence", lambda n: ConfluenceEmulator(pages=n, seed=1, token=TOKEN), "/wiki"),
    Case("slack", lambda n: SlackEmulator(messages=int(n * 0.64), seed=1, token=TOKEN), ""),
)


def with_dbname(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo("", **params)


@contextmanager
def postgres() -> Iterator[str]:
    """URL of a maintenance database on a server we may create databases on."""
    external = os.environ.get("HARVESTER_DATABASE_URL")
    if external:
        yield with_dbname(external, "postgres")
        return
    with embedded_server() as (server, _):
        yield server.url("postgres")


def admin(server_url: str, statement: sql.Composed) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(statement)


@contextmanager
def migrated_template(server_url: str) -> Iterator[str]:
    """The name of a new database on ``server_url``'s server, migrated, for each run's database to be cloned
    from (a clone costs a file copy, a migration seconds); dropped on exit."""
    template = f"hv_bench_template_{uuid.uuid4().hex[:8]}"
    admin(server_url, sql.SQL("create database {}").format(sql.Identifier(template)))
    try:
        with tempfile.TemporaryDirectory(prefix="hv-bench-backups-") as backups:
            migrate(with_dbname(server_url, template), Path(backups))
        yield template
    finally:
        admin(server_url, sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(template)))


@contextmanager
def cloned(server_url: str, template: str) -> Iterator[str]:
    """The URL of a new database cloned from ``template``; dropped on exit."""
    name = f"hv_bench_{uuid.uuid4().hex[:10]}"
    admin(server_url, sql.SQL("create database {} template {}").format(sql.Identifier(name), sql.Identifier(template)))
    try:
        yield with_dbname(server_url, name)
    finally:
        admin(server_url, sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@contextmanager
def fresh_run(
    server_url: str, template: str, connector: str, base_url: str
) -> Iterator[tuple[psycopg.Connection[Any], Keyring, int]]:
    """A database cloned from ``template`` holding one ``connector`` source at ``base_url`` and its full run,
    started and not yet executed: the connection to run it on, the keyring its credential is sealed with,
    and the run's id. The database is dropped on exit."""
    with cloned(server_url, template) as url, connect(url, autocommit=True) as conn:
        keyring = Keyring(current=os.urandom(32))
        source = NewSource(name=connector, connector_type=connector, base_url=base_url, credential=TOKEN)
        source_id = create_source(conn, keyring, source)
        yield conn, keyring, start_run(conn, source_id, mode="full", trigger="manual")


def bare(case: Case, base_url: str) -> tuple[int, float]:
    spec = get_spec(case.name)
    config = SourceConfig(1, base_url + case.path, TOKEN, "all", (), {})
    connector = spec.create(config, CallStats())
    started = time.perf_counter()
    items = sum(1 for e in connector.enumerate(None, None) if isinstance(e, RawItem))
    elapsed = time.perf_counter() - started
    connector.close()
    return items, elapsed


def pipeline(case: Case, base_url: str, server_url: str, template: str) -> tuple[int, float]:
    with fresh_run(server_url, template, case.name, base_url + case.path) as (conn, keyring, run_id):
        started = time.perf_counter()
        outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring)
        elapsed = time.perf_counter() - started
    if outcome.state != "succeeded" or outcome.errors:
        raise SystemExit(f"{case.name}: run ended {outcome.state} with {outcome.errors} errors: {outcome.detail}")
    return outcome.done, elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated connector names")
    args = parser.parse_args(argv)
    settle()  # this process runs syncs as a worker does, and settles its heap as one (decision 92)
    wanted = {n for n in args.only.split(",") if n} or {c.name for c in CASES}
    with postgres() as server_url, migrated_template(server_url) as template:
        print(f"{'connector':<11} {'items':>6} {'bare items/s':>13} {'pipeline items/s':>17} {'ratio':>6}")
        for case in CASES:
            if case.name not in wanted:
                continue
            with serve(case.build(args.items)) as running:
                best_bare = best_pipe = 0.0
                count = 0
                for _ in range(args.repeats):
                    n, t = bare(case, running.base_url)
                    best_bare = max(best_bare, n / t)
                    m, u = pipeline(case, running.base_url, server_url, template)
                    best_pipe = max(best_pipe, m / u)
                    if n != m:
                        raise SystemExit(f"{case.name}: bare loop saw {n} items, the run loaded {m}")
                    count = n
            print(f"{case.name:<11} {count:>6} {best_bare:>13.0f} {best_pipe:>17.0f} {best_pipe / best_bare:>6.2f}")


if __name__ == "__main__":
    main()
