"""Procrastinate jobs. :func:`build_app` adds each module's blueprint explicitly (namespace ``harvester``,
so task names are ``harvester:<name>``) and registers the periodic tasks with their crons; nothing
registers a task or a schedule by being imported.

- :mod:`app.jobs.sync`      ``run_sync(run_id)``: one sync run;
- :mod:`app.jobs.periodic`  the ``tick``: schedule, probe, watchdog, resume stale runs, reap orphans;
- :mod:`app.jobs.webhooks`  ``apply_webhook`` and the pruning of delivery ids;
- :mod:`app.jobs.vectors`   ``reembed`` and ``reembed_check`` after a model change;
- :mod:`app.jobs.alerts`    ``send_alert``: failure notifications with retries;
- :mod:`app.jobs.stalled`   ``recover_stalled_jobs``: jobs a dead worker left in ``doing``;
- :mod:`app.jobs.retention` ``prune_jobs``: the jobs that ended more than HARVESTER_JOB_RETENTION_HOURS ago.
"""

from __future__ import annotations

import procrastinate

from app.config import DEFAULT_TICK_CRON
from app.jobs import alerts, periodic, retention, stalled, sync, vectors, webhooks
from app.jobs.common import ALERTS_QUEUE, PERIODIC_QUEUE, QUEUE, worker_id

NAMESPACE = "harvester"
POOL_TIMEOUT = 5.0
WORKER_CONNECTIONS = "harvester-worker"  # application_name of the Procrastinate pool's connections
BLUEPRINTS = (
    sync.blueprint,
    periodic.blueprint,
    webhooks.blueprint,
    vectors.blueprint,
    alerts.blueprint,
    stalled.blueprint,
    retention.blueprint,
)
# Fixed cadences of the housekeeping tasks; the tick's cron is configuration (HARVESTER_TICK_CRON), and so
# is the stalled-job recovery's (HARVESTER_STALLED_JOBS_CRON).
HOUSEKEEPING_CRONS = {
    "harvester:reembed_check": "*/10 * * * *",
    "harvester:prune_webhook_deliveries": "*/10 * * * *",
    "harvester:prune_jobs": "17 * * * *",  # hourly: each pass deletes about an hour's worth of jobs
}

__all__ = ["ALERTS_QUEUE", "BLUEPRINTS", "NAMESPACE", "PERIODIC_QUEUE", "QUEUE", "build_app", "worker_id"]


def build_app(
    url: str, *, tick_cron: str = DEFAULT_TICK_CRON, stalled_jobs_cron: str = DEFAULT_TICK_CRON
) -> procrastinate.App:
    """The worker's app. Once per process: Procrastinate namespaces the blueprints' tasks in place."""
    # timeout: seconds a worker waits for a pooled connection. The pool's 30 s default made a worker that
    # lost its database take a minute to stop (two waits) before harvester worker could react (issue 11).
    # kwargs: the pool's connections are named in pg_stat_activity, as a run's are ("harvester",
    # "harvester-lease", ...): a DBA counting a worker's connections sees which are Procrastinate's.
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=url, timeout=POOL_TIMEOUT, kwargs={"application_name": WORKER_CONNECTIONS}
        )
    )
    for blueprint in BLUEPRINTS:
        app.add_tasks_from(blueprint, namespace=NAMESPACE)
    crons = {"harvester:tick": tick_cron, "harvester:recover_stalled_jobs": stalled_jobs_cron, **HOUSEKEEPING_CRONS}
    for name, cron in crons.items():
        app.periodic(cron=cron)(app.tasks[name])
    return app
