"""What PostgreSQL spends on a full run, statement by statement (issue 15 §4: where each bottleneck is).

One full run of each connector (read-ahead on, as a worker runs it) against its emulator in its own process,
on an embedded server that counts every statement (``pg_stat_statements``, ``track = all``). For each
statement the run's database executed: calls, rows, milliseconds, microseconds an item and its share of the
run's database time. Statements run inside another (triggers' statements, foreign-key checks) are printed
indented under "within", named after the function that runs them, with their share of the same total: their
time is already part of the statement that fired them. The foreign-key checks are one line, "foreign-key
checks" (PostgreSQL 18 counts them as one statement: their texts differ only in the table's name).

Baseline, in the same run: binary COPY of the same entity rows (built by the product's mapping and
``entity_row`` before the clock starts) into ``entities`` of a fresh database, pages of 100, a commit each,
as ``bench/load_vs_copy.py`` copies them. The ratio is PostgreSQL's CPU seconds (every process of the server,
psutil) during the run over those during the COPY: what the run asks of PostgreSQL beyond writing its rows
(the upsert's conflict checks, edges, refs, the seen-set, checkpoints, counters, triggers). CPU, not the
statements' milliseconds: during the run the server shares the two cores with the run's process and the
emulator, so its statements' wall time holds waits for a core that the COPY, alone, does not have.

    python bench/pg_cost.py [--items 2000] [--only jira,slack] [--top 12]
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from psycopg.conninfo import conninfo_to_dict

from app import queries
from app.db.connect import connect
from app.heap import settle
from app.pipeline.run import DEFAULT_PREFETCH
from app.pipeline.transform import entity_row
from app.registry import get_spec
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from bench._cpu import data_directory, postgres_cpu
from bench._db import statements_server
from bench._overlap import CASES, Case, Cpu, bare, emulator, pipeline
from bench.connector_sync import TOKEN, cloned, migrated_template, with_dbname
from bench.load_vs_copy import copy_rows
from connectors.base import Entity

PAGE = 100


@dataclass(frozen=True)
class Line:
    name: str
    toplevel: bool
    calls: int
    rows: int
    ms: float


# What pg_stat_statements shows as $n: parameters, and the constants it normalises (true, 0, 'text', null).
_CONSTANT = re.compile(r"\$\d+|'[^']*'|\b(?:true|false|null)\b|(?<![\w.])\d+(?:\.\d+)?\b")


def _normal(text: str) -> str:
    return _CONSTANT.sub("?", re.sub(r"\s+", " ", text).strip().lower())


def query_names() -> list[tuple[str, str]]:
    """(the opening of each generated query's text, up to its first parameter; its sqlc name), longest first,
    so that a query is named by the most of its text that matches."""
    found: list[tuple[str, str]] = []
    for info in pkgutil.iter_modules(queries.__path__):
        module = importlib.import_module(f"{queries.__name__}.{info.name}")
        for attr, value in vars(module).items():
            if attr.isupper() and isinstance(value, str) and "%(" in value:
                opening = _normal(value.split("%(")[0])
                found.append((opening, "".join(w.capitalize() for w in attr.split("_"))))
    return sorted(found, key=lambda f: -len(f[0]))


def function_bodies(url: str) -> list[tuple[str, str]]:
    """(normalised body, name) of the schema's functions: a trigger's statements are named after the function
    that runs them."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "select p.proname, p.prosrc from pg_proc p join pg_namespace n on n.oid = p.pronamespace "
            "where n.nspname = 'public' and p.prokind = 'f'"
        ).fetchall()
    return [(_normal(body), name) for name, body in rows]


def name_of(text: str, names: list[tuple[str, str]], functions: list[tuple[str, str]]) -> str:
    """A generated query's name, "foreign-key checks", the function whose body holds the statement, or the
    statement's opening."""
    normal = _normal(text)
    if normal.startswith("select ? from only "):
        return "foreign-key checks"
    for opening, name in names:
        if len(opening) >= 20 and normal.startswith(opening):
            return name
    # Inside a function, parameters stand where its variables were: match up to the first of them.
    opening = normal.split("?")[0]
    if len(opening) >= 20:
        for body, function in functions:
            if opening in body:
                return f"{function}(): {normal[:40]}"
    return f"other: {normal[:60]}"


