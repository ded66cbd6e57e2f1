"""A Jira emulator in its own process (so it does not share the benchmark's interpreter lock)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def jira_emulator(issues: int, *, seed: int = 1, token: str = "bench-token") -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "connectors.emulators.jira",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--issues",
            str(issues),
            "--seed",
            str(seed),
            "--token",
            token,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"emulator did not start: {base_url!r}")
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
