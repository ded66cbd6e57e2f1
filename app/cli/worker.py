"""CLI: `harvester worker` runs Procrastinate jobs (sync runs) and the periodic tasks."""

from __future__ import annotations

import argparse

from app.cli.common import Subparsers, ready_url


def run_worker(concurrency: int = 2, *, periodic: bool = True) -> None:
    from app.config import load_config
    from app.jobs import ALERTS_QUEUE, PERIODIC_QUEUE, QUEUE, build_app, worker_id

    url = ready_url("worker")  # never migrates: `harvester db migrate` does (issue 9 §5)
    app = build_app(url, tick_cron=load_config().tick_cron)
    # Without the periodic queue the tick's jobs wait (one at most: queueing lock) for a worker that has it.
    queues = [QUEUE, PERIODIC_QUEUE, ALERTS_QUEUE] if periodic else [QUEUE, ALERTS_QUEUE]
    app.run_worker(queues=queues, concurrency=concurrency, name=worker_id())


def _worker(args: argparse.Namespace) -> int:
    run_worker(concurrency=args.concurrency, periodic=not args.no_periodic)
    return 0


def register(sub: Subparsers) -> None:
    w = sub.add_parser("worker", help="run sync jobs and the schedule tick, watchdog and health probe")
    w.add_argument("--concurrency", type=int, default=2, help="runs executed at once (default 2)")
    w.add_argument(
        "--no-periodic", action="store_true", help="run sync jobs only: no schedule tick, probe or watchdog here"
    )
    w.set_defaults(handler=_worker)
