"""What every job module shares: queue names, the worker's identity and the database URL."""

from __future__ import annotations

import os
import socket

from app.config import load_config
from app.db.connect import database_url

QUEUE = "sync"  # runs, webhook runs, the re-embed: work that may take long
PERIODIC_QUEUE = "periodic"  # the minute tick and the 10-minute checks; kept apart so long runs never delay them


def worker_heartbeat() -> float:
    """Seconds between Procrastinate worker heartbeats (HARVESTER_WORKER_HEARTBEAT, default 10); a worker
    silent for three of them is dead and its jobs are stalled (app/jobs/stalled.py)."""
    return float(load_config().worker_heartbeat)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def db_url() -> str:
    return database_url(load_config())
