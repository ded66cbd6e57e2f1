"""CPU seconds of the processes a benchmark runs (psutil): how many cores a run keeps busy, and so how
fast the machine lets it be at best. Shared by bench/two_workers.py and bench/overlap.py."""

from __future__ import annotations

import subprocess
import sys
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


# A fixed amount of pure-Python work (no I/O, no allocation churn), timed by the process doing it.
_SPIN = "import time\nt = time.perf_counter()\nx = 0\nfor i in range({n}): x += i\nprint(time.perf_counter() - t)"


def _spin(count: int, n: int) -> list[float]:
    """Wall seconds each of ``count`` processes, started together, took for the same fixed work."""
    procs = [
        subprocess.Popen([sys.executable, "-c", _SPIN.format(n=n)], stdout=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    return [float(p.communicate()[0]) for p in procs]


def parallel_speed(n: int = 4_000_000, rounds: int = 3) -> float:
    """How fast each of two CPU-bound processes runs while the other runs too, as a share of one running
    alone (1.0: two cores that do not slow each other; less: the two share a physical core, or the host is
    busy elsewhere). On a virtual machine two vCPUs need not be two free cores: two runs, workers or stages
    at once then cost each other speed whatever the product does, and two processes can do at most
    ``2 x`` this as much work as one. ``rounds`` rounds, each one alone then two at once, to see past a
    host that drifts; the best of each side is kept."""
    alone, together = float("inf"), float("inf")
    for _ in range(rounds):
        alone = min(alone, _spin(1, n)[0])
        together = min(together, max(_spin(2, n)))
    return alone / together
