"""Jobs that ended long ago leave Procrastinate's tables; waiting and running ones never do (issue 15 §5).

A real ``harvester worker`` runs ``harvester:prune_jobs`` (deferred here as the hourly schedule would)
against jobs in every state, each with a last event of a known age.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from app.services.jobs import PERIODIC_QUEUE, JobRef, defer_in
from tests.jobs.conftest import Procs, wait_for

PRUNE = JobRef("harvester:prune_jobs", PERIODIC_QUEUE)

# (status, last event, hours ago) -> kept after a prune with a retention of 24 hours?
CASES = {
    ("succeeded", "succeeded", 30): False,
    ("failed", "failed", 30): False,
    ("cancelled", "cancelled", 30): False,
    ("aborted", "aborted", 30): False,
    ("succeeded", "succeeded", 2): True,  # inside the retention
    ("failed", "failed", 20): True,
    ("todo", "deferred", 30): True,  # waiting: whatever its age, the job that will run it stays
    ("doing", "started", 30): True,  # running (or its worker died: recover_stalled_jobs' business)
}


def _seed(conn: psycopg.Connection[Any]) -> dict[tuple[str, str, int], int]:
    ids = {}
    for status, event, hours in CASES:
        row = conn.execute(
            "insert into procrastinate_jobs (queue_name, task_name, status, args, scheduled_at) "
            "values ('sync', 'harvester:apply_webhook', %s, '{}', now() + interval '1 day') returning id",
            (status,),
        ).fetchone()
        assert row is not None
        # A job inserted as todo already got its "deferred" event from Procrastinate's trigger: age them all.
        conn.execute("delete from procrastinate_events where job_id = %s", (row[0],))
        conn.execute(
            "insert into procrastinate_events (job_id, type, at) values"
            " (%s, 'deferred', now() - make_interval(hours => %s)), (%s, %s, now() - make_interval(hours => %s))",
            (row[0], hours + 1, row[0], event, hours),
        )
        ids[(status, event, hours)] = row[0]
    return ids


def test_the_worker_prunes_ended_jobs_past_the_retention_and_keeps_the_rest(
    procs: Procs, conn: psycopg.Connection[Any], probe: psycopg.Connection[Any]
) -> None:
    with conn.transaction():
        ids = _seed(conn)
        prune_id = defer_in(conn, PRUNE, timestamp=int(time.time()))

    # The todo jobs are scheduled a day ahead and the doing one has no worker: this worker runs neither.
    worker = procs.worker(HARVESTER_JOB_RETENTION_HOURS="24")

    def pruned() -> bool:
        row = probe.execute("select status::text from procrastinate_jobs where id = %s", (prune_id,)).fetchone()
        return row is not None and row[0] in ("succeeded", "failed")

    wait_for(pruned, 60, "the prune job to finish", procs)
    status = probe.execute("select status::text from procrastinate_jobs where id = %s", (prune_id,)).fetchone()
    assert status == ("succeeded",), procs.logs()
    left = {r[0] for r in probe.execute("select id from procrastinate_jobs where id = any(%s)", (list(ids.values()),))}
    assert {case: ids[case] in left for case in CASES} == CASES
    events = probe.execute(
        "select count(*) from procrastinate_events where job_id = any(%s) and not (job_id = any(%s))",
        (list(ids.values()), list(left)),
    ).fetchone()
    assert events == (0,)  # a pruned job's events go with it
    assert "pruned the jobs that ended more than 24 hours ago" in worker.log.read_text(errors="replace")
