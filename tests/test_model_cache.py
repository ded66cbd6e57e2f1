"""The local embedder's derived graph kept on disk for the next process (decision 148).

``cached_graph`` with a derivation that only counts its calls, for every branch; then the real
``LocalEmbedder`` in real processes: the second process reads what the first saved, and a damaged or
unusable cache costs the saving only, never a vector.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from app.embedding import local as local_module
from app.embedding import model_cache
from app.embedding.model_cache import cached_graph, derivation_key
from tests.conftest import REPO

NAME = "model-x"
KEY = "0123456789abcdef"


class Derivation:
    def __init__(self, payload: bytes = b"graph bytes") -> None:
        self.payload = payload
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.payload


def onnx_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_the_first_call_derives_and_saves_and_the_next_reads_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    derive = Derivation()
    cache = tmp_path / "models"  # made on first use
    with caplog.at_level(logging.INFO, logger=model_cache.__name__):
        first = cached_graph(cache, NAME, KEY, derive)
        second = cached_graph(cache, NAME, KEY, derive)
    assert derive.calls == 1
    assert isinstance(first, str) and first == second
    digest = hashlib.sha256(b"graph bytes").hexdigest()
    assert onnx_files(cache) == [f"{NAME}-{KEY}-{digest}.onnx"]  # no partial file left
    assert Path(first).read_bytes() == b"graph bytes"
    assert (cache.stat().st_mode & 0o777, Path(first).stat().st_mode & 0o777) == (0o700, 0o600)
    assert [r.getMessage().split(" in ")[0].split(" from ")[0] for r in caplog.records] == [
        "local embedder's int8 graph derived",
        "local embedder's int8 graph read",
    ]


def test_a_file_that_does_not_match_its_sha256_is_removed_and_derived_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    derive = Derivation()
    saved = Path(str(cached_graph(tmp_path, NAME, KEY, derive)))
    saved.write_bytes(b"graph bytez")  # one byte changed, same length, same name
    with caplog.at_level(logging.WARNING, logger=model_cache.__name__):
        again = cached_graph(tmp_path, NAME, KEY, derive)
    assert derive.calls == 2 and again == str(saved) and saved.read_bytes() == b"graph bytes"
    assert "does not match the sha256 in its name: removed" in caplog.text


def test_saving_removes_the_files_of_other_keys_and_nothing_else(tmp_path: Path) -> None:
    older = tmp_path / f"{NAME}-fedcba9876543210-{'0' * 64}.onnx"
    other_model = tmp_path / f"other-model-{KEY}-{'0' * 64}.onnx"
    unrelated = tmp_path / "notes.txt"
    for path in (older, other_model, unrelated):
        path.write_bytes(b"x")
    cached_graph(tmp_path, NAME, KEY, Derivation())
    assert not older.exists() and other_model.exists() and unrelated.exists()


def test_a_directory_it_cannot_use_costs_only_the_saving(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    derive = Derivation()
    with caplog.at_level(logging.WARNING, logger=model_cache.__name__):
        got = cached_graph(blocker / "models", NAME, KEY, derive)  # a directory under a regular file
    assert got == b"graph bytes" and derive.calls == 1
    assert f"cannot read the local embedder's graph cache in {blocker / 'models'}" in caplog.text


def test_a_save_that_fails_keeps_the_derived_graph_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Running as root, no permission stops a write; a full disk is stood in for by the rename failing.
    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with caplog.at_level(logging.WARNING, logger=model_cache.__name__):
        got = cached_graph(tmp_path, NAME, KEY, Derivation())
    assert got == b"graph bytes" and onnx_files(tmp_path) == []
    assert "cannot save the local embedder's int8 graph" in caplog.text and "No space left on device" in caplog.text


def test_a_half_written_file_of_a_dead_process_is_swept_and_a_young_one_kept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = tmp_path / f".{NAME}-{int(dead.stdout)}-abc.partial"
    young = tmp_path / f".{NAME}-{int(dead.stdout)}-def.partial"  # perhaps another pid namespace's, saving now
    mine = tmp_path / f".{NAME}-{os.getpid()}-ghi.partial"
    for path in (abandoned, young, mine):
        path.write_bytes(b"half")
    hour_ago = time.time() - 3600
    for path in (abandoned, mine):
        os.utime(path, (hour_ago, hour_ago))
    cached_graph(tmp_path, NAME, KEY, Derivation())
    assert not abandoned.exists() and young.exists() and mine.exists()


def test_the_key_changes_with_the_parameters_a_package_version_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = derivation_key({"model": "a", "code": 1})
    assert derivation_key({"code": 1, "model": "a"}) == base and len(base) == 16
    assert derivation_key({"model": "a", "code": 2}) != base
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0" if name == "onnxruntime" else real(name))
    assert derivation_key({"model": "a", "code": 1}) != base


EMBED = """
import json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
from app.embedding.local import LocalEmbedder
embedder = LocalEmbedder(cache_dir=Path(sys.argv[1]))
print(json.dumps(embedder.embed(["the payment gateway timed out", "replica lag on the primary"]).tolist()))
"""


def embed_in_a_process(cache: Path) -> tuple[np.ndarray, str]:
    done = subprocess.run(
        [sys.executable, "-c", EMBED, str(cache)], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return np.array(json.loads(done.stdout), dtype=np.float32), done.stderr


def test_a_second_process_reads_the_graph_the_first_saved_and_embeds_the_same(tmp_path: Path) -> None:
    cache = tmp_path / "models"
    first, first_log = embed_in_a_process(cache)
    second, second_log = embed_in_a_process(cache)
    assert "int8 graph derived in" in first_log and "read from" not in first_log
    assert "int8 graph read from" in second_log and "derived" not in second_log
    np.testing.assert_array_equal(first, second)
    # The file is the graph this process derives in memory, byte for byte.
    (saved,) = cache.glob(f"{local_module.MODEL_NAME}-*.onnx")
    assert saved.read_bytes() == local_module.int8_compute_model()
    # A damaged file is derived again, and the vectors stay the same.
    damaged = bytearray(saved.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    saved.write_bytes(bytes(damaged))
    third, third_log = embed_in_a_process(cache)
    assert "does not match the sha256 in its name" in third_log and "derived in" in third_log
    np.testing.assert_array_equal(first, third)
    assert saved.read_bytes() == local_module.int8_compute_model()


def test_a_cached_file_gone_before_its_load_is_derived_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A process of another version may remove files not of its key between this one's check and its load.
    gone = tmp_path / "removed-meanwhile.onnx"
    monkeypatch.setattr(model_cache, "cached_graph", lambda *args: str(gone))
    with caplog.at_level(logging.WARNING, logger=local_module.__name__):
        embedder = local_module.LocalEmbedder(cache_dir=tmp_path)
    assert f"cannot load the local embedder's graph from {gone}" in caplog.text
    reference = local_module.LocalEmbedder()
    np.testing.assert_array_equal(embedder.embed(["replica lag"]), reference.embed(["replica lag"]))


def test_two_processes_starting_at_once_on_an_empty_cache_both_embed_and_leave_one_file(tmp_path: Path) -> None:
    # Two workers of one host started together: each derives and saves; the renames leave one whole file.
    cache = tmp_path / "models"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", EMBED, str(cache)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    vectors = [np.array(json.loads(out), dtype=np.float32) for out, _ in outputs]
    np.testing.assert_array_equal(vectors[0], vectors[1])
    assert len(list(cache.glob("*.onnx"))) == 1 and not list(cache.glob(".*"))  # no partial file left
    _, later_log = embed_in_a_process(cache)
    assert "int8 graph read from" in later_log
