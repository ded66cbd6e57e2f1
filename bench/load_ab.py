"""Load path A/B: this checkout's ``load_batch`` against another commit's, interleaved with binary COPY.

The single-variant bench (bench/load_vs_copy.py) moves by a factor of two between runs on a shared
machine; this one loads every page three times back to back, in rotating order, into three sources of
one table: binary COPY, the load path of ``--against`` (its ``app/pipeline/load.py``,
``app/pipeline/transform.py`` and generated ``app/queries/entities.py``, read with ``git show`` and
imported side by side) and this checkout's. Then every row is rewritten by both load paths (all-changed).
Per round it sums the time of each variant; ratios (COPY time / load time) are of the median round, so
load drift hits all variants alike.

    python bench/load_ab.py --against <commit> [--rows 10000] [--rounds 7] [--page 100]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

from app.db.connect import connect
from app.pipeline import load as ours
from app.pipeline.transform import entity_row
from bench._db import bench_database
from bench.load_vs_copy import copy_rows, make_entities
from connectors.base import Entity

REPO = Path(__file__).resolve().parents[1]
# The files of a commit that make up its load path, and the module names they are imported under.
_FILES = {
    "app/queries/entities.py": "ab_entities",
    "app/pipeline/transform.py": "ab_transform",
    "app/pipeline/load.py": "ab_load",
}


def load_path_of(commit: str, into: Path) -> ModuleType:
    """Import ``commit``'s load_batch beside this checkout's (its own transform and entities queries)."""
    modules: dict[str, ModuleType] = {}
    for path, name in _FILES.items():
        text = subprocess.run(
            ["git", "show", f"{commit}:{path}"], cwd=REPO, check=True, capture_output=True, text=True
        ).stdout
        text = text.replace("from app.queries import entities as q", "import ab_entities as q")
        text = text.replace("from app.pipeline.transform import", "from ab_transform import")
        target = into / f"{name}.py"
        target.write_text(text)
        spec = importlib.util.spec_from_file_location(name, target)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        modules[name] = module
    return modules["ab_load"]


def _source(conn: psycopg.Connection[Any], label: str) -> int:
    name = f"{label}-{time.monotonic_ns()}"
    row = conn.execute(
        "insert into sources (name, connector_type) values (%s, 'jira') returning id", (name,)
    ).fetchone()
    conn.commit()
    assert row is not None
    return int(row[0])


def _load(module: ModuleType, conn: psycopg.Connection[Any], source_id: int, entities: list[Entity]) -> float:
    started = time.perf_counter()
    module.load_batch(
        conn,
        source_id=source_id,
        run_id=0,
        batch=module.Batch(entities=entities),
        record_seen=False,
        clear_dead_letters=False,
    )
    conn.commit()
    return time.perf_counter() - started


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", required=True, help="the commit whose load path is B (A is this checkout)")
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--page", type=int, default=100)
    args = ap.parse_args()
    n, page = args.rows, args.page
    v1, v2 = make_entities(n, 1), make_entities(n, 2)
    rows1 = [entity_row(e) for e in v1]
    keys = ("copy", "ours_new", "theirs_new", "ours_changed", "theirs_changed")
    totals: dict[str, list[float]] = {k: [] for k in keys}
    with tempfile.TemporaryDirectory(prefix="load-ab-") as tmp:
        theirs = load_path_of(args.against, Path(tmp))
        variants = {"ours": ours, "theirs": theirs}
        print(f"start: {_uptime()}")
        with bench_database() as url, connect(url) as conn:
            for r in range(args.rounds):
                conn.execute("truncate entities cascade")
                conn.commit()
                copy_id = _source(conn, "copy")
                ids = {name: _source(conn, name) for name in variants}
                t = dict.fromkeys(keys, 0.0)
                for p, k in enumerate(range(0, n, page)):
                    order = ["copy", "ours", "theirs"]
                    for name in order[p % 3 :] + order[: p % 3]:
                        if name == "copy":
                            t["copy"] += copy_rows(conn, copy_id, rows1[k : k + page], page).wall
                        else:
                            t[f"{name}_new"] += _load(variants[name], conn, ids[name], v1[k : k + page])
                for p, k in enumerate(range(0, n, page)):
                    for name in ("ours", "theirs") if p % 2 else ("theirs", "ours"):
                        t[f"{name}_changed"] += _load(variants[name], conn, ids[name], v2[k : k + page])
                for key in keys:
                    totals[key].append(t[key])
                ratios = " ".join(f"{key} {t['copy'] / t[key]:.2f}" for key in keys[1:])
                print(f"round {r}: COPY {n / t['copy']:,.0f} rows/s; {ratios}; {_uptime()}", flush=True)
    median = {k: statistics.median(v) for k, v in totals.items()}
    print(f"rows={n} page={page} median of {args.rounds} rounds; COPY {n / median['copy']:,.0f} rows/s")
    for label, key in (("all-new", "new"), ("all-changed", "changed")):
        a, b = median["copy"] / median[f"ours_{key}"], median["copy"] / median[f"theirs_{key}"]
        print(f"  {label:11}  this checkout {a:.2f}   {args.against} {b:.2f}")
    print(f"end: {_uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
