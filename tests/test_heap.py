"""Start-up objects leave the garbage collector's walks (decision 92): what :func:`app.heap.settle` does in
this process, and that every long-running command calls it (``frozen_objects`` in its log, read by
tests/test_logs.py for ``harvester sync``, tests/jobs/test_real_worker.py for ``worker`` and
tests/api/test_operations.py for ``serve``)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from app.heap import settle
from tests.conftest import REPO

# A bare interpreter tracks about 8,000 objects; a Harvester process that has imported its app and the
# connector packages tracks ten times that. Below this, the command froze before its start-up was done.
STARTED_UP = 40_000


def frozen_objects(log: str) -> int:
    """The count a process's JSON log reports for its settle() call; 0 without one."""
    for line in log.splitlines():
        if line.startswith("{") and '"frozen_objects"' in line:
            return int(json.loads(line)["frozen_objects"])
    return 0


@pytest.fixture()
def thawed() -> Iterator[None]:
    """The test process's collector as it was: whatever a test froze goes back into the generations."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("thawed")
def test_settle_takes_what_exists_out_of_every_collection() -> None:
    before_startup_done = [{"built": "at start-up"}]
    assert any(o is before_startup_done for o in gc.get_objects())

    frozen = settle()

    assert frozen == gc.get_freeze_count() >= STARTED_UP
    assert not any(o is before_startup_done for o in gc.get_objects()), "a full collection would still walk it"
    built_later = [{"built": "by a run"}]
    assert any(o is built_later for o in gc.get_objects()), "only what existed is frozen"


def test_settle_imports_every_connector_package_first() -> None:
    """In a fresh interpreter (this one imported them long ago): a connector package imported at a run's
    first use would stay in every full collection."""
    probe = (
        "import sys\n"
        "from app.heap import settle\n"
        "from app.registry import known_types\n"
        "packages = ['connectors.' + t for t in known_types()]\n"
        "before = [p for p in packages if p in sys.modules]\n"
        "settle()\n"
        "print(before, [p for p in packages if p not in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"


@pytest.mark.usefixtures("thawed")
def test_settle_logs_the_count_it_froze(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="app.heap"):
        frozen = settle(connectors=False)
    (record,) = [r for r in caplog.records if r.name == "app.heap"]
    assert record.__dict__["frozen_objects"] == frozen > 0
