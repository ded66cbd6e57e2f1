"""What a process pays to start the local embedder: derived in the process, or read from the cache (decision 148).

Each setting is a fresh Python process that builds ``LocalEmbedder`` and embeds a few texts, as a worker, an
API server or a ``harvester sync`` does at its first vectors:

- **derive**: the graph derived in the process (no usable cache directory: what every process paid before
  decision 148);
- **kept**: the same with the heap the derivation freed left mapped (no ``malloc_trim``), for its share;
- **save**: derived and saved to an empty cache directory (a deployment's first process), once a run;
- **read**: read from the file the save wrote (every process after it).

For each: the wall time from the process's start to the embedder ready, the CPU seconds by then, the peak
resident memory, and the resident memory after embedding. Rounds alternate the settings; the medians are
printed, with each setting's ratio to **derive**. Every setting's vectors must be the same, byte for byte.

    python bench/embedder_start.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import hashlib, json, resource, sys, time
from pathlib import Path
started = float(sys.argv[1])
from app.embedding import local
if sys.argv[2] == "kept":
    local.release_freed_heap = lambda: None
cache = Path(sys.argv[3]) if sys.argv[2] in ("save", "read") else None
embedder = local.LocalEmbedder(cache_dir=cache)
ready = time.time() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
vectors = embedder.embed([f"issue {n}: the payment gateway timed out after the retry budget" for n in range(16)])
with open("/proc/self/status") as status:
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
print(json.dumps({
    "ready": ready,
    "cpu": usage.ru_utime + usage.ru_stime,
    "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "rss": rss / 1024,
    "vectors": hashlib.sha256(vectors.tobytes()).hexdigest(),
}))
"""

SETTINGS = ("derive", "kept", "save", "read")


def start(setting: str, cache: Path) -> dict[str, float | str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, repr(time.time()), setting, str(cache)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {setting} process failed:\n{done.stderr}")
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="rounds of derive, kept and read")
    args = parser.parse_args()

    runs: dict[str, list[dict[str, float | str]]] = {s: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="hv-bench-models-") as scratch:
        cache = Path(scratch) / "models"
        runs["save"].append(start("save", cache))
        for _ in range(args.repeats):
            for setting in ("derive", "kept", "read"):
                runs[setting].append(start(setting, cache))
        (saved,) = cache.glob("*.onnx")
        size = saved.stat().st_size

    print(f"local embedder start, {args.repeats} rounds (save once); cached graph {size / 2**20:.1f} MiB")
    header = f"{'setting':<8} {'ready s':>8} {'cpu s':>7} {'peak MiB':>9} {'rss MiB':>8}"
    print(f"{header}   ÷ derive: ready  cpu  peak  rss")
    medians = {
        s: {k: statistics.median(float(r[k]) for r in rows) for k in ("ready", "cpu", "peak", "rss")}
        for s, rows in runs.items()
    }
    base = medians["derive"]
    for setting in SETTINGS:
        m = medians[setting]
        ratios = "  ".join(f"{m[k] / base[k]:.2f}" for k in ("ready", "cpu", "peak", "rss"))
        print(f"{setting:<8} {m['ready']:>8.2f} {m['cpu']:>7.2f} {m['peak']:>9.0f} {m['rss']:>8.0f}   {ratios}")
    digests = {str(r["vectors"]) for rows in runs.values() for r in rows}
    print(f"vectors the same in every process: {'yes' if len(digests) == 1 else 'NO'}")
    print(f"read / derive: ready {medians['read']['ready'] / base['ready']:.2f}, "
          f"peak {medians['read']['peak'] / base['peak']:.2f}, rss {medians['read']['rss'] / base['rss']:.2f}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
