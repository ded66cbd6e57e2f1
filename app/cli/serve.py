"""CLI: `harvester serve` runs the admin API."""

from __future__ import annotations

import click

from app.cli.common import Args, add_command, ready_url_and_keyring


def _serve(args: Args) -> int:
    import uvicorn

    from app.api import create_app
    from app.config import load_config
    from app.heap import settle

    config = load_config()
    url, keyring = ready_url_and_keyring("api")
    app = create_app(
        url,
        keyring,
        metrics_public=config.metrics_public,
        embedder=config.embedder,
        cors_origins=config.cors_origins,
        lock_wait_s=config.api_lock_wait,
    )
    settle()  # start-up is done: its objects leave the collector's walks (decision 92)
    # access_log off: paths are harmless, but a log line per request is noise at webhook rates.
    # log_config=None: uvicorn's lines go through the process's one handler (app/logs.py, --log-level).
    # loop/http "auto": uvloop and httptools (declared in pyproject.toml) when installed (issue 15 §2:
    # x1.0-1.35 for our handlers, docs/performance.md API). The flags compare against the pure-Python ones.
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_config=None,
        access_log=args.access_log,
        loop=args.loop,
        http=args.http,
    )
    return 0


def register(cli: click.Group) -> None:
    add_command(
        cli,
        "serve",
        _serve,
        click.option("--host", default="127.0.0.1", show_default=True, help="bind address"),
        click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="port"),
        click.option("--access-log", is_flag=True, help="log every request line"),
        click.option(
            "--loop",
            type=click.Choice(["auto", "uvloop", "asyncio"]),
            default="auto",
            show_default=True,
            help="event loop (auto: uvloop when installed)",
        ),
        click.option(
            "--http",
            type=click.Choice(["auto", "httptools", "h11"]),
            default="auto",
            show_default=True,
            help="HTTP/1.1 parser (auto: httptools when installed)",
        ),
        help="run the admin HTTP API (the schema must be current: `harvester db migrate`)",
    )
