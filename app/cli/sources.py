"""CLI: `harvester sources add|list|show|update|remove|test` (issue 3 "Contract", issue 14 §6).

``--json`` prints what the API answers (the same view functions build both, so field names cannot drift).
``sources add`` tests the connection before saving (``--no-check`` skips): the credential is refused,
the source does not answer, or an allow-listed scope unit is not visible -- each said in one line.
"""

from __future__ import annotations

from typing import Any

import click

from app.cli.common import (
    Args,
    BaseUrl,
    JsonObject,
    add_command,
    add_group,
    connection_and_keyring,
    connector_choice,
    json_option,
    print_fields,
    print_json,
    print_table,
)
from app.config import load_config
from app.errors import HarvesterError

# Service field names -> the option that sets them, so an error names what the user typed.
_OPTIONS = {
    "name": "--name",
    "connector_type": "--connector",
    "base_url": "--base-url",
    "credential": "--credential",
    "webhook_secret": "--webhook-secret",
    "scope_list": "--scope",
    "scope_mode": "--scope-mode",
    "content_filters": "--filters",
    "auth_method": "--auth-method",
    "state": "--state",
    "authority_tier": "--authority-tier",
}


def _as_option(exc: HarvesterError) -> HarvesterError:
    """An ``InvalidField`` from the service layer, re-worded with the option's name."""
    from app.services.sources import InvalidField

    if not isinstance(exc, InvalidField):
        return exc
    head = exc.field.split(".")[0].split("[")[0]
    option = _OPTIONS.get(head)
    if option is None:
        return exc
    rest = exc.field[len(head) :].lstrip(".")
    return HarvesterError(f"{option}{' ' + rest if rest else ''}: {exc.message}")


def _credential(args: Args) -> str | None:
    from app.services.sources import credential_problem

    credential: str | None = args.credential or load_config().source_credential
    problem = credential_problem(credential)
    if problem is not None:
        where = "--credential" if args.credential else "HARVESTER_SOURCE_CREDENTIAL"
        raise HarvesterError(f"{where}: {problem}")
    return credential


def _sources_add(args: Args) -> int:
    from app.services.connection_test import REASON_TEXT, DraftSource, check_connection
    from app.services.sources import InvalidField, NewSource, create_source, validate_against_manifest

    credential = _credential(args)
    scope_list: list[Any] = list(args.scope)
    filters: dict[str, Any] = args.filters or {}
    try:
        validate_against_manifest(args.connector, scope_list, filters, args.auth_method)
    except InvalidField as exc:
        raise _as_option(exc) from None
    scope_mode = "selected" if scope_list else "all"
    if not args.no_check:
        result = check_connection(
            DraftSource(args.connector, args.base_url, credential, scope_mode, scope_list, filters)
        )
        if not result.ok:
            raise HarvesterError(
                f"connection test failed: {REASON_TEXT[result.reason]}: {result.detail}; nothing saved "
                "(fix it, or save anyway with --no-check)"
            )
    conn, keyring = connection_and_keyring()
    with conn, conn.transaction():
        try:
            source_id = create_source(
                conn,
                keyring,
                NewSource(
                    name=args.name,
                    connector_type=args.connector,
                    base_url=args.base_url,
                    credential=credential,
                    webhook_secret=args.webhook_secret,
                    scope_mode=scope_mode,
                    scope_list=scope_list,
                    content_filters=filters,
                    auth_method=args.auth_method,
                    webhook_enabled=bool(args.webhook_secret),
                ),
            )
        except InvalidField as exc:
            raise _as_option(exc) from None
    print(source_id)
    return 0


def _details(source: str | None) -> tuple[list[Any], Any]:
    """The sources' API views (all, or the one named/numbered ``source``) and the rows they came from."""
    from app.api.views import schedules, source_out
    from app.queries import sources as sq
    from app.services.sources import resolve_source

    conn, keyring = connection_and_keyring()
    with conn:
        source_id = resolve_source(conn, source) if source is not None else None
        rows = sq.list_source_details(conn, id=source_id)
        schedule_of = schedules(conn)
    return [source_out(keyring, r, schedule_of) for r in rows], rows


def _sources_list(args: Args) -> int:
    from app.api import schemas as s

    views, _ = _details(None)
    if args.as_json:
        # GET /sources' envelope; the CLI lists every source at once, so there is no next page.
        print_json(s.SourcePage(items=views, next_cursor=None))
        return 0
    print_table(
        ("id", "name", "connector", "state", "health", "entities", "dlq", "last run"),
        (
            (
                v.id,
                v.name[:24],
                v.connector_type,
                v.state,
                v.health,
                v.entity_count,
                v.dlq_depth,
                f"#{v.last_run.id} {v.last_run.state}" if v.last_run else None,
            )
            for v in views
        ),
    )
    return 0


def _show(view: Any) -> None:
    import msgspec

    fields = msgspec.to_builtins(view)
    for secret in ("credential", "webhook_secret"):
        mask = fields[secret]
        fields[secret] = (mask.get("mask") or "set") if mask.get("set") else None
    print_fields(fields)


def _sources_show(args: Args) -> int:
    views, _ = _details(args.source)
    if args.as_json:
        print_json(views[0])
    else:
        _show(views[0])
    return 0


