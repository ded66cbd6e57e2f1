"""CLI: `harvester sync <source> --mode ...` runs one sync in the foreground (issue 3 "Contract").

The run never exists without a job (issue 10): it commits together with a ``run_sync`` job scheduled
:data:`HANDOFF_AFTER` seconds out. While this process runs the run, that job finds it held by a live
worker and does nothing; if this process is killed before it claims the run, or finds the lane busy,
a worker takes the run over. Killed mid-run, the run's heartbeat goes stale and the tick re-defers it.
"""

from __future__ import annotations

import os
import socket

import click

from app.cli.common import Args, add_command, connection_and_keyring
from app.config import load_config
from app.errors import HarvesterError

# Seconds before a worker may take over a run this process started but did not claim.
HANDOFF_AFTER = 60.0


def _sync(args: Args) -> int:
    from app.heap import settle
    from app.pipeline.run import LaneBusy, execute_run, execution_id
    from app.progress import RunProgressBar
    from app.services.jobs import RUN_SYNC, defer_in
    from app.services.sources import resolve_source, start_run
    from app.vector.config import process_stage

    config = load_config()
    conn, keyring = connection_and_keyring()
    with conn:
        options = {"confirm_mass_delete": True} if args.confirm_mass_delete else None
        with conn.transaction():
            source_id = resolve_source(conn, args.source)
            run_id = start_run(conn, source_id, mode=args.mode, trigger="manual", options=options)
            defer_in(conn, RUN_SYNC, schedule_in=HANDOFF_AFTER, run_id=run_id)
        worker_id = execution_id(f"cli:{socket.gethostname()}:{os.getpid()}")
        if config.source_process:
            from app.pipeline.source_process import start_forkserver

            start_forkserver()  # the run's listing in a process of its own (decision 135)
        # Unset, a Confluence run lists apart (decision 153) and starts the forkserver itself (~0.4 s).
        settle()  # start-up is done: its objects leave the collector's walks (decision 92); before the bar
        with RunProgressBar(f"run #{run_id} {args.mode}") as bar:
            try:
                stage = process_stage(config.embedder)
                outcome = execute_run(
                    conn,
                    run_id,
                    worker_id=worker_id,
                    keyring=keyring,
                    chunks=stage,
                    on_progress=bar.update,
                    prefetch=config.pipeline_prefetch,
                    source_process=config.source_process,
                )
            except LaneBusy:
                raise HarvesterError(
                    f"the source's lane is held by another process; run #{run_id} stays queued and a worker "
                    "runs it once the lane is free"
                ) from None
        from app.queries import runs as rq

        run = rq.get_run(conn, id=run_id)
    assert run is not None
    print(
        f"run #{run_id} {run.state}: {run.entities_done or 0} items, {run.error_count} to the DLQ, "
        f"{run.api_calls} API calls, {run.rate_limited} rate-limited"
        + (f", {outcome.deleted} soft-deleted" if outcome.deleted else "")
    )
    if run.error_detail:
        print(f"detail: {run.error_detail}")
    return 0 if run.state == "succeeded" else 1


def register(cli: click.Group) -> None:
    add_command(
        cli,
        "sync",
        _sync,
        click.argument("source"),
        click.option(
            "--mode",
            type=click.Choice(["full", "incremental", "reconciliation"]),
            default="incremental",
            show_default=True,
            help="full (everything), incremental (changed since the cursor) or reconciliation (also soft-deletes "
            "what is gone)",
        ),
        click.option(
            "--confirm-mass-delete", is_flag=True, help="let a reconciliation delete more than the guard share"
        ),
        help="run one sync of SOURCE (name or id) in the foreground with live progress",
    )
