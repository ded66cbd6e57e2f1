"""Pipeline overlap (issue 15 §1-2): every goal's ratio against its baseline, measured in one run.

Each emulator runs in its own process (a real source is a remote server: its rendering must not share
our interpreter lock), fed the same data as bench/connector_sync.py. For each connector:

(1) no injected latency — items/s of a full run through ``execute_run`` (mapping, hashing, upserts,
    seen-set, resolve, cursor) against the bare ``enumerate()`` loop; goal >= 0.8. With the emulator
    answering at once, a run is CPU: the row also prints the CPU seconds of the bare loop and of the best
    ``after`` run by process (this one, the emulator, PostgreSQL; psutil) and the ``bound`` that CPU puts
    on the ratio on this machine: bare wall ÷ max(this process's CPU, all of it ÷ cores), since one
    interpreter lock serialises nearly all of this process's work and the cores carry the rest. Beside
    both runs it prints the share of the cores' time that sat idle (psutil's machine-wide idle time): a
    run below its bound with cores idle is waiting on its chain of hand-offs, not on CPU (decision 152);
(2) ``latency_ms`` injected on every request (emulator fault) — full-run wall time against the bare
    fetch loop's; goal <= 1.1;
(3) the local embedder (fewer items; MiniLM on ``--embed-threads``) — full-run wall time
    against max(bare fetch loop, bare ``embed()`` of the same chunk texts); goal <= 1.15. The row also
    prints the ``bound`` for the best ``after`` run: nothing can be embedded before the first group of
    texts reaches the stage, and from then on at best the run's CPU (every process's) is spread over the
    cores, so the run takes at least max(bare fetch, first group's arrival + its CPU ÷ cores); a little
    CPU spent before that arrival makes this a slightly generous floor.

Every pipeline figure is measured twice in the same run: ``before`` with ``prefetch=0`` (each page
fetched only after the previous one committed) and ``after`` with ``prefetch=DEFAULT_PREFETCH``.
Bare and pipeline runs alternate ``--repeats`` times and the best of each is kept. ``--source-process`` adds
a third run to section (1), ``after`` with the connector's listing in a process of its own
(``HARVESTER_SOURCE_PROCESS=on``, app.pipeline.source_process, decision 135), printed on a row of its own
with that process's CPU. The ``before`` and ``after`` runs list in this process whatever the connector: a
Confluence run's product default is the listing apart (decision 153), which is that row. ``--mapping-free``
adds another, ``after`` with each item's ``map_item`` answered from the entities an untimed run mapped:
what the ratio would read if mapping cost nothing (decision 150; a measurement of the mapping's share, not a
configuration).

    python bench/overlap.py [--items 2000] [--latency-items 600] [--latency-ms 100] [--embed-items 150]
                            [--embed-compare] [--coalesce-compare] [--index-compare] [--budget-compare]
                            [--compute-compare]
                            [--source-process] [--mapping-free] [--repeats 2]
                            [--only jira,slack]
                            [--skip latency,embed]

The database: as bench/connector_sync.py (HARVESTER_DATABASE_URL's server, else an embedded one).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import numpy as np
import psutil
from psycopg.conninfo import conninfo_to_dict

from app.chunking import Ready
from app.db.connect import connect
from app.embedding.base import Vectors
from app.embedding.local import LocalEmbedder, pad_batch
from app.heap import settle
from app.pipeline import ahead
from app.pipeline.load import ChunkStage
from app.pipeline.run import DEFAULT_PREFETCH, RunOutcome, execute_run
from app.pipeline.source_process import start_forkserver
from app.registry import get_spec
from app.vector.stage import VectorStage
from bench._cpu import cpu, data_directory, emulators, parallel_speed, postgres_cpu
from bench.connector_sync import TOKEN, cloned, fresh_run, migrated_template, postgres
from connectors.base import CallStats, ConnectorSpec, Entity, RawItem, SourceConfig


@dataclass(frozen=True)
class Case:
    name: str
    module: str  # python -m connectors.emulators.<module>
    count_args: tuple[str, float]  # the emulator's size flag and its share of --items
    path: str  # appended to the base URL (Confluence Cloud lives under /wiki)


# The same data as bench/connector_sync.py (Slack: ~0.56 replies per message, so 0.64 x items messages).
CASES = (
    Case("jira", "jira", ("--issues", 1.0), ""),
    Case("confluence", "confluence", ("--pages", 1.0), "/wiki"),
    Case("slack", "slack", ("--messages", 0.64), ""),
)


@contextmanager
def emulator(case: Case, items: int, extra: tuple[str, ...] = ()) -> Iterator[str]:
    flag, share = case.count_args
    proc = subprocess.Popen(
        [sys.executable, "-m", f"connectors.emulators.{case.module}", "--port", "0", "--seed", "1",
         "--token", TOKEN, flag, str(int(items * share)), *extra],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"{case.name} emulator did not start: {base_url!r}")
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def set_latency(base_url: str, latency_ms: int) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as control:
        control.delete("/_emulator/faults").raise_for_status()
        if latency_ms:
            control.post("/_emulator/faults", json={"latency_ms": latency_ms}).raise_for_status()


@dataclass(frozen=True)
class Cpu:
    """CPU seconds one run cost, by process: this one (the run's thread and its read-ahead, which share
    one interpreter lock), the source's emulator and PostgreSQL; and the seconds the machine's cores sat
    idle meanwhile, all of them together (decision 152: a run can leave cores idle and still be slow)."""

    ours: float = 0.0
    emulator: float = 0.0
    postgres: float = 0.0
    idle: float = 0.0

    @property
    def total(self) -> float:
        return self.ours + self.emulator + self.postgres

    def spread(self) -> float:
        """Seconds this much CPU takes at best on this machine: every process's spread over all cores."""
        return self.total / (os.cpu_count() or 1)

    def floor(self) -> float:
        """The shortest wall time this much CPU allows: spread over the cores, and no less than this
        process's own (one interpreter lock serialises nearly all of it)."""
        return max(self.ours, self.spread())

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.ours - other.ours,
            self.emulator - other.emulator,
            self.postgres - other.postgres,
            self.idle - other.idle,
        )

    def idle_share(self, wall: float) -> float:
        """The share of the cores' time that was idle during ``wall`` seconds, in per cent. The kernel counts
        idle time in clock ticks (10 ms), so a run of a few ticks reads coarsely; never above 100."""
        return min(100.0, 100.0 * self.idle / (wall * (os.cpu_count() or 1))) if wall > 0 else 0.0


