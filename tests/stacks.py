"""Asking a test's ``harvester`` processes where they wait, before a failed wait prints their logs."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable


def ask_for_stacks(processes: Iterable[subprocess.Popen[bytes]]) -> bool:
    """Send SIGUSR1 (docs/operations.md: every thread's stack to the log) to each of ``processes`` still
    running and give them a second to write; True if any was asked. A paused one writes when continued."""
    running = [p for p in processes if p.poll() is None]
    for proc in running:
        proc.send_signal(signal.SIGUSR1)
    if running:
        time.sleep(1.0)  # written by a C handler at once; the second is for a loaded machine
    return bool(running)
