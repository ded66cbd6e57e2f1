"""Whether a process id names a live process, without signalling it."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Signal 0 checks existence only. A process of another user refuses it (``PermissionError``): alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
