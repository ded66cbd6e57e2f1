"""Running a benchmark of bench/ as a real process from a test (tests/test_bench_*.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A number a bench prints (an integer or a decimal), captured.
NUM = r"([0-9]+(?:\.[0-9]+)?)"


def leftovers() -> set[Path]:
    """Benchmark scratch (data dirs, embedded servers) in the temporary folders the benchmarks use."""
    return {p for folder in {Path("/tmp"), Path(tempfile.gettempdir())} for p in folder.glob("hv-*")}


def run_bench(script: str, *args: str, timeout: int, as_module: bool = False) -> str:
    """``bench/<script> args`` to its end; its standard output. Fails the test when it exits non-zero or
    leaves scratch behind (growth.py used to leave its CLI data dirs). ``as_module``: run it as
    ``python -m bench.<name>``, for a bench that imports its package's helpers that way."""
    before = leftovers()
    target = ["-m", f"bench.{script.removesuffix('.py')}"] if as_module else [str(ROOT / "bench" / script)]
    done = subprocess.run(
        [sys.executable, *target, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not leftovers() - before, sorted(leftovers() - before)
    return done.stdout


def printed_line(pattern: str, out: str) -> re.Match[str]:
    """The first line of a bench's ``out`` that ``pattern`` matches from its start; fails the test, showing
    the whole output, when none does."""
    found = re.search(pattern, out, re.MULTILINE)
    assert found is not None, out
    return found
