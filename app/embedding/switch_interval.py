"""A shorter interpreter switch interval while the local embedder runs (decision 147).

Each of the embedder's passes runs in onnxruntime with the interpreter lock released, and its thread takes
the lock back to pool the pass's output and start the next one. When another thread of the process is
running Python at that moment (a run maps and loads pages, its read-ahead parses the next ones), the
pass's thread waits until that thread lets go of the lock: at its next blocking call, or when the switch
interval (5 ms by default) runs out. The int8 embedder runs one text a pass, about a millisecond or a few
each, so most passes ended in such a wait: 400 texts took 1.3-1.4 s alone, 2.1-2.5 s beside a busy
process and 3.4-3.7 s beside a busy thread of the same process; with a 1 ms interval, 2.3-2.4 s beside the
thread. For runs without an embedder a shorter interval did nothing at 1 ms and made a Jira run slower at
0.5 ms (decisions 72 and 103: more hand-overs between the read-ahead and the run's thread), so it applies
only while at least one embedding call is in progress, and the interval before it comes back after the
last one ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Seconds. 0.2 ms handed the lock over as often, at more cost per hand-over (2.5 s where 1 ms gave 2.3 s).
EMBEDDING = 0.001

_lock = threading.Lock()
_calls = 0
_before = 0.0


@contextmanager
def short_switch_interval() -> Iterator[None]:
    """Run the block with the switch interval at ``EMBEDDING`` (or shorter, if it already was)."""
    global _calls, _before
    with _lock:
        if _calls == 0:
            _before = sys.getswitchinterval()
            sys.setswitchinterval(min(_before, EMBEDDING))
        _calls += 1
    try:
        yield
    finally:
        with _lock:
            _calls -= 1
            if _calls == 0:
                sys.setswitchinterval(_before)
