"""SHA-256 hex digests that keep the interpreter lock.

CPython's ``hashlib`` lets go of the interpreter lock for every update of 2,048 bytes or more
(``HASHLIB_GIL_MINSIZE`` in ``Modules/hashlib.h``), so that other threads can run while a large buffer is
hashed. A run hashes thousands of small documents (an entity's content hash, each chunk's text) on the
thread that maps and loads, while the read-ahead's threads wait for the lock to parse the next pages:
each release hands the lock to one of them, and the run's thread, done hashing a few microseconds later,
waits for it to come back — until that thread blocks on its socket or the switch interval (5 ms) forces
it. The run's thread is a Jira run's critical path, and every Jira issue's hash document is over 2 KB:
letting go of the lock 2,000 times made a 2,000-issue run 8 % slower (median of eight interleaved pairs;
docs/performance.md "The hash that let go of the lock", decision 94). Fed in pieces under that size,
OpenSSL hashes the same bytes with the lock held.
"""

from __future__ import annotations

import hashlib

# CPython releases the lock for updates of at least 2,048 bytes; one byte less keeps it held.
_PIECE = 2047


def sha256_hex(data: bytes) -> str:
    """``hashlib.sha256(data).hexdigest()``, computed without releasing the interpreter lock."""
    if len(data) <= _PIECE:
        return hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), _PIECE):
        h.update(view[start : start + _PIECE])
    return h.hexdigest()
