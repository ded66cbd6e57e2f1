"""What every job module shares: queue names, the worker's identity and the database URL."""

from __future__ import annotations

import os
import socket

from app.config import load_config
from app.db.connect import database_url
from app.services.jobs import PERIODIC_QUEUE, SYNC_QUEUE

QUEUE = SYNC_QUEUE  # runs, webhook runs, the re-embed: work that may take long
ALERTS_QUEUE = "alerts"  # failure notifications: never behind a long run (issue 10 §4)
__all__ = ["ALERTS_QUEUE", "PERIODIC_QUEUE", "QUEUE", "db_url", "worker_id"]


def worker_heartbeat() -> float:
    """Seconds between Procrastinate worker heartbeats (HARVESTER_WORKER_HEARTBEAT, default 10); a worker
    silent for three of them is dead and its jobs are stalled (app/jobs/stalled.py)."""
    return float(load_config().worker_heartbeat)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def db_url() -> str:
    return database_url(load_config())
