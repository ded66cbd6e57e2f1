"""CLI: `harvester worker` runs Procrastinate jobs (sync runs) and the periodic tasks."""

from __future__ import annotations

import click

from app.cli.common import POSITIVE, Args, add_command, ready_url


def run_worker(concurrency: int = 2, *, periodic: bool = True, db_wait: float = 300.0) -> int:
    """Run until SIGINT/SIGTERM (0); through database restarts; 3 after ``db_wait`` seconds without one."""
    from app.config import load_config
    from app.heap import settle
    from app.jobs import ALERTS_QUEUE, PERIODIC_QUEUE, QUEUE, build_app, worker_id
    from app.jobs.common import worker_heartbeat
    from app.jobs.supervisor import run_supervised

    heartbeat = worker_heartbeat()
    url = ready_url("worker")  # never migrates: `harvester db migrate` does (issue 9 §5)
    config = load_config()
    app = build_app(url, tick_cron=config.tick_cron, stalled_jobs_cron=config.stalled_jobs_cron)
    # Without the periodic queue the tick's jobs wait (one at most: queueing lock) for a worker that has it.
    queues = [QUEUE, PERIODIC_QUEUE, ALERTS_QUEUE] if periodic else [QUEUE, ALERTS_QUEUE]
    if config.source_process:
        from app.pipeline.source_process import start_forkserver

        start_forkserver()  # each run's listing in a process of its own (decision 135), ready before the first
    # Unset, only some connectors' runs list apart (decision 153): the first of them starts it (~0.4 s, once).
    settle()  # start-up is done: its objects leave the collector's walks (decision 92)
    return run_supervised(
        app,
        url,
        queues=queues,
        concurrency=concurrency,
        name=worker_id(),
        give_up_after=db_wait,
        heartbeat=heartbeat,
    )


def _worker(args: Args) -> int:
    return run_worker(concurrency=args.concurrency, periodic=not args.no_periodic, db_wait=args.db_wait)


def register(cli: click.Group) -> None:
    add_command(
        cli,
        "worker",
        _worker,
        click.option("--concurrency", type=POSITIVE, default=2, show_default=True, help="runs executed at once"),
        click.option(
            "--no-periodic", is_flag=True, help="run sync jobs only: no schedule tick, probe or watchdog here"
        ),
        click.option(
            "--db-wait",
            type=click.FloatRange(min=0),
            default=300.0,
            show_default=True,
            metavar="SECONDS",
            help="how long to wait for an unreachable database before exiting with status 3",
        ),
        help="run sync jobs and the schedule tick, watchdog and health probe",
    )
