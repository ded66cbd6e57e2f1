"""CLI: `harvester demo` (app/demo.py)."""

from __future__ import annotations

import argparse

from app.commands import REGISTRY


def _demo(args: argparse.Namespace) -> int:
    from app.demo import Sizes, run_demo

    return run_demo(
        serve=args.serve,
        port=args.port,
        sizes=Sizes(issues=args.issues, pages=args.pages, messages=args.messages),
        database=args.database,
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "demo",
        help="embedded PostgreSQL + three emulated sources + full syncs through the worker + example searches",
    )
    d.add_argument("--serve", action="store_true", help="keep the API and the worker running until Ctrl-C")
    d.add_argument("--port", type=int, default=8080, help="API port with --serve (default 8080)")
    d.add_argument("--issues", type=int, default=60, help="Jira issues (default 60)")
    d.add_argument("--pages", type=int, default=40, help="Confluence pages (default 40)")
    d.add_argument("--messages", type=int, default=150, help="Slack top-level messages (default 150)")
    d.add_argument("--database", default="harvester_demo", help="database created afresh for the demo")
    d.set_defaults(handler=_demo)


REGISTRY.append(register)
