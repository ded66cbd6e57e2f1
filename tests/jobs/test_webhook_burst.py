"""A burst of webhook deliveries during a long run, in a REAL ``harvester worker`` (decision 145).

Each delivery is accepted the way the API accepts it (``app.services.webhooks.receive`` in its own
transaction, the job deferred on the same connection); the worker process runs the jobs. Before decision
145 every delivery was a job of its own that started a run of its own items, retried every 10 s while the
source was busy: a burst became one run per delivery, 10 s apart. Now the deliveries' items gather in the
source's pending set, one job waits for the busy source, and the run that ends defers a job that takes the
whole set into one run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import psycopg

from app.secrets import Keyring
from app.services.jobs import APPLY_WEBHOOK, defer_in
from app.services.sources import NewSource, create_source
from app.services.webhooks import receive
from tests.api.conftest import job_count
from tests.jobs.conftest import Procs, queued, wait_for
from tests.sync.conftest import TOKEN, Jira, JiraFactory, scalar

SECRET = "hook-secret-for-the-burst-0045"
DELIVERIES = 12


def _deliver(db_url: str, keyring: Keyring, source_id: int, jira: Jira, i: int) -> str:
    """One signed ``jira:issue_updated`` delivery for issue ``i``, accepted in its own transaction."""
    issue = {"id": jira.id(i), "key": jira.key(i), "fields": {}}
    body = json.dumps({"webhookEvent": "jira:issue_updated", "timestamp": i, "issue": issue}).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature": f"sha256={signature}"}
    with psycopg.connect(db_url) as c:

        def defer(sid: int) -> None:
            defer_in(c, APPLY_WEBHOOK, source_id=sid)

        intake = receive(c, keyring, source_id, headers, body, defer)
    return intake.outcome


def _waiting_job(probe: psycopg.Connection[Any], source_id: int) -> bool:
    return bool(
        scalar(
            probe,
            "select exists (select 1 from procrastinate_jobs where task_name = 'harvester:apply_webhook' "
            "and (args ->> 'source_id')::bigint = %s and status = 'todo' and attempts >= 1)",
            (source_id,),
        )
    )


def test_a_burst_of_deliveries_during_a_run_becomes_one_run_after_it(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
) -> None:
    jira = jira_factory(300)
    source_id = create_source(
        conn,
        keyring,
        NewSource(
            name="hooked", connector_type="jira", base_url=jira.base_url, credential=TOKEN,
            webhook_enabled=True, webhook_secret=SECRET,
        ),
    )
    worker = procs.worker("--no-periodic")
    jira.fault(latency_ms=500)  # the full run takes a while: the deliveries arrive while it holds the source
    full = queued(conn, source_id)
    wait_for(lambda: scalar(probe, "select state from sync_runs where id = %s", (full,)) == "running", 30,
             "the full run to start", procs)

    for i in range(DELIVERIES):
        jira.patch(jira.key(i), summary=f"changed by delivery {i}")
        assert _deliver(procs.db_url, keyring, source_id, jira, i) == "accepted"
        if i == 0:
            # The first delivery's job found the source busy and waits for its retry, 10 s away: todo again.
            wait_for(lambda: _waiting_job(probe, source_id), 30, "the first job to wait for the busy source", procs)
    pending = scalar(probe, "select count(*) from webhook_pending where source_id = %s", (source_id,))
    # That one job waits for all of them: every item is pending once, and no delivery deferred another job.
    assert (pending, job_count(procs.db_url, "harvester:apply_webhook", source_id)) == (DELIVERIES, 1)
    jira.clear_faults()

    def webhook_runs_ended() -> list[tuple[Any, ...]]:
        runs = probe.execute(
            "select id, state, scope from sync_runs where source_id = %s and trigger = 'webhook' order by id",
            (source_id,),
        ).fetchall()
        pending = scalar(probe, "select count(*) from webhook_pending where source_id = %s", (source_id,))
        return runs if runs and pending == 0 and all(r[1] in ("succeeded", "failed") for r in runs) else []

    runs = wait_for(webhook_runs_ended, 90, "the webhook run to end", procs)
    assert scalar(probe, "select state from sync_runs where id = %s", (full,)) == "succeeded"
    assert [r[1] for r in runs] == ["succeeded"], runs
    items = runs[0][2]["items"]
    assert sorted(i["source_entity_id"] for i in items) == sorted(jira.id(i) for i in range(DELIVERIES))
    titles = probe.execute(
        "select source_entity_id, title from entities where source_id = %s and source_entity_id = any(%s)",
        (source_id, [jira.id(i) for i in range(DELIVERIES)]),
    ).fetchall()
    assert sorted(titles) == sorted((jira.id(i), f"changed by delivery {i}") for i in range(DELIVERIES))
    # The full run's end deferred the job that took the set, without waiting for the busy job's retry.
    assert f"run {full} ended with webhook items pending for its source: a job takes them now" in worker.log.read_text()
    # The job that had waited for the busy source comes back, finds the set taken and ends.
    wait_for(
        lambda: scalar(
            probe,
            "select count(*) from procrastinate_jobs where task_name = 'harvester:apply_webhook' "
            "and (args ->> 'source_id')::bigint = %s and status <> 'succeeded'",
            (source_id,),
        ) == 0,
        60,
        "every webhook job to succeed",
        procs,
    )
    assert probe.execute(
        "select count(*) from sync_runs where source_id = %s and trigger = 'webhook'", (source_id,)
    ).fetchone() == (1,)
