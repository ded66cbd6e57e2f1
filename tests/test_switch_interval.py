"""The local embedder runs its calls with a 1 ms interpreter switch interval and puts the process's back
after the last call ends (app/embedding/switch_interval.py, decision 147)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from app.embedding import switch_interval
from app.embedding.local import LocalEmbedder
from app.embedding.switch_interval import short_switch_interval


@pytest.fixture(autouse=True)
def _default_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_the_interval_is_short_while_any_call_runs_and_back_after_the_last() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, float] = {}

    def first() -> None:
        with short_switch_interval():
            first_in.set()
            assert second_in.wait(10)
        first_out.set()

    def second() -> None:
        assert first_in.wait(10)
        with short_switch_interval():
            second_in.set()
            assert first_out.wait(10)
            seen["after the first call ended"] = sys.getswitchinterval()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["after the first call ended"] == pytest.approx(switch_interval.EMBEDDING, abs=2e-6)
    assert sys.getswitchinterval() == pytest.approx(0.005, abs=2e-6)


def test_an_interval_already_shorter_is_kept_and_restored() -> None:
    sys.setswitchinterval(0.0002)
    with short_switch_interval():
        assert sys.getswitchinterval() == pytest.approx(0.0002, abs=2e-6)
    assert sys.getswitchinterval() == pytest.approx(0.0002, abs=2e-6)


def test_a_call_that_raises_puts_the_interval_back() -> None:
    with pytest.raises(RuntimeError), short_switch_interval():
        raise RuntimeError("embedder gave up")
    assert sys.getswitchinterval() == pytest.approx(0.005, abs=2e-6)


def test_the_local_embedder_s_passes_run_with_the_short_interval_and_leave_the_default_after() -> None:
    embedder = LocalEmbedder(threads=2)
    seen: set[float] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.add(round(sys.getswitchinterval(), 5))
            stop.wait(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        vectors = embedder.embed([f"paragraph {n} about a login that fails after the session ends" for n in range(60)])
    finally:
        stop.set()
        watcher.join(10)
    assert vectors.shape == (60, 384)
    assert round(switch_interval.EMBEDDING, 5) in seen
    assert sys.getswitchinterval() == pytest.approx(0.005, abs=2e-6)
