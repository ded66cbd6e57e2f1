"""CLI: `harvester demo`, the whole product in one command (issue 6).

Starts (or attaches to) the embedded PostgreSQL, migrates a fresh ``harvester_demo`` database, starts the
Jira, Confluence and Slack emulators with one demo company (the same people; Jira issues link Confluence
pages and Slack threads, and those mention Jira keys back), registers the three sources through the code
the API uses, runs their full syncs through a real worker process with live progress, prints a summary
read from the database, and answers a few searches as two people with different rights. ``--serve``
then keeps the API and the worker running until Ctrl-C. Everything it started is stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from app.cli.common import Args, add_command
from app.config import load_config
from app.db import embedded
from app.db.connect import connect
from app.errors import HarvesterError

# The rest is imported where it is used: `harvester --help` and the other commands import this module.
if TYPE_CHECKING:
    import psycopg
    from rich.console import Console

    from app.queries import runs as rq
    from app.secrets import Keyring
    from app.vector.search import Principal

COMPANY = "demo"
# The demo database's key, beside the data dir's own secret.key (which belongs to its usual database).
DEMO_KEY_FILE = "demo-secret.key"
STALL_AFTER = 120.0  # seconds without any run changing state or count before the demo gives up
DEMO_DEADLINE = 1800.0  # the demo's syncs never take longer than this
PYTHON = [sys.executable]


@dataclass(frozen=True, slots=True)
class Sizes:
    issues: int = 60
    pages: int = 40
    messages: int = 150


@dataclass
class Processes:
    """Child processes the demo started; all are stopped on exit, whatever happens.

    Each child's output goes to ``<log_dir>/<name>.log`` (0600 in the 0700 data dir), so a failing worker
    or emulator can be read afterwards; the demo names the file when something goes wrong.
    """

    log_dir: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    logs: dict[str, Path] = field(default_factory=dict)

    def start(
        self, args: Sequence[str], env: dict[str, str] | None = None, *, name: str, read_url: bool = False
    ) -> str | None:
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        log_path = self.log_dir / f"{name}.log"
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as log_file:
            proc = subprocess.Popen(
                [*PYTHON, *args],
                env=env,
                stdout=subprocess.PIPE if read_url else log_file,
                stderr=log_file,
                text=True,
                start_new_session=True,  # Ctrl-C reaches the demo, which then stops its children in order
            )
        self.procs.append(proc)
        self.logs[name] = log_path
        if not read_url:
            return None
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("http"):
            raise HarvesterError(f"{name} did not start (printed {line!r}); see {log_path}")
        return line

    def dead(self) -> list[str]:
        """Names of the children that have exited."""
        return [name for name, proc in zip(self.logs, self.procs, strict=True) if proc.poll() is not None]

    def tail(self, name: str, lines: int = 5) -> str:
        try:
            text = self.logs[name].read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def _with_db(url: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    params["dbname"] = name
    return make_conninfo("", **params)


@contextlib.contextmanager
def _server(database: str) -> Iterator[tuple[str, embedded.EmbeddedServer | None]]:
    """The demo database on the configured server, created afresh; the embedded server is stopped at
    the end only if the demo started it."""
    import psycopg
    from psycopg import sql

    config = load_config()
    server: embedded.EmbeddedServer | None = None
    if config.database_url:
        admin = _with_db(config.database_url, "postgres")
    else:
        server = embedded.start(config.data_dir)
        admin = server.url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(database)))
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(database)))
    try:
        yield _with_db(admin, database), server
    finally:
        if server is not None and server.started_here:
            server.stop()


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # a service manager's stop (or `timeout`) cleans up like Ctrl-C


def run_demo(*, serve: bool, port: int, sizes: Sizes, database: str) -> int:
    from rich.console import Console

    signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    console = Console()
    started = time.monotonic()
    config = load_config()
    children = Processes(log_dir=config.data_dir / "demo-logs")
    with _server(database) as (url, _):
        try:
            return _demo(console, config.data_dir, url, children, serve=serve, port=port, sizes=sizes, started=started)
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: stopping everything the demo started[/]")
            return 130
        finally:
            children.stop_all()


def _demo(
    console: Console,
    data_dir: Path,
    url: str,
    children: Processes,
    *,
    serve: bool,
    port: int,
    sizes: Sizes,
    started: float,
) -> int:

    from app.db.migrate import migrate
    from app.services.jobs import start_and_defer
    from app.services.sources import NewSource, create_source

    console.rule("[bold]Harvester demo")
    migrate(url, data_dir / "backups")
    console.print(f"database migrated: {url.split('password=')[0]}")
    keyring, key_file = _demo_keyring(data_dir)
    tokens = {name: os.urandom(12).hex() for name in ("jira", "confluence", "slack")}
    common = ["--host", "127.0.0.1", "--port", "0", "--seed", "7", "--company", COMPANY]
    base = {
        "jira": children.start(
            [
                "-m",
                "connectors.emulators.jira",
                *common,
                "--issues",
                str(sizes.issues),
                "--token",
                tokens["jira"],
                "--confluence-pages",
                str(sizes.pages),
                "--slack-messages",
                str(sizes.messages),
            ],
            name="jira-emulator",
            read_url=True,
        ),
        "confluence": children.start(
            [
                "-m",
                "connectors.emulators.confluence",
                *common,
                "--pages",
                str(sizes.pages),
                "--token",
                tokens["confluence"],
                "--jira-issues",
                str(sizes.issues),
            ],
            name="confluence-emulator",
            read_url=True,
        ),
        "slack": children.start(
            [
                "-m",
                "connectors.emulators.slack",
                *common,
                "--messages",
                str(sizes.messages),
                "--token",
                tokens["slack"],
                "--jira-issues",
                str(sizes.issues),
                "--confluence-pages",
                str(sizes.pages),
            ],
            name="slack-emulator",
            read_url=True,
        ),
    }
    for name, address in base.items():
        console.print(f"emulator {name:11} {address}")
    console.print(f"logs     {children.log_dir} (one file per child process)")

    env = {**os.environ, "HARVESTER_DATABASE_URL": url, "HARVESTER_SECRET_KEY": keyring.current.hex()}
    children.start(["-m", "app.cli", "worker", "--concurrency", "2", "--no-periodic"], env, name="worker")

    run_ids: list[int] = []
    with connect(url, autocommit=True) as conn:
        for name, connector in (("Jira", "jira"), ("Confluence", "confluence"), ("Slack", "slack")):
            # The source, its run and the run's job commit together.
            with conn.transaction():
                source_id = create_source(
                    conn,
                    keyring,
                    NewSource(
                        name=name,
                        connector_type=connector,
                        base_url=str(base[connector]),
                        credential=tokens[connector],
                    ),
                )
                run_ids.append(start_and_defer(conn, source_id, mode="full", trigger="connect"))

    states = _follow(console, url, run_ids, children)
    failed = [s for s in states if s.state != "succeeded"]
    _summary(console, url, states, time.monotonic() - started)
    if failed:
        # The reasons, not a search over half-loaded data (issue 10 §3: failures are loud).
        for s in failed:
            console.print(f"[red]run #{s.id} ({s.name}) ended {s.state}: {s.error_detail}[/]")
        console.print(f"worker log: {children.logs['worker']}")
        return 1
    _searches(console, url)
    _join(console, data_dir, url, key_file)
    if serve:
        return _serve(console, url, env, children, port)
    return 0


def _demo_keyring(data_dir: Path) -> tuple[Keyring, Path]:
    """A fresh key for the fresh demo database, kept 0600 in the data dir so another shell can join it.

    The worker and the API get it through the environment; a second shell reads it from the file
    (issue 14 item 7), so the key is never printed.
    """
    from app.secrets import Keyring

    key = os.urandom(32)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = data_dir / DEMO_KEY_FILE
    path.unlink(missing_ok=True)  # the database is new, so is its key
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex())
    return Keyring(key), path


def _join(console: Console, data_dir: Path, url: str, key_file: Path) -> None:
    """The lines that make another shell use the demo's database and key (printed unwrapped)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    had_password = params.pop("password", None) is not None
    console.rule("join from another shell")
    for line in (
        f"export HARVESTER_DATA_DIR='{data_dir}'",
        f"export HARVESTER_DATABASE_URL='{make_conninfo('', **params)}'",
        f"export HARVESTER_SECRET_KEY=\"$(cat '{key_file}')\"",
    ):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    if had_password:
        console.print("(add the database password: export PGPASSWORD=...)", soft_wrap=True, markup=False)


