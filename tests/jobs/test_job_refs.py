"""The names and queues the services defer to are the tasks the worker registers, and the tick's
schedule is configuration read when the app is built (issue 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from app.config import DEFAULT_TICK_CRON, load_config
from app.errors import HarvesterError
from app.services.jobs import APPLY_WEBHOOK, RUN_SYNC
from tests.conftest import REPO

# build_app is once per process (Procrastinate namespaces blueprint tasks in place): build it in a child.
_BUILD = """
import json, sys
from app.jobs import build_app
app = build_app("postgresql://127.0.0.1:1/never-opened", **json.loads(sys.argv[1]))
print(json.dumps({
    "queues": {name: task.queue for name, task in app.tasks.items()},
    "crons": {p.task.name: p.cron for p in app.periodic_registry.periodic_tasks.values()},
}))
"""


def _built(**kwargs: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _BUILD, json.dumps(kwargs)], cwd=REPO, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_each_job_ref_names_a_registered_task_on_its_queue() -> None:
    queues = _built()["queues"]
    for ref in (RUN_SYNC, APPLY_WEBHOOK):
        assert queues[ref.name] == ref.queue


def test_the_tick_is_registered_with_the_configured_cron_when_the_app_is_built() -> None:
    assert _built(tick_cron="* * * * * */2")["crons"]["harvester:tick"] == "* * * * * */2"
    assert _built()["crons"]["harvester:tick"] == DEFAULT_TICK_CRON == "* * * * *"


def test_tick_cron_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVESTER_TICK_CRON", "*/5 * * * *")
    assert load_config().tick_cron == "*/5 * * * *"
    monkeypatch.delenv("HARVESTER_TICK_CRON")
    assert load_config().tick_cron == DEFAULT_TICK_CRON


def test_an_invalid_tick_cron_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVESTER_TICK_CRON", "every minute")
    with pytest.raises(HarvesterError, match=r'^HARVESTER_TICK_CRON: "every minute" is not a cron expression'):
        load_config()


def test_prune_jobs_is_registered_hourly_on_the_periodic_queue() -> None:
    built = _built()
    assert built["queues"]["harvester:prune_jobs"] == "periodic"
    assert built["crons"]["harvester:prune_jobs"] == "17 * * * *"


def test_job_retention_comes_from_the_environment_and_rejects_a_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARVESTER_JOB_RETENTION_HOURS", raising=False)
    assert load_config().job_retention_hours == 168
    monkeypatch.setenv("HARVESTER_JOB_RETENTION_HOURS", "48")
    assert load_config().job_retention_hours == 48
    for bad, why in (("a week", "not an integer"), ("0", "must be 1 or more")):
        monkeypatch.setenv("HARVESTER_JOB_RETENTION_HOURS", bad)
        with pytest.raises(HarvesterError, match=rf"^HARVESTER_JOB_RETENTION_HOURS: {why}$"):
            load_config()