def _cpu_now(pg_dir: Path | None) -> Cpu:
    machine = psutil.cpu_times()
    return Cpu(
        cpu([psutil.Process()]),
        cpu(emulators()),
        postgres_cpu(pg_dir) if pg_dir is not None else 0.0,
        machine.idle + getattr(machine, "iowait", 0.0),  # a core waiting on I/O runs nothing either
    )


def bare(
    case: Case, base_url: str, spent: list[Cpu] | None = None, *, keep: bool = False
) -> tuple[int, float, list[RawItem]]:
    """The bare ``enumerate()`` loop: how many items, how long, and the items themselves only with ``keep``;
    its CPU (this process, the emulator) is appended to ``spent``. A loop that kept every payload would
    make each full collection of its own and of the runs timed after it walk them all (decision 92)."""
    connector = get_spec(case.name).create(SourceConfig(1, base_url + case.path, TOKEN, "all", (), {}), CallStats())
    before = _cpu_now(None) if spent is not None else Cpu()
    items: list[RawItem] = []
    count = 0
    started = time.perf_counter()
    for e in connector.enumerate(None, None):
        if isinstance(e, RawItem):
            count += 1
            if keep:
                items.append(e)
    elapsed = time.perf_counter() - started
    if spent is not None:
        spent.append(_cpu_now(None) - before)
    connector.close()
    return count, elapsed, items


