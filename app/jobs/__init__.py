"""Procrastinate jobs. :func:`build_app` adds each module's blueprint explicitly (namespace ``harvester``,
so task names are ``harvester:<name>``); nothing registers a task by being imported.

- :mod:`app.jobs.sync`      ``run_sync(run_id)``: one sync run;
- :mod:`app.jobs.periodic`  the minute ``tick``: schedule, probe, watchdog, resume stale runs;
- :mod:`app.jobs.webhooks`  ``apply_webhook`` and the pruning of delivery ids;
- :mod:`app.jobs.vectors`   ``reembed`` and ``reembed_check`` after a model change;
- :mod:`app.jobs.stalled`   ``recover_stalled_jobs``: jobs a dead worker left in ``doing``.
"""

from __future__ import annotations

import procrastinate

from app.jobs import periodic, stalled, sync, vectors, webhooks
from app.jobs.common import PERIODIC_QUEUE, QUEUE, worker_id

NAMESPACE = "harvester"
POOL_TIMEOUT = 5.0
BLUEPRINTS = (sync.blueprint, periodic.blueprint, webhooks.blueprint, vectors.blueprint, stalled.blueprint)

__all__ = ["BLUEPRINTS", "NAMESPACE", "PERIODIC_QUEUE", "QUEUE", "build_app", "worker_id"]


def build_app(url: str) -> procrastinate.App:
    # timeout: seconds a worker waits for a pooled connection. The pool's 30 s default made a worker that
    # lost its database take a minute to stop (two waits) before harvester worker could react (issue 11).
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url, timeout=POOL_TIMEOUT))
    for blueprint in BLUEPRINTS:
        app.add_tasks_from(blueprint, namespace=NAMESPACE)
    return app