def _follow(console: Console, url: str, run_ids: list[int], children: Processes) -> list[rq.ListRunProgressRow]:
    """Live progress of the worker's runs, read from sync_runs (N of M, rate, ETA).

    Never waits forever (issue 10 §3): a child that exits, runs that make no progress for
    :data:`STALL_AFTER` seconds, or :data:`DEMO_DEADLINE` passing end the demo with one line naming the
    child's log and its last lines.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from app.queries import runs as rq

    progress = Progress(
        TextColumn("[bold]{task.description:12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>8}"),
        TextColumn("{task.fields[state]:10}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    first = last_change = time.monotonic()
    seen: tuple[tuple[int, str, int], ...] = ()
    with progress, connect(url, autocommit=True) as conn:
        tasks = {}
        while True:
            rows = rq.list_run_progress(conn, ids=run_ids)
            now = time.monotonic()
            state = tuple((r.id, r.state, r.done) for r in rows)
            if state != seen:
                seen, last_change = state, now
            dead = children.dead()
            if dead or now - last_change > STALL_AFTER or now - first > DEMO_DEADLINE:
                name = dead[0] if dead else "worker"
                why = f"{name} exited" if dead else f"the runs made no progress for {now - last_change:.0f} s"
                last = children.tail(name).replace("\n", " | ")
                raise HarvesterError(f"demo stopped: {why}; see {children.logs[name]} ({last[-300:]})")
            for r in rows:
                if r.id not in tasks:
                    tasks[r.id] = progress.add_task(r.name, total=None, rate="", state=r.state)
                rate = f"{r.done / max(time.monotonic() - first, 1e-3):,.0f}/s"
                progress.update(tasks[r.id], completed=r.done, total=r.entities_total, rate=rate, state=r.state)
            if rows and all(r.state in ("succeeded", "failed", "cancelled") for r in rows):
                return rows
            time.sleep(0.3)


def _summary(console: Console, url: str, runs: list[rq.ListRunProgressRow], seconds: float) -> None:
    from rich.table import Table

    from app.queries import dead_letters as dq
    from app.queries import entities as eq

    with connect(url) as conn:
        entities = eq.count_live_entities_by_source_type(conn)
        totals = eq.count_projection_rows(conn)
        refs = eq.count_refs_by_target_kind(conn)
        dead = dq.count_dead_letters_by_source_reason(conn)
    table = Table(title="entities per source and type", show_edge=False)
    for column in ("source", "type", "entities"):
        table.add_column(column)
    for e in entities:
        table.add_row(e.name, e.source_type, str(e.entities))
    console.print(table)
    assert totals is not None
    console.print(
        f"summary: chunks {totals.chunks} (embedded {totals.embedded}), edges {totals.edges}, refs {totals.refs}"
    )
    console.print("refs by target: " + ", ".join(f"{r.target_kind}/{r.source_hint} {r.refs}" for r in refs))
    console.print("dead letters: " + (", ".join(f"{d.name}/{d.reason} {d.items}" for d in dead) or "none"))
    for r in runs:
        console.print(f"run #{r.id} {r.name}: {r.state}, {r.done} items, {r.error_count} to the DLQ")
    console.print(f"time taken: {seconds:.1f} s")


def _people(conn: psycopg.Connection[Any]) -> tuple[tuple[str, Principal], tuple[str, Principal], str] | None:
    """Two people of the demo company: one who is in a private conversation, one who is not.

    Both belong to the same teams (every group named in an ACL except the leads groups); the first is also
    a lead. The query is the private message's own text, so the difference is visible at once.
    """
    from app.queries import entities as eq
    from app.vector.search import Principal

    private = eq.find_private_message(conn)
    if private is None:
        return None
    members = sorted(p.removeprefix("user:") for p in private.acl_principals or [] if p.startswith("user:"))
    everyone = [r.principal for r in eq.count_entities_by_principal(conn) if r.principal]
    users = [p.removeprefix("user:") for p in everyone if p.startswith("user:")]
    outsiders = [u for u in users if u not in members and u.endswith(f"@{COMPANY}.example")]
    if not members or not outsiders:
        return None
    groups = tuple(p for p in everyone if p.startswith("group:") and "lead" not in p)
    leads = tuple(p for p in everyone if p.startswith("group:") and "lead" in p)
    insider = Principal(user=members[0], groups=groups + leads)
    outsider = Principal(user=outsiders[0], groups=groups)
    return (members[0], insider), (outsiders[0], outsider), private.body or private.title


def _searches(console: Console, url: str) -> None:

    from app.vector.config import process_embedder
    from app.vector.search import search

    embedder = process_embedder(load_config().embedder)
    if embedder is None:
        console.print("HARVESTER_EMBEDDER=none: no searches")
        return
    with connect(url) as conn:
        people = _people(conn)
        if people is None:
            console.print("[yellow]no private conversation in the demo data: searches skipped[/]")
            return
        (name_a, a), (name_b, b), private_text = people
        queries = [private_text[:200], "login fails after the session expires", "incident postmortem and rollout"]
        console.rule("searches as two people")
        console.print(f"A = {name_a} (a lead, in the private conversation); B = {name_b} (same teams, not in it)")
        for who, person in (("A", a), ("B", b)):
            groups = ", ".join(person.groups) or "(none)"
            console.print(f"{who} groups: {groups}", soft_wrap=True, markup=False, highlight=False)
        for query in queries:
            hits_a = search(conn, embedder, query=query, principal=a, k=5)
            hits_b = search(conn, embedder, query=query, principal=b, k=5)
            seen_b = {h.entity_id for h in hits_b}
            console.print(f"\n[bold]query:[/] {query[:90]!r}")
            for who, hits in (("A", hits_a), ("B", hits_b)):
                for h in hits[:3]:
                    only = (
                        " [magenta](only A may see this)[/]"
                        if who == "A" and h.entity_id not in seen_b and not _visible(conn, h.entity_id, b)
                        else ""
                    )
                    console.print(
                        f"  {who}  {h.source_name:10} {h.source_type:8} {h.title[:60]!r} score={h.score:.3f}{only}"
                    )
                if not hits:
                    console.print(f"  {who}  (nothing visible)")


def _visible(conn: psycopg.Connection[Any], entity_id: int, who: Principal) -> bool:
    row = conn.execute(
        "select acl_principals && %s::text[] from entities where id = %s", (who.tokens(), entity_id)
    ).fetchone()
    return bool(row and row[0])


def _serve(console: Console, url: str, env: dict[str, str], children: Processes, port: int) -> int:

    from app.api.auth import new_token, token_hash
    from app.queries import tokens as tq

    token = new_token()
    with connect(url) as conn:
        tq.create_token(
            conn, name=f"demo-admin-{int(time.time())}", scope="admin", token_hash=token_hash(token), expires_at=None,
            principals=None,
        )
        conn.commit()
    children.start(["-m", "app.cli", "worker", "--concurrency", "2"], env, name="serve-worker")
    children.start(["-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)], env, name="serve-api")
    console.rule("serving")
    console.print(f"API      http://127.0.0.1:{port}/api/v1")
    console.print(f"OpenAPI  http://127.0.0.1:{port}/schema (JSON: /schema/openapi.json)")
    # soft_wrap: rich must not break the token or the curl line at the terminal's width.
    console.print(f"export TOKEN={token}   # admin; shown once", soft_wrap=True, markup=False, highlight=False)
    console.print(
        f'curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:{port}/api/v1/sources',
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    console.print("Ctrl-C stops the API, the worker, the emulators and the database the demo started.")
    while all(p.poll() is None for p in children.procs):
        time.sleep(0.5)
    console.print("[red]a demo process exited; stopping[/]")
    return 1


def _demo_command(args: Args) -> int:
    return run_demo(
        serve=args.serve,
        port=args.port,
        sizes=Sizes(issues=args.issues, pages=args.pages, messages=args.messages),
        database=args.database,
    )


def register(cli: click.Group) -> None:
    count = click.IntRange(min=1)
    add_command(
        cli,
        "demo",
        _demo_command,
        click.option("--serve", is_flag=True, help="keep the API and the worker running until Ctrl-C"),
        click.option(
            "--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="API port with --serve"
        ),
        click.option("--issues", type=count, default=60, show_default=True, help="Jira issues"),
        click.option("--pages", type=count, default=40, show_default=True, help="Confluence pages"),
        click.option("--messages", type=count, default=150, show_default=True, help="Slack top-level messages"),
        click.option(
            "--database", default="harvester_demo", show_default=True, help="database created afresh for the demo"
        ),
        help="embedded PostgreSQL + three emulated sources + full syncs through the worker + example searches",
    )