def _sources_update(args: Args) -> int:
    from app.services.sources import InvalidField, resolve_source, update_source

    changes: dict[str, Any] = {}
    for key in ("name", "base_url", "webhook_secret", "scope_mode", "state", "auth_method", "authority_tier"):
        value = getattr(args, key)
        if value is not None:
            changes[key] = value
    if args.credential is not None:
        changes["credential"] = _credential(args)
    if args.scope:
        changes["scope_list"] = list(args.scope)
    if args.clear_scope:
        changes["scope_list"] = []
    if args.filters is not None:
        changes["content_filters"] = args.filters
    if args.webhook_secret is not None:
        changes["webhook_enabled"] = bool(args.webhook_secret)
    if not changes:
        raise HarvesterError("nothing to change: give at least one option (see 'harvester sources update --help')")
    conn, keyring = connection_and_keyring()
    with conn, conn.transaction():
        source_id = resolve_source(conn, args.source)
        try:
            update_source(conn, keyring, source_id, changes)
        except InvalidField as exc:
            raise _as_option(exc) from None
    views, _ = _details(str(source_id))
    if args.as_json:
        print_json(views[0])
    else:
        print(f"source {source_id} updated")
    return 0


def _sources_remove(args: Args) -> int:
    from app.queries import runs as rq
    from app.queries import sources as sq
    from app.services.sources import resolve_source

    if not args.yes:
        raise HarvesterError(
            f"--yes: removing {args.source!r} deletes its runs, dead letters, notes and entities; give --yes to confirm"
        )
    conn, _ = connection_and_keyring()
    with conn, conn.transaction():
        source_id = resolve_source(conn, args.source)
        sq.lock_source(conn, id=source_id)
        active = rq.get_active_run(conn, source_id=source_id)
        if active is not None:
            raise HarvesterError(
                f"source {source_id} has an active run (#{active}); cancel it first: harvester runs cancel {active}"
            )
        sq.delete_source(conn, id=source_id)
    print(f"source {source_id} removed")
    return 0


def _sources_test(args: Args) -> int:
    from app.queries import sources as sq
    from app.services.connection_test import REASON_TEXT, DraftSource, check_connection
    from app.services.connectors import source_config
    from app.services.sources import resolve_source

    conn, keyring = connection_and_keyring()
    with conn:
        source_id = resolve_source(conn, args.source)
        row = sq.get_source(conn, id=source_id)
    assert row is not None
    config = source_config(row, keyring)
    result = check_connection(
        DraftSource(
            row.connector_type,
            config.base_url,
            config.credential,
            config.scope_mode,
            config.scope_list,
            config.content_filters,
        )
    )
    if args.as_json:
        from app.api.connection_test import ConnectionTestOut

        print_json(ConnectionTestOut(ok=result.ok, reason=result.reason, detail=result.detail))
    else:
        print(f"source {source_id}: {REASON_TEXT[result.reason]}: {result.detail}")
    return 0 if result.ok else 1


def _source_options(*, adding: bool) -> list[Any]:
    """The options ``add`` and ``update`` share (``add`` requires some)."""
    return [
        click.option("--name", required=adding, help="unique name of the source"),
        click.option("--base-url", type=BaseUrl(), required=adding, help="the source's API base URL (http or https)"),
        click.option("--credential", help="API token (or set HARVESTER_SOURCE_CREDENTIAL); stored encrypted"),
        click.option("--webhook-secret", help="HMAC secret for webhooks; stored encrypted"),
        click.option(
            "--scope",
            multiple=True,
            help="allow-listed scope item (project key, JQL, space, channel); repeatable"
            + ("" if adding else "; replaces the stored list"),
        ),
        click.option(
            "--auth-method",
            type=click.Choice(["static_token", "oauth"]),
            default="static_token" if adding else None,
            show_default=adding,
            help="only what the connector's manifest lists",
        ),
        click.option("--filters", type=JsonObject(), help="content filters as JSON, e.g. '{\"comments\": false}'"),
    ]


def register(cli: click.Group) -> None:
    sources = add_group(cli, "sources", help="register, inspect, change, test and remove sources")
    add_command(
        sources,
        "add",
        _sources_add,
        click.option("--connector", type=connector_choice(), required=True, help="the connector type"),
        *_source_options(adding=True),
        click.option("--no-check", is_flag=True, help="save without testing the connection first"),
        help="test the connection, then register the source; prints its id",
    )
    add_command(
        sources,
        "list",
        _sources_list,
        json_option,
        help="sources with health, entity count, DLQ depth, last run",
    )
    source_arg = click.argument("source", metavar="SOURCE")
    add_command(sources, "show", _sources_show, source_arg, json_option, help="one source (SOURCE: name or id)")
    add_command(
        sources,
        "update",
        _sources_update,
        source_arg,
        *_source_options(adding=False),
        click.option("--clear-scope", is_flag=True, help="empty the scope list"),
        click.option("--scope-mode", type=click.Choice(["all", "selected"]), help="allow-list or deny-list"),
        click.option("--state", type=click.Choice(["active", "paused", "disconnected"]), help="the source's state"),
        click.option("--authority-tier", type=click.Choice(["low", "normal", "high"]), help="authority tier"),
        json_option,
        help="change some fields of SOURCE (name or id); the rest stay",
    )
    add_command(
        sources,
        "remove",
        _sources_remove,
        source_arg,
        click.option("--yes", is_flag=True, help="confirm: the source's runs, dead letters and entities go too"),
        help="delete SOURCE (name or id) with everything it loaded; refused while a run is active",
    )
    add_command(
        sources,
        "test",
        _sources_test,
        source_arg,
        json_option,
        help="test SOURCE's connection: ok, auth failed, unreachable or scope not visible (exit 1 unless ok)",
    )
