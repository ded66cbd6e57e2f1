"""CLI: `harvester token create|list|revoke` manages the admin API's bearer tokens."""

from __future__ import annotations

import argparse

from app.cli.common import Subparsers, ready_url_and_keyring
from app.errors import HarvesterError


def _token_create(args: argparse.Namespace) -> int:
    from app.api.auth import new_token, token_hash
    from app.db.connect import connect
    from app.queries import tokens as tq

    url, _ = ready_url_and_keyring()
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

    url, _ = ready_url_and_keyring()
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

    url, _ = ready_url_and_keyring()
    with connect(url) as conn:
        n = tq.revoke_token(conn, name=args.name)
        conn.commit()
    if n == 0:
        raise HarvesterError(f"no active token named {args.name!r}; see `harvester token list`")
    print(f"revoked {n} token(s) named {args.name!r}")
    return 0


def register(sub: Subparsers) -> None:
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
