"""Unauthenticated operations endpoints: /health for load balancers, /metrics for Prometheus."""

from __future__ import annotations

from datetime import UTC, datetime

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec

from app.api import schemas as s
from app.api.db import Database
from app.api.metrics import CONTENT_TYPE, render
from app.api.problems import problem_responses
from app.api.workers import online_workers
from app.db.migrate import load_migrations
from app.queries import migrations as mq
from app.queries import workers as wq


def _migrations(applied: dict[str, str | None]) -> s.MigrationsOut:
    files = load_migrations()
    pending = [m.version for m in files if m.version not in applied]
    changed = [m.version for m in files if m.version in applied and applied[m.version] not in (None, m.checksum)]
    return s.MigrationsOut(current=not pending and not changed, applied=len(applied), pending=pending, changed=changed)


HEALTH_TIMEOUT = 3.0  # seconds /health waits for a pooled connection before answering 503


@get(
    "/health",
    operation_id="health",
    sync_to_thread=True,
    opt={"auth": "public"},
    tags=["operations"],
    responses={503: ResponseSpec(data_container=s.HealthOut, description="database down or schema not current")},
)
def health(db: Database) -> Response[s.HealthOut]:
    """Database reachable, migrations current, workers online. 200 when the API can serve (status ok, or
    degraded when no worker is online), 503 when the database is unreachable or the schema is not current."""
    try:
        # Seconds, not the pool's 30 s: a load balancer must see a database outage while it lasts.
        with db.tx(timeout=HEALTH_TIMEOUT) as conn:
            migrations = _migrations({r.version: r.checksum for r in mq.list_applied_migrations(conn)})
            online = sum(w.online for w in online_workers(wq.list_job_workers(conn), datetime.now(UTC)))
    except Exception:
        return Response(s.HealthOut("down", False, None, None), status_code=503)
    if not migrations.current:
        return Response(s.HealthOut("down", True, migrations, online), status_code=503)
    return Response(s.HealthOut("ok" if online else "degraded", True, migrations, online), status_code=200)


def metrics_handler(public: bool) -> HTTPRouteHandler:
    """``/metrics``; public by default, behind a read token when ``HARVESTER_METRICS_PUBLIC=0``."""

    @get(
        "/metrics",
        operation_id="metrics",
        sync_to_thread=True,
        opt={"auth": "public" if public else "read"},
        tags=["operations"],
        media_type=CONTENT_TYPE,
        responses=problem_responses(401) if not public else None,
    )
    def metrics(db: Database) -> Response[str]:
        """Prometheus text: runs by state, items processed, DLQ depth by reason, seconds since the last
        success, webhook deliveries, rate-limited calls."""
        with db.tx() as conn:
            online = sum(w.online for w in online_workers(wq.list_job_workers(conn), datetime.now(UTC)))
            return Response(render(conn, online), media_type=CONTENT_TYPE)

    return metrics
