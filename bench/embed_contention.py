"""The local embedder beside Python work of the same process: the interpreter lock's hand-over (decision 147).

The embedder runs one text a pass; each pass's thread takes the interpreter lock back when onnxruntime
returns. Beside a thread running Python (in a sync: the read-ahead parsing pages, the run mapping and
loading them) it waits until that thread lets go of the lock, which a busy thread does when the switch
interval runs out. The embedder shortens the interval to 1 ms while a call is in progress
(``app.embedding.switch_interval``). The same texts are embedded, in alternating rounds (best of
``--repeats``):

- alone;
- beside a thread of this process running Python, as the product runs (its 1 ms interval);
- the same with the process's default interval kept (5 ms, the embedder before decision 147);
- beside a process running the same Python: the cores' share without the lock, the floor for the two above.

Ratios are wall time over the embedding alone; "1 ms ÷ 5 ms" is the product's gain.

    python bench/embed_contention.py [--chunks 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.embedding import switch_interval
from app.embedding.local import LocalEmbedder
from bench.embed_throughput import make_chunk_texts


def python_work(stop: threading.Event | ProcessEvent) -> None:
    """Mapping-like Python until stopped: dicts built from strings, joined and split (holds the lock)."""
    words = [f"word{n}" for n in range(64)]
    while not stop.is_set():
        for n in range(200):
            fields = {w: w.upper() for w in words[n % 8 :]}
            record = {"key": f"PROJ-{n}", "text": " ".join(fields.values())}
            record["text"].split()


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def beside_thread(embed: Callable[[], object], interval: float) -> float:
    kept = switch_interval.EMBEDDING
    switch_interval.EMBEDDING = interval
    stop = threading.Event()
    worker = threading.Thread(target=python_work, args=(stop,), daemon=True)
    worker.start()
    try:
        time.sleep(0.1)
        return timed(embed)
    finally:
        stop.set()
        worker.join()
        switch_interval.EMBEDDING = kept


def beside_process(embed: Callable[[], object]) -> float:
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    worker = context.Process(target=python_work, args=(stop,), daemon=True)
    worker.start()
    try:
        time.sleep(0.5)  # the child's interpreter start
        return timed(embed)
    finally:
        stop.set()
        worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    embedder = LocalEmbedder()
    texts = make_chunk_texts(args.chunks, embedder)
    embedder.embed(texts[:16])  # the sessions' first-pass set-up, outside the clock

    default = sys.getswitchinterval()
    variants: dict[str, Callable[[], float]] = {
        "alone": lambda: timed(lambda: embedder.embed(texts)),
        "thread, 1 ms": lambda: beside_thread(lambda: embedder.embed(texts), switch_interval.EMBEDDING),
        f"thread, {default * 1000:g} ms": lambda: beside_thread(lambda: embedder.embed(texts), default),
        "process": lambda: beside_process(lambda: embedder.embed(texts)),
    }
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.repeats):
        for name, run in variants.items():
            best[name] = min(best[name], run())

    alone = best["alone"]
    print(f"{len(texts)} texts, {embedder!r}, best of {args.repeats}; process default interval {default * 1000:g} ms")
    for name, seconds in best.items():
        print(f"  {name:16} {seconds:6.2f} s  {seconds / alone:5.2f} x alone")
    product, before = best["thread, 1 ms"], best[f"thread, {default * 1000:g} ms"]
    print(f"  beside a thread: 1 ms / {default * 1000:g} ms = {product / before:.2f}")


if __name__ == "__main__":
    main()