def pipeline(
    case: Case,
    base_url: str,
    server_url: str,
    template: str,
    prefetch: int,
    chunks: ChunkStage | None = None,
    spent: list[Cpu] | None = None,
    firsts: list[float] | None = None,
    *,
    source_process: bool = False,
) -> tuple[float, RunOutcome]:
    """One full run of ``case`` in a fresh database: its seconds and its outcome (items loaded, what its
    thread waited for); its CPU by process is appended to ``spent``, and (a :class:`TimedStage`) when its first
    texts reached the stage, in seconds from the start, to ``firsts``."""
    firsts = [] if firsts is None else firsts
    with fresh_run(server_url, template, case.name, base_url + case.path) as (conn, keyring, run_id):
        pg_dir = data_directory(server_url) if spent is not None else None
        before = _cpu_now(pg_dir) if spent is not None else Cpu()
        if isinstance(chunks, TimedStage):
            chunks.first = None
        started = time.perf_counter()
        outcome = execute_run(conn, run_id, worker_id="bench", keyring=keyring, chunks=chunks, prefetch=prefetch,
                              source_process=source_process)  # fmt: skip
        elapsed = time.perf_counter() - started
        if spent is not None:
            spent.append(_cpu_now(pg_dir) - before)
        if isinstance(chunks, TimedStage) and chunks.first is not None:
            firsts.append(chunks.first - started)
    if outcome.state != "succeeded" or outcome.errors:
        raise SystemExit(f"{case.name}: run ended {outcome.state} with {outcome.errors} errors: {outcome.detail}")
    return elapsed, outcome


class TimedStage(VectorStage):
    """The product's vector stage, noting when the run first hands it texts to embed (``prepare``)."""

    first: float | None = None

    def prepare(
        self, entities: Sequence[tuple[Entity, Collection[tuple[str, str | None]]]], known: Collection[str] = ()
    ) -> Ready:
        if self.first is None:
            self.first = time.perf_counter()
        return super().prepare(entities, known)


@dataclass
class Best:
    bare: float = float("inf")
    before: float = float("inf")
    after: float = float("inf")
    embed: float = float("inf")
    items: int = 0
    after_cpu: Cpu = Cpu()  # what the fastest ``after`` run cost
    after_first: float = 0.0  # and when its first texts reached the vector stage
    after_waits: tuple[float, float, float] = (0.0, 0.0, 0.0)  # and how long its thread waited for pages,
    # for vectors, for the writer thread
    bare_cpu: Cpu = Cpu()  # and the fastest bare loop
    # --source-process: the ``after`` run with the listing in a process of its own (decision 135)
    apart: float = float("inf")
    apart_cpu: Cpu = Cpu()  # this process's CPU in ``ours``, the source process's in ``apart_child``
    apart_child: float = 0.0
    apart_waits: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # --mapping-free: the ``after`` run with every item's mapping done before its clock started (decision 150)
    free: float = float("inf")
    free_cpu: Cpu = Cpu()
    free_waits: tuple[float, float, float] = (0.0, 0.0, 0.0)
    free_calls: tuple[int, int] = (0, 0)  # of its map_item calls, how many were answered from before; all


class MappingDoneAhead:
    """The connector's ``map_item``, answering each item it has mapped once from what it mapped then (by
    source type and id), installed only inside :meth:`installed`: a run after a first one spends nothing on
    mapping. Every run maps the same items (the emulator's data is fixed by its seed), so the entities
    loaded are the same."""

    def __init__(self, case: Case) -> None:
        self.module: Any = importlib.import_module(f"connectors.{case.name}")  # its CONNECTOR is swapped
        self.spec: ConnectorSpec = self.module.CONNECTOR
        self.mapped: dict[tuple[str, str], Entity] = {}
        self.answered = 0  # calls answered from what was mapped before, since the last installed()
        self.calls = 0  # all calls since then

    def map_item(self, raw: RawItem) -> Entity:
        self.calls += 1
        key = (raw.source_type, raw.source_entity_id)
        entity = self.mapped.get(key)
        if entity is None:
            entity = self.mapped[key] = self.spec.map_item(raw)
        else:
            self.answered += 1
        return entity

    @contextmanager
    def installed(self) -> Iterator[None]:
        self.answered = self.calls = 0
        self.module.CONNECTOR = dataclasses.replace(self.spec, map_item=self.map_item)
        try:
            yield
        finally:
            self.module.CONNECTOR = self.spec


