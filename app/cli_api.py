"""CLI: `harvester serve` runs the admin API; `harvester token create|list|revoke` manages its tokens."""

from __future__ import annotations

import argparse

from app.commands import REGISTRY
from app.errors import HarvesterError


def _prepare() -> tuple[str, object]:
    from app.config import load_config
    from app.db.connect import database_url
    from app.db.migrate import migrate
    from app.secrets import load_keyring

    config = load_config()
    url = database_url(config)
    migrate(url, config.backups_dir)
    return url, load_keyring(config)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.api import create_app
    from app.secrets import Keyring

    url, keyring = _prepare()
    assert isinstance(keyring, Keyring)
    app = create_app(url, keyring)
    # access_log off: paths are harmless, but a log line per request is noise at webhook rates.
    # log_config=None: uvicorn's lines go through the process's one handler (app/logs.py, --log-level).
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=args.access_log)
    return 0


def _token_create(args: argparse.Namespace) -> int:
    from app.api.auth import new_token, token_hash
    from app.db.connect import connect
    from app.queries import tokens as tq

    url, _ = _prepare()
    token = new_token()
    with connect(url) as conn:
        try:
            tq.create_token(conn, name=args.name, scope=args.scope, token_hash=token_hash(token))
        except Exception as exc:
            raise HarvesterError(f"could not store the token ({type(exc).__name__})") from None
        conn.commit()
    print(token)
    print(f"# token {args.name!r} (scope {args.scope}) is shown once; only its SHA-256 is stored", flush=True)
    return 0


def _token_list(args: argparse.Namespace) -> int:
    from app.db.connect import connect
    from app.queries import tokens as tq

    url, _ = _prepare()
    with connect(url) as conn:
        rows = tq.list_tokens(conn)
    for r in rows:
        state = "revoked" if r.revoked_at else "active"
        used = r.last_used_at.isoformat(timespec="seconds") if r.last_used_at else "never"
        print(f"{r.id:>4}  {r.name[:30]:30} {r.scope:6} {state:8} last used {used}")
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    from app.db.connect import connect
    from app.queries import tokens as tq

    url, _ = _prepare()
    with connect(url) as conn:
        n = tq.revoke_token(conn, name=args.name)
        conn.commit()
    if n == 0:
        raise HarvesterError(f"no active token named {args.name!r}; see `harvester token list`")
    print(f"revoked {n} token(s) named {args.name!r}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run the admin HTTP API (migrates first)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--access-log", action="store_true", help="log every request line")
    serve.set_defaults(handler=_serve)

    token = sub.add_parser("token", help="admin API bearer tokens")
    tsub = token.add_subparsers(dest="token_command", required=True)
    create = tsub.add_parser("create", help="create a token; prints it once (only its SHA-256 is stored)")
    create.add_argument("--name", required=True, help="who or what uses the token")
    create.add_argument("--scope", choices=["admin", "read"], default="admin", help="admin (read/write) or read")
    create.set_defaults(handler=_token_create)
    tsub.add_parser("list", help="token names, scopes and last use").set_defaults(handler=_token_list)
    revoke = tsub.add_parser("revoke", help="revoke every active token with this name")
    revoke.add_argument("--name", required=True)
    revoke.set_defaults(handler=_token_revoke)


REGISTRY.append(register)
