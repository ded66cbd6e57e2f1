"""CLI: `harvester token create|list|revoke` manages the admin API's bearer tokens (same rules as /api/v1/tokens)."""

from __future__ import annotations

import click

from app.cli.common import ID, Args, add_command, add_group, json_option, print_json, ready_url_and_keyring
from app.errors import HarvesterError


def _token_create(args: Args) -> int:
    from datetime import UTC, datetime

    from app.db.connect import connect
    from app.services import tokens as ts

    expires_at = datetime.now(UTC) + ts.parse_lifetime(args.expires_in) if args.expires_in else None
    url, _ = ready_url_and_keyring()
    with connect(url) as conn:
        created = ts.create_token(
            conn, name=args.name, scope=args.scope, expires_at=expires_at, principals=args.principal or ()
        )
        conn.commit()
    row = created.row
    until = f", expires {row.expires_at.isoformat(timespec='seconds')}" if row.expires_at else ", never expires"
    print(created.token)
    print(
        f"# token {row.id} {row.name!r} (scope {row.scope}{until}) is shown once; only its SHA-256 is stored",
        flush=True,
    )
    return 0


def _token_list(args: Args) -> int:
    from app.db.connect import connect
    from app.queries import tokens as tq
    from app.services import tokens as ts

    url, _ = ready_url_and_keyring()
    with connect(url) as conn:
        rows = tq.list_tokens(conn)
    if args.as_json:
        from app.api import schemas as s
        from app.api.tokens import token_out

        # GET /tokens' envelope; the CLI lists every token at once, so there is no next page.
        print_json(s.TokenPage(items=[token_out(r) for r in rows], next_cursor=None))
        return 0
    for r in rows:
        used = r.last_used_at.isoformat(timespec="seconds") if r.last_used_at else "never"
        expires = r.expires_at.isoformat(timespec="seconds") if r.expires_at else "never"
        bound = f"  as {','.join(r.principals)}" if r.principals else ""
        print(f"{r.id:>4}  {r.name[:30]:30} {r.scope:6} {ts.state_of(r):8} expires {expires}  last used {used}{bound}")
    return 0


def _token_revoke(args: Args) -> int:
    from app.db.connect import connect
    from app.services import tokens as ts

    token_id: int | None = args.id
    name: str | None = args.name
    if args.token is not None:
        if token_id is not None or name is not None:
            raise HarvesterError("token: give the token as ID|NAME, --id or --name, not several")
        # Digits are an id; a token whose name is all digits is revoked with --name.
        token_id, name = (int(args.token), None) if args.token.isdigit() else (None, args.token)
    if token_id is None and name is None:
        raise HarvesterError("token: give the token's id or name (see `harvester token list`)")
    url, _ = ready_url_and_keyring()
    with connect(url) as conn:
        try:
            row = ts.revoke_token(conn, token_id=token_id, name=name)
        except (ts.TokenNotFound, ts.TokenAlreadyRevoked) as exc:
            raise HarvesterError(str(exc)) from None
        conn.commit()
    print(f"revoked token {row.id} {row.name!r}")
    return 0


def register(cli: click.Group) -> None:
    token = add_group(cli, "token", help="admin API bearer tokens")
    add_command(
        token,
        "create",
        _token_create,
        click.option("--name", required=True, help="who or what uses the token; unique among live tokens"),
        click.option(
            "--scope",
            type=click.Choice(["admin", "read", "search"]),
            default="admin",
            show_default=True,
            help="admin (read/write, search as anyone), read (GET only) or search (search only, as --principal)",
        ),
        click.option(
            "--principal",
            multiple=True,
            metavar="TOKEN",
            help="search scope: whom it may search as, user:<id> (at most one) or group:<connector>:<id>; repeatable",
        ),
        click.option(
            "--expires-in", metavar="DURATION", help="lifetime such as 12h, 30d or 2w (default: never expires)"
        ),
        help="create a token; prints it once (only its SHA-256 is stored)",
    )
    add_command(token, "list", _token_list, json_option, help="token ids, names, scopes, state, expiry and last use")
    add_command(
        token,
        "revoke",
        _token_revoke,
        click.argument("token", required=False, metavar="ID|NAME"),
        click.option("--id", "id", type=ID, help="the token's id (see `harvester token list`)"),
        click.option("--name", help="the live token's name"),
        help="revoke one live token by id or name (ID|NAME: the token's id (digits) or name)",
    )
