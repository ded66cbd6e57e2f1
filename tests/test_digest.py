"""The content and chunk hashes keep the interpreter lock (decision 94): the same digest as ``hashlib``, and
no other thread runs while a large buffer is hashed, where ``hashlib`` itself lets one in."""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from app.digest import sha256_hex

Hasher = Callable[[bytes], object]


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 2049, 4094, 4095, 4096, 100_003])
def test_the_digest_is_sha256_of_the_bytes(size: int) -> None:
    data = bytes((i * 7 + size) % 256 for i in range(size))
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


@pytest.fixture()
def long_switch_interval() -> Iterator[None]:
    """A switch interval far longer than a hash: only a thread that lets go of the lock lets another run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.2)
    yield
    sys.setswitchinterval(before)


def steps_of_a_waiting_thread_during(hasher: Hasher, data: bytes) -> int:
    """How far a thread that is waiting for the interpreter lock gets while ``hasher(data)`` runs."""
    counter = [0]
    started = threading.Event()
    stop = False

    def spin() -> None:
        started.set()
        while not stop:
            counter[0] += 1

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    # Returns once the spinner has run and the switch interval handed the lock back: the spinner now
    # waits for it, and gets it only if this thread lets go.
    started.wait()
    before = counter[0]
    hasher(data)
    after = counter[0]
    stop = True
    spinner.join(timeout=10)
    assert not spinner.is_alive()
    return after - before


@pytest.mark.usefixtures("long_switch_interval")
def test_hashing_a_large_document_lets_no_other_thread_run() -> None:
    data = b"x" * 4_000_000
    # The control shows the probe can see a release: hashlib lets the waiting thread in.
    assert steps_of_a_waiting_thread_during(lambda d: hashlib.sha256(d).hexdigest(), data) > 0
    assert steps_of_a_waiting_thread_during(sha256_hex, data) == 0
