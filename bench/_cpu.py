"""CPU seconds of the processes a benchmark runs (psutil): how many cores a run keeps busy, and so how
fast the machine lets it be at best. Shared by bench/two_workers.py and bench/overlap.py."""

from __future__ import annotations

from pathlib import Path

import psutil
import psycopg


def busy() -> float:
    """CPU seconds the whole machine has spent busy (not idle, not waiting on I/O, not stolen)."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def cpu(procs: list[psutil.Process]) -> float:
    """User + system CPU seconds of ``procs`` (all their threads); one that has ended counts 0."""
    total = 0.0
    for p in procs:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def data_directory(server_url: str) -> Path:
    """The data directory of the server behind ``server_url`` (the bench's own: it connects as superuser)."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        row = conn.execute("select current_setting('data_directory')").fetchone()
    assert row is not None
    return Path(row[0])


def postgres_cpu(data_dir: Path) -> float:
    """CPU seconds of the PostgreSQL serving ``data_dir``: the postmaster, its live children, and the
    children it has reaped (backends that ended)."""
    total = 0.0
    for p in psutil.process_iter(["cmdline"]):
        if str(data_dir) not in " ".join(p.info["cmdline"] or ()):
            continue
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
            total += cpu(p.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return total


def emulators() -> list[psutil.Process]:
    """This process's children that are source emulators (``python -m connectors.emulators.<name>``)."""
    return [c for c in psutil.Process().children() if "connectors.emulators" in " ".join(c.cmdline())]