def measure(
    case: Case,
    base_url: str,
    server_url: str,
    template: str,
    repeats: int,
    chunks: ChunkStage | None = None,
    *,
    apart: bool = False,
    free: bool = False,
) -> Best:
    """Best of ``repeats`` rounds of bare, before, after (and, with ``apart``, the run whose listing ran in a
    process of its own; with ``free``, the run that maps nothing, after one untimed run that maps it all)."""
    best = Best()
    done = MappingDoneAhead(case) if free else None
    if done is not None:
        with done.installed():
            pipeline(case, base_url, server_url, template, DEFAULT_PREFETCH)  # maps every item, untimed
    for _ in range(repeats):
        spent: list[Cpu] = []
        n, t, _ = bare(case, base_url, spent)
        if t < best.bare:
            best.bare_cpu = spent[0]
        best.bare = min(best.bare, t)
        time_runs(best, case, base_url, server_url, template, n, chunks, apart=apart, done=done)
    return best


def time_runs(
    best: Best,
    case: Case,
    base_url: str,
    server_url: str,
    template: str,
    items: int,
    chunks: ChunkStage | None,
    *,
    apart: bool = False,
    done: MappingDoneAhead | None = None,
) -> None:
    """One full run without read-ahead (before) and one with it (after), each kept in ``best`` if faster;
    with ``apart`` a third, as ``after`` with the connector's listing in a process of its own (decision 135);
    with ``done`` another, as ``after`` with every item's mapping done ahead (decision 150).
    A run that loads another number of items than the bare loop saw stops the bench."""
    runs = [("before", 0), ("after", DEFAULT_PREFETCH)] + ([("apart", DEFAULT_PREFETCH)] if apart else [])
    runs += [("free", DEFAULT_PREFETCH)] if done is not None else []
    for attr, prefetch in runs:
        spent: list[Cpu] = []
        firsts: list[float] = []
        child_before = source_processes_cpu()
        with done.installed() if attr == "free" and done is not None else nullcontext():
            u, outcome = pipeline(
                case, base_url, server_url, template, prefetch, chunks, spent, firsts, source_process=attr == "apart"
            )
        child = source_processes_cpu() - child_before
        if outcome.done != items:
            raise SystemExit(f"{case.name}: bare loop saw {items} items, the run loaded {outcome.done}")
        if attr == "after" and u < best.after:
            best.after_cpu = spent[0]
            best.after_first = firsts[0] if firsts else 0.0
            best.after_waits = (outcome.page_wait, outcome.vector_wait, outcome.write_wait)
        if attr == "free" and u < best.free and done is not None:
            best.free_cpu, best.free_calls = spent[0], (done.answered, done.calls)
            best.free_waits = (outcome.page_wait, outcome.vector_wait, outcome.write_wait)
        if attr == "apart" and u < best.apart:
            best.apart_cpu, best.apart_child = spent[0], child
            best.apart_waits = (outcome.page_wait, outcome.vector_wait, outcome.write_wait)
        setattr(best, attr, min(getattr(best, attr), u))
    best.items = items


def source_processes_cpu() -> float:
    """CPU seconds of the source processes this process's forkserver has reaped (its children's times)."""
    total = 0.0
    for server in psutil.Process().children():
        if "forkserver" in " ".join(server.cmdline()):
            times = server.cpu_times()
            total += times.children_user + times.children_system
    return total


def _apart_row(case: Case, b: Best) -> str:
    """Section (1)'s row of the run whose listing ran in a process of its own. Its bound: that process and
    this one each hold an interpreter lock of their own, so neither alone nor all of the CPU spread over the
    cores may take longer than the run."""
    c, child = b.apart_cpu, b.apart_child
    total = c.total + child
    bound = min(1.0, b.bare / max(c.ours, child, total / (os.cpu_count() or 1)))
    return (f"{case.name + ' apart':<11} {b.items:>6} {'':>8} {'':>9} {b.items / b.apart:>8.0f} {'':>7} "
            f"{b.bare / b.apart:>7.2f} {bound:>7.2f}   the listing in a process of its own: ours {c.ours:.2f} + "
            f"source {child:.2f} + {c.emulator:.2f} + {c.postgres:.2f} = {total:.2f} in {b.apart:.2f} s, "
            f"waited {b.apart_waits[0]:.2f} s for pages, {b.apart_waits[2]:.2f} s for the writer, "
            f"cores idle {c.idle_share(b.apart):.0f} %")  # fmt: skip


