"""CLI: `harvester serve` runs the admin API."""

from __future__ import annotations

import argparse

from app.cli.common import Subparsers, ready_url_and_keyring


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.api import create_app
    from app.config import load_config

    config = load_config()
    url, keyring = ready_url_and_keyring("api")
    app = create_app(
        url,
        keyring,
        metrics_public=config.metrics_public,
        embedder=config.embedder,
        cors_origins=config.cors_origins,
    )
    # access_log off: paths are harmless, but a log line per request is noise at webhook rates.
    # log_config=None: uvicorn's lines go through the process's one handler (app/logs.py, --log-level).
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=args.access_log)
    return 0


def register(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run the admin HTTP API (the schema must be current: `harvester db migrate`)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--access-log", action="store_true", help="log every request line")
    serve.set_defaults(handler=_serve)
