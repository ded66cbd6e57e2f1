"""CLI: `harvester worker` runs Procrastinate jobs (sync runs) and the periodic tasks."""

from __future__ import annotations

import argparse

from app.commands import REGISTRY


def _worker(args: argparse.Namespace) -> int:
    from app.worker import run_worker

    run_worker(concurrency=args.concurrency, periodic=not args.no_periodic)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    w = sub.add_parser("worker", help="run sync jobs and the schedule tick, watchdog and health probe")
    w.add_argument("--concurrency", type=int, default=2, help="runs executed at once (default 2)")
    w.add_argument(
        "--no-periodic", action="store_true", help="run sync jobs only: no schedule tick, probe or watchdog here"
    )
    w.set_defaults(handler=_worker)


REGISTRY.append(register)
