"""Workers (seed 003 "агент онлайн"): heartbeat age, online if younger than 5 minutes; re-delivered runs."""

from __future__ import annotations

from datetime import UTC, datetime

from litestar import Controller, get

from app.api import schemas as s
from app.api.db import Database
from app.api.problems import problem_responses
from app.queries import runs as rq
from app.queries import workers as wq

ONLINE_WITHIN_SECONDS = 300

R = problem_responses


def online_workers(rows: list[wq.ListJobWorkersRow], now: datetime) -> list[s.WorkerOut]:
    out = []
    for w in rows:
        age = max((now - w.last_heartbeat).total_seconds(), 0.0)
        out.append(s.WorkerOut(w.id, w.last_heartbeat, round(age, 1), age < ONLINE_WITHIN_SECONDS))
    return out


class WorkersController(Controller):
    path = "/workers"
    tags = ("workers",)

    @get("/", operation_id="listWorkers", sync_to_thread=True, responses=R(401))
    def list_workers(self, db: Database) -> s.WorkersOut:
        """Procrastinate workers with their last heartbeat, and live runs claimed more than once."""
        with db.tx() as conn:
            workers = online_workers(wq.list_job_workers(conn), datetime.now(UTC))
            redelivered = [
                s.RedeliveredRunOut(r.id, r.source_id, r.deliveries, r.claimed_at, r.worker_id, r.run_type)
                for r in rq.list_redelivered_runs(conn)
            ]
        return s.WorkersOut(online=sum(w.online for w in workers), workers=workers, redelivered_runs=redelivered)
