"""The local embedder's derived int8 graph, kept on disk for the next process (decision 148).

Deriving the graph (``app.embedding.local.derive_int8_model``) costs each process about 2 s of CPU at its
start, 150 MB of scratch files in the temporary directory, and a peak of about 450 MiB resident. The
derivation is deterministic for one set of inputs: the shipped model (pinned by its sha256), the versions of
onnxruntime, onnx, numpy and protobuf that fold, quantize and write it, the machine's architecture, and our
own parameters. So the first process saves the graph under a name made of those inputs (the key) and of its
bytes' sha256, and the next ones load it from that file: about 0.3 s, a peak of about 185 MiB, nothing
written, and the sessions hold no copy of the file's bytes (onnxruntime's Python session keeps bytes it is
given for its whole life, a path it does not).

A cached file is trusted only when its bytes match the sha256 in its name; one that does not is removed
and the graph derived again. A directory that cannot be read or written costs only the saving: the graph is
derived in memory, as before, with one warning naming the directory. Files of other keys (another version
of onnxruntime, say) are removed when a graph is saved; files a killed process left half-written are
removed once their process is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from app.pids import alive

log = logging.getLogger(__name__)

_SUFFIX = ".onnx"
_PARTIAL = ".partial"
ABANDONED_AFTER = 600.0  # seconds: a derivation or a save takes a few
# What the derivation depends on besides the shipped model and its own parameters: the packages that fold,
# quantize and serialise the graph. A package that is not installed counts as its own version ("-").
_DEPENDENCIES = ("onnxruntime", "onnx", "numpy", "protobuf")


def derivation_key(parameters: Mapping[str, object]) -> str:
    """16 hex digits naming one derivation: ``parameters`` (the shipped model's sha256, the quantizer's
    settings, a version of our own code) with the versions of the packages that do the work and the
    machine's architecture. Any of them changing names another file."""
    versions = {}
    for name in _DEPENDENCIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "-"
    inputs = {"parameters": dict(parameters), "packages": versions, "machine": platform.machine()}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cached_graph(directory: Path, name: str, key: str, derive: Callable[[], bytes]) -> str | bytes:
    """The path of the verified graph file for ``key`` in ``directory``, derived and saved first if there
    is none; the derived bytes themselves when the directory cannot be used."""
    prefix = f"{name}-{key}-"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # its files are 0600 (mkstemp)
        for path in sorted(directory.glob(f"{prefix}*{_SUFFIX}")):
            if _intact(path, prefix):
                log.info("local embedder's int8 graph read from %s", path)
                return str(path)
    except OSError as exc:
        log.warning(
            "cannot read the local embedder's graph cache in %s (%s): this process derives the graph itself",
            directory,
            exc.strerror or exc,
        )
        return derive()
    started = time.perf_counter()
    payload = derive()
    final = directory / f"{prefix}{hashlib.sha256(payload).hexdigest()}{_SUFFIX}"
    try:
        sweep_abandoned(directory, f".{name}-")
        _write(directory, f".{name}-{os.getpid()}-", payload, final)
    except OSError as exc:
        log.warning(
            "cannot save the local embedder's int8 graph in %s (%s): every process derives it again "
            "(about 2 s of CPU and 150 MB in the temporary directory at its start)",
            directory,
            exc.strerror or exc,
        )
        return payload
    for other in directory.glob(f"{name}-*{_SUFFIX}"):
        if not other.name.startswith(prefix):
            with contextlib.suppress(OSError):  # a file left behind costs disk, never the process's start
                other.unlink(missing_ok=True)
    log.info("local embedder's int8 graph derived in %.1f s and saved to %s", time.perf_counter() - started, final)
    return str(final)


def _intact(path: Path, prefix: str) -> bool:
    """Whether ``path``'s bytes match the sha256 its name carries; a file that does not is removed."""
    with path.open("rb") as source:
        digest = hashlib.file_digest(source, "sha256").hexdigest()
    if digest == path.name[len(prefix) : -len(_SUFFIX)]:
        return True
    log.warning("%s does not match the sha256 in its name: removed, the graph is derived again", path)
    path.unlink(missing_ok=True)
    return False


def _write(directory: Path, partial_prefix: str, payload: bytes, final: Path) -> None:
    """Write ``payload`` to ``final`` whole or not at all: another process reading the directory meanwhile
    sees the old state or the complete file (a rename within one directory is atomic)."""
    handle, partial = tempfile.mkstemp(dir=directory, prefix=partial_prefix, suffix=_PARTIAL)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, final)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def sweep_abandoned(directory: Path, prefix: str) -> None:
    """Remove what a process that died while deriving or saving a graph left in ``directory`` (a worker
    killed at its start leaves up to 150 MB): entries named ``<prefix><pid>-…`` whose pid is gone and which
    are older than any derivation takes, so another host's process sharing the directory in another pid
    namespace keeps its own."""
    for entry in directory.glob(f"{prefix}*-*"):
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        try:
            old = time.time() - entry.stat().st_mtime > ABANDONED_AFTER
        except FileNotFoundError:
            continue
        if pid.isdigit() and old and not alive(int(pid)):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):  # as rmtree's ignore_errors: a sweep never fails its caller
                    entry.unlink(missing_ok=True)