def statement_lines(server_url: str, names: list[tuple[str, str]], functions: list[tuple[str, str]]) -> list[Line]:
    """What the databases dropped since the last reset executed (the run's database is dropped after its
    run; the maintenance database's own statements stay out)."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        rows = conn.execute(
            "select query, toplevel, calls, rows, total_exec_time from pg_stat_statements "
            "where dbid not in (select oid from pg_database)"
        ).fetchall()
    merged: dict[tuple[str, bool], Line] = {}
    for query, toplevel, calls, count, ms in rows:
        key = (name_of(query, names, functions), bool(toplevel))
        old = merged.get(key, Line(key[0], key[1], 0, 0, 0.0))
        merged[key] = Line(key[0], key[1], old.calls + calls, old.rows + count, old.ms + ms)
    return sorted(merged.values(), key=lambda line: -line.ms)


def reset(server_url: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute("select pg_stat_statements_reset()")


def copy_cost(server_url: str, template: str, case: Case, entities: list[Entity]) -> tuple[float, float]:
    """Milliseconds PostgreSQL spent executing binary COPY of ``entities``' rows into a fresh database (counted
    as the run's statements are), and the server's CPU seconds meanwhile."""
    rows = [entity_row(e) for e in entities]
    with cloned(server_url, template) as url:
        with connect(url, autocommit=False) as conn:
            source_id = create_source(
                conn, Keyring(current=b"k" * 32),
                NewSource(name=case.name, connector_type=case.name, base_url="http://127.0.0.1:9", credential=TOKEN),
            )  # fmt: skip
            conn.commit()
            reset(server_url)
            pg_dir = data_directory(server_url)
            before = postgres_cpu(pg_dir)
            copy_rows(conn, source_id, rows, PAGE)
            cpu_s = postgres_cpu(pg_dir) - before
        with psycopg.connect(server_url, autocommit=True) as conn:
            row = conn.execute(
                "select coalesce(sum(total_exec_time), 0) from pg_stat_statements "
                "where toplevel and query ilike 'copy entities%%' "
                "and dbid = (select oid from pg_database where datname = %s)",
                (conninfo_to_dict(url)["dbname"],),
            ).fetchone()
    assert row is not None
    return float(row[0]), cpu_s


def report(
    case: Case, items: int, run: tuple[float, float], lines: list[Line], baseline: tuple[float, float], top: int
) -> Iterator[str]:
    """The connector's lines: the run and the COPY, then each statement (calls, rows, ms, µs an item, share)."""
    (run_s, run_cpu), (copy_ms, copy_cpu) = run, baseline
    total = sum(line.ms for line in lines if line.toplevel)
    yield (
        f"\n{case.name}: {items} items, run {run_s:.2f} s: statements {total:.0f} ms, PostgreSQL CPU {run_cpu:.2f} s "
        f"({run_cpu / items * 1e6:.0f} µs an item); binary COPY of the same rows: {copy_ms:.0f} ms, CPU "
        f"{copy_cpu:.2f} s ({copy_cpu / items * 1e6:.0f} µs an item); CPU ratio {run_cpu / max(copy_cpu, 0.01):.2f}"
    )
    yield f"  {'statement':<58} {'calls':>7} {'rows':>7} {'ms':>8} {'µs/item':>8} {'share':>6}"
    for label, wanted in (("", True), ("within ", False)):
        shown = [line for line in lines if line.toplevel is wanted][:top]
        for line in shown:
            yield (
                f"  {label + line.name:<58.58} {line.calls:>7} {line.rows:>7} {line.ms:>8.1f} "
                f"{line.ms / items * 1000:>8.1f} {line.ms / total:>6.1%}"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--only", default="", help="comma-separated connector names")
    parser.add_argument("--top", type=int, default=12, help="statements printed at each level")
    args = parser.parse_args(argv)
    settle()
    wanted = [c for c in CASES if c.name in ({n for n in args.only.split(",") if n} or {c.name for c in CASES})]
    names = query_names()
    with statements_server() as server_url, migrated_template(server_url) as template:
        functions = function_bodies(with_dbname(server_url, template))
        for case in wanted:
            with emulator(case, args.items) as url:
                reset(server_url)
                spent: list[Cpu] = []
                run_s, outcome = pipeline(case, url, server_url, template, DEFAULT_PREFETCH, spent=spent)
                lines = statement_lines(server_url, names, functions)
                # The rows to copy come from a bare listing after the run: payloads held through the run
                # would make each of its collections walk them (decision 92).
                count, _, raw = bare(case, url, keep=True)
            if outcome.done != count:
                raise SystemExit(f"{case.name}: the bare loop saw {count} items, the run loaded {outcome.done}")
            spec = get_spec(case.name)
            entities = [spec.map_item(item) for item in raw]
            del raw
            baseline = copy_cost(server_url, template, case, entities)
            for text in report(case, count, (run_s, spent[0].postgres), lines, baseline, args.top):
                print(text, flush=True)


if __name__ == "__main__":
    main()