def _spent(c: Cpu, wall: float, waits: tuple[float, float, float]) -> str:
    """A section (1) run's CPU by process, its wall time, what its thread waited for and how idle the
    machine's cores were meanwhile."""
    return (f"{c.ours:.2f} + {c.emulator:.2f} + {c.postgres:.2f} = {c.total:.2f} in {wall:.2f} s, "
            f"waited {waits[0]:.2f} s for pages, {waits[2]:.2f} s for the writer, "
            f"cores idle {c.idle_share(wall):.0f} %")  # fmt: skip


def _free_row(case: Case, b: Best) -> str:
    """Section (1)'s row of the run that mapped nothing (decision 150), with the bound its CPU puts on it."""
    bound = min(1.0, b.bare / b.free_cpu.floor())
    return (f"{case.name + ' mapped':<11} {b.items:>6} {'':>8} {'':>9} {b.items / b.free:>8.0f} {'':>7} "
            f"{b.bare / b.free:>7.2f} {bound:>7.2f}   every item mapped before the run ({b.free_calls[0]} of "
            f"{b.free_calls[1]} answered so): ours {_spent(b.free_cpu, b.free, b.free_waits)}")  # fmt: skip


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--latency-items", type=int, default=600)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--embed-items", type=int, default=150)
    parser.add_argument("--embed-threads", type=int, default=None)
    parser.add_argument(
        "--embed-compare",
        action="store_true",
        help="section (3) also runs the embedder as it was before decision 64 (ratios: against the faster bare embed)",
    )
    parser.add_argument(
        "--coalesce-compare",
        action="store_true",
        help="section (3) also runs the product embedder with each group embedded on its own, as before "
        "decision 67 (app.pipeline.ahead.COALESCE = 1)",
    )
    parser.add_argument(
        "--index-compare",
        action="store_true",
        help="section (3) also runs the product embedder into a database without the HNSW index on "
        "entity_chunks: what the index's inserts add to a run (not a configuration: search needs the index)",
    )
    parser.add_argument(
        "--budget-compare",
        action="store_true",
        help="section (3) also runs the embedder with passes bounded by the row cap alone, as before decision "
        "131 (no token budget; ratios: against the faster bare embed)",
    )
    parser.add_argument(
        "--compute-compare",
        action="store_true",
        help="section (3) also runs the embedder on the shipped graph, its int8 weights multiplied in float, as "
        "before decision 146 (ratios: against the faster bare embed)",
    )
    parser.add_argument(
        "--source-process",
        action="store_true",
        help="section (1) also times each run with the connector's listing in a process of its own "
        "(HARVESTER_SOURCE_PROCESS=on, decision 135); its forkserver is started before the first run",
    )
    parser.add_argument(
        "--mapping-free",
        action="store_true",
        help="section (1) also times each after run with every item's mapping done before its clock starts "
        "(map_item answered from an untimed run's entities): the ratio if mapping cost nothing (decision 150)",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated connector names")
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: plain, latency, embed")
    args = parser.parse_args(argv)
    if args.source_process:
        start_forkserver()  # as a worker does at start-up: no run pays for it
    settle()  # this process runs syncs as a worker does, and settles its heap as one (decision 92)
    wanted = [c for c in CASES if c.name in ({n for n in args.only.split(",") if n} or {c.name for c in CASES})]
    skip = {s for s in args.skip.split(",") if s}
    print(f"load average before: {load_average()}; prefetch after = {DEFAULT_PREFETCH} pages")
    # The bounds below assume the cores run side by side at full speed; on a virtual machine they need not.
    print(f"two CPU-bound processes at once each run at {parallel_speed():.2f} x the speed of one alone")
    with postgres() as server_url, migrated_template(server_url) as template:
        if "plain" not in skip:
            print("\n(1) no injected latency: pipeline items/s / bare items/s (goal >= 0.80)")
            print(f"{'connector':<11} {'items':>6} {'bare/s':>8} {'before/s':>9} {'after/s':>8} "
                  f"{'before':>7} {'after':>7} {'bound':>7}   CPU s: ours + emulator (+ PostgreSQL)")  # fmt: skip
            for case in wanted:
                with emulator(case, args.items) as url:
                    b = measure(case, url, server_url, template, args.repeats, apart=args.source_process,
                                free=args.mapping_free)  # fmt: skip
                rate = [b.items / t for t in (b.bare, b.before, b.after)]
                c = b.after_cpu
                # The best ratio the after run's CPU allows on this machine (its floor wall time); a run
                # also fetches everything the bare loop does, so it is never above 1.
                bound = min(1.0, b.bare / c.floor())
                print(f"{case.name:<11} {b.items:>6} {rate[0]:>8.0f} {rate[1]:>9.0f} {rate[2]:>8.0f} "
                      f"{rate[1] / rate[0]:>7.2f} {rate[2] / rate[0]:>7.2f} {bound:>7.2f}   "
                      f"bare {b.bare_cpu.ours:.2f} + {b.bare_cpu.emulator:.2f} in {b.bare:.2f} s "
                      f"(cores idle {b.bare_cpu.idle_share(b.bare):.0f} %), after "
                      f"{_spent(c, b.after, b.after_waits)}   load {load_average()}")  # fmt: skip
                if args.source_process:
                    print(_apart_row(case, b))
                if args.mapping_free:
                    print(_free_row(case, b))
        if "latency" not in skip:
            print(f"\n(2) {args.latency_ms} ms per request: full-run wall / bare fetch wall (goal <= 1.10)")
            print(f"{'connector':<11} {'items':>6} {'bare s':>8} {'before s':>9} {'after s':>8} "
                  f"{'before':>7} {'after':>7}")  # fmt: skip
            for case in wanted:
                with emulator(case, args.latency_items) as url:
                    set_latency(url, args.latency_ms)
                    b = measure(case, url, server_url, template, args.repeats, apart=args.source_process)
                print(f"{case.name:<11} {b.items:>6} {b.bare:>8.2f} {b.before:>9.2f} {b.after:>8.2f} "
                      f"{b.before / b.bare:>7.2f} {b.after / b.bare:>7.2f}   load {load_average()}")  # fmt: skip
                if args.source_process:
                    print(f"{case.name + ' apart':<11} {b.items:>6} {'':>8} {'':>9} {b.apart:>8.2f} {'':>7} "
                          f"{b.apart / b.bare:>7.2f}   the listing in a process of its own")  # fmt: skip
        if "embed" not in skip:
            embed_section(args, server_url, template, wanted)


class FixedBatches(LocalEmbedder):
    """The local embedder as it ran before decision 64 (``--embed-compare``): onnxruntime's threads spin,
    and the length-sorted texts go in fixed batches of ``batch_size`` whatever their padding."""

    def __init__(self, threads: int | None) -> None:
        super().__init__(threads=threads, allow_spinning=True)

    def embed(self, texts: Sequence[str]) -> Vectors:
        encodings = self.tokenize(texts)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            ids, mask = pad_batch([encodings[i].ids for i in rows])
            out[rows] = self.encode_padded(ids, mask)
        return out


def embed_section(args: argparse.Namespace, server_url: str, template: str, wanted: Sequence[Case]) -> None:
    variants: dict[str, LocalEmbedder] = {"product": LocalEmbedder(threads=args.embed_threads)}
    if args.embed_compare:
        variants = {"old": FixedBatches(args.embed_threads), **variants}
    if args.coalesce_compare:
        variants = {"per-group": variants["product"], **variants}
    if args.budget_compare:
        # Before decision 131: a pass takes up to batch_size rows however long they are.
        variants["rows-only"] = LocalEmbedder(threads=args.embed_threads, batch_tokens=1 << 30)
    if args.compute_compare:
        # Before decision 146: the shipped graph, whose products run in float, in passes of up to 8 texts.
        variants["float"] = LocalEmbedder(threads=args.embed_threads, int8_compute=False)
    templates = {name: template for name in variants}
    with ExitStack() as stack:
        if args.index_compare:
            # The same embedder, its runs into databases made from a template without the vector index.
            variants["no-index"] = variants["product"]
            no_index = stack.enter_context(cloned(server_url, template))
            with connect(no_index, autocommit=True) as conn:
                conn.execute("drop index entity_chunks_embedding_hnsw_idx")
            templates["no-index"] = str(conninfo_to_dict(no_index)["dbname"])
        for e in variants.values():
            e.embed(["warm-up: the session's arenas"] * 8)
        threads = variants["product"].threads
        print(f"\n(3) local embedder ({threads} threads), {args.latency_ms} ms per request: full-run wall / "
              "max(bare fetch, bare embed) (goal <= 1.15)")  # fmt: skip
        for case in wanted:
            _embed_section(args, server_url, variants, templates, case)


def _embed_section(
    args: argparse.Namespace,
    server_url: str,
    variants: dict[str, LocalEmbedder],
    templates: dict[str, str],
    case: Case,
) -> None:
    stages = {name: TimedStage(e) for name, e in variants.items()}
    map_item = get_spec(case.name).map_item
    product = stages["product"]
    coalesce = ahead.COALESCE
    texts: list[str] = []
    best = {name: Best() for name in variants}
    fetch = float("inf")
    with emulator(case, args.embed_items) as url:
        set_latency(url, args.latency_ms)
        # Rounds alternate the variants so that each meets the same neighbours on the machine; the bare
        # embedding of each variant is timed in the same round as its runs (best of --repeats kept).
        for _ in range(args.repeats):
            n, t, raw = bare(case, url, keep=True)
            fetch = min(fetch, t)
            texts[:] = list({c.content_hash: c.text for i in raw for c in product.chunks_of(map_item(i))}.values())
            del raw  # not walked by the runs' collections (see bare)
            for name, stage in stages.items():
                b = best[name]
                started = time.perf_counter()
                variants[name].embed(texts)
                b.embed = min(b.embed, time.perf_counter() - started)
                # The per-group variant is the product embedder with decision 67 turned off for its runs.
                ahead.COALESCE = 1 if name == "per-group" else coalesce
                try:
                    time_runs(b, case, url, server_url, templates[name], n, stage,
                              apart=args.source_process and name == "product")  # fmt: skip
                finally:
                    ahead.COALESCE = coalesce
    print(f"{case.name}:")
    print(f"{'embedder':<9} {'items':>6} {'chunks':>7} {'fetch s':>8} {'embed s':>8} {'before s':>9} {'after s':>8} "
          f"{'before':>7} {'after':>7} {'bound':>7}   "
          "after: first texts at, CPU s ours + emulator + PG, waits")  # fmt: skip
    # The baseline is the best bare embedding any variant managed: a setting that helps the pipeline
    # must not win by making the bare call it is compared with slower.
    floor = max(fetch, min(b.embed for b in best.values()))
    for name, b in best.items():
        c = b.after_cpu
        # The shortest run this one's CPU allows on this machine, as a ratio to the same floor.
        bound = max(fetch, b.after_first + c.spread()) / floor
        print(f"{name:<9} {b.items:>6} {len(texts):>7} {fetch:>8.2f} {b.embed:>8.2f} {b.before:>9.2f} "
              f"{b.after:>8.2f} {b.before / floor:>7.2f} {b.after / floor:>7.2f} {bound:>7.2f}   "
              f"{b.after_first:.2f} s, {c.ours:.2f} + {c.emulator:.2f} + {c.postgres:.2f}, waited "
              f"{b.after_waits[0]:.2f} s for pages, {b.after_waits[1]:.2f} s for vectors, "
              f"{b.after_waits[2]:.2f} s for the writer   "
              f"load {load_average()}")  # fmt: skip
        if b.apart < float("inf"):
            print(f"{name + ' apart':<9} {b.items:>6} {len(texts):>7} {'':>8} {'':>8} {'':>9} {b.apart:>8.2f} {'':>7} "
                  f"{b.apart / floor:>7.2f}   the listing in a process of its own, waited {b.apart_waits[0]:.2f} s "
                  f"for pages, {b.apart_waits[1]:.2f} s for vectors")  # fmt: skip
