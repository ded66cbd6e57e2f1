"""The API pool's checkout check survives the issue 15 §2 shortcut: a connection handed back more than
``RECENTLY_USED`` seconds ago is pinged, so one left idle across a database restart is replaced before a
request gets it (issue 11 §2), now that ``Database`` notes the hand-back time instead of a pool hook."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app.api.db import RECENTLY_USED, Database, open_pool
from app.db.migrate import migrate

REPO = Path(__file__).resolve().parents[2]


def _embedded(data_dir: Path, action: str) -> str:
    """Start (printing its URL) or stop the embedded server in a child process: the embedded package caches
    a server per process, so this process could not start it again after a stop."""
    code = f"from pathlib import Path\nfrom app.db import embedded\ns = embedded.start(Path({str(data_dir)!r}))\n"
    code += "print(s.url())" if action == "start" else "s.stop()"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] if action == "start" else ""


def test_a_connection_idle_across_a_restart_is_replaced_before_a_request_gets_it() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="hv-pool-restart-", dir="/tmp"))
    data_dir.chmod(0o711)
    try:
        url = _embedded(data_dir, "start")
        migrate(url, data_dir / "backups")
        pool = open_pool(url, min_size=1, max_size=1)  # one connection: the one that sees the restart
        db = Database(pool)
        try:
            with db.read() as conn:
                before = conn.execute("select pg_backend_pid()").fetchone()
            _embedded(data_dir, "stop")
            assert _embedded(data_dir, "start") == url
            time.sleep(RECENTLY_USED + 0.2)
            # Without the ping this read would get the dead connection and fail (a 500 for a request).
            with db.read() as conn:
                after = conn.execute("select pg_backend_pid()").fetchone()
                assert conn.execute("select current_user").fetchone() == ("harvester_api",)
            assert after != before
            with db.tx() as conn:
                assert conn.execute("select current_user").fetchone() == ("harvester_api",)
        finally:
            pool.close()
    finally:
        _embedded(data_dir, "stop")
        shutil.rmtree(data_dir, ignore_errors=True)
