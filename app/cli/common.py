"""What the CLI commands share: the Click command classes, parameter types that refuse bad input in one
line naming the option, JSON/table output, the database URL (schema checked, never migrated) and the
process keyring.

Only `harvester db migrate` changes the schema (issue 9 §5); every other command checks that the schema is
current and stops with one line if not.

A command's Click callback only parses: it returns an :class:`Invocation` (the handler and its arguments)
and :func:`app.cli.main` runs it after the config check, logging set-up and the audit hook, so parsing
errors, handler errors and interrupts all end in one place (one line, the right exit code).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import click

from app.logs import ENV_LEVEL, LEVELS

if TYPE_CHECKING:
    import psycopg

    from app.db.readiness import Process
    from app.secrets import Keyring

Args = SimpleNamespace
Handler = Callable[[Args], int]

# Where the chosen --log-level is kept (on the root context: a subcommand's option overrides the root's).
LOG_LEVEL_KEY = "harvester.log_level"


@dataclass(frozen=True, slots=True)
class Invocation:
    """A parsed command line: what to run, with what, and the command path (for the audit hook)."""

    handler: Handler
    args: Args
    path: tuple[str, ...]


def _remember_level(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_root().meta[LOG_LEVEL_KEY] = value.lower()


def _log_level_option() -> click.Option:
    return click.Option(
        ["--log-level"],
        type=click.Choice(LEVELS, case_sensitive=False),
        expose_value=False,
        callback=_remember_level,
        help=f"log level of this process (default: ${ENV_LEVEL} or info); JSON lines unless stderr is a terminal",
    )


class Command(click.Command):
    """A leaf command: takes ``--log-level`` like every level of ``harvester``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(_log_level_option())


class Group(click.Group):
    """A command group: its subcommands are :class:`Command` / :class:`Group`; a missing one is a usage error."""

    command_class = Command
    group_class = type  # subgroups are of this class too

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("no_args_is_help", False)
        super().__init__(*args, **kwargs)
        self.params.append(_log_level_option())

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the registration order (COMMANDS), not alphabetical


def invocation(handler: Handler) -> Callable[..., Invocation]:
    """A Click callback that hands the parsed options to ``handler`` later (see the module docstring)."""

    def callback(**params: Any) -> Invocation:
        ctx = click.get_current_context()
        path = tuple(ctx.command_path.split()[1:])  # "harvester sources add" -> ("sources", "add")
        args = Args(**params)
        # The names the audit hook reads (app.audit.command_path): command and <command>_command.
        args.command = path[0] if path else None
        if len(path) > 1:
            setattr(args, f"{path[0]}_command", path[1])
        return Invocation(handler, args, path)

    return callback


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def add_command(group: click.Group, name: str, handler: Handler, *options: Decorator, help: str) -> click.Command:
    """Register ``name`` under ``group``: ``options`` (``click.option``/``click.argument``, in --help order)
    parsed into the arguments of ``handler``."""
    callback: Callable[..., Any] = invocation(handler)
    for option in reversed(options):
        callback = option(callback)
    command: click.Command = group.command(name, help=help)(callback)
    return command


def add_group(group: click.Group, name: str, *, help: str) -> click.Group:
    sub: click.Group = group.group(name, help=help)(lambda: None)
    return sub


# ---------------------------------------------------------------- parameter types


class Timestamp(click.ParamType[datetime]):
    """An ISO 8601 date or time (``2026-11-30``, ``2026-11-30T12:00:00Z``)."""

    name = "ISO-8601"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(
                f"{value!r} is not an ISO 8601 date or time (e.g. 2026-11-30 or 2026-11-30T12:00:00Z)", param, ctx
            )


class JsonObject(click.ParamType[dict[str, Any]]):
    """A JSON object given on the command line."""

    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(str(value))
        except (ValueError, RecursionError):
            self.fail("not valid JSON (give an object such as '{\"comments\": false}')", param, ctx)
        if not isinstance(parsed, dict):
            self.fail("must be a JSON object such as '{\"comments\": false}'", param, ctx)
        return parsed


class JsonValue(click.ParamType[Any]):
    """Any JSON value; a bare word that is not JSON is taken as a string (``settings set time_zone UTC``)."""

    name = "VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value)
        try:
            return json.loads(text)
        except RecursionError:
            self.fail("is nested too deeply", param, ctx)
        except ValueError:
            if text.lstrip()[:1] in ("{", "[", '"'):
                self.fail("not valid JSON", param, ctx)
            return text


class BaseUrl(click.ParamType[str]):
    """An http(s) URL with a host: the base URL of a source's API."""

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from connectors.http import base_url_problem

        problem = base_url_problem(str(value))
        if problem is not None:
            self.fail(f"{value!r} {problem} (e.g. https://example.atlassian.net)", param, ctx)
        return str(value)


def connector_choice() -> click.Choice[str]:
    """The registered connector types (app.registry), as a choice."""
    from app.registry import known_types

    return click.Choice(known_types())


POSITIVE = click.IntRange(min=1)
ID = click.IntRange(min=1, max=2**63 - 1)

json_option = click.option("--json", "as_json", is_flag=True, help="print JSON with the API's field names")


# ---------------------------------------------------------------- output


def print_json(value: Any) -> None:
    """``value`` (API response structs, lists of them, plain data) as the API would render it."""
    import msgspec

    click.echo(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A left-aligned text table; ``-`` for missing values."""
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def print_fields(fields: Mapping[str, Any]) -> None:
    """``name: value`` lines, one per field."""
    width = max((len(k) for k in fields), default=0)
    for k, v in fields.items():
        shown = "-" if v is None else (json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v))
        click.echo(f"{k.ljust(width)}  {shown}")


# ---------------------------------------------------------------- database


def ready_url(process: Process | None = None) -> str:
    """The configured database's URL once its schema is current and the login may do ``process``'s work."""
    from app.config import load_config
    from app.db.connect import database_url
    from app.db.readiness import require_ready

    url = database_url(load_config())
    require_ready(url, process)
    return url


def ready_url_and_keyring(process: Process | None = None) -> tuple[str, Keyring]:
    from app.config import load_config
    from app.secrets import load_keyring

    url = ready_url(process)
    return url, load_keyring(load_config())


def connection_and_keyring() -> tuple[psycopg.Connection[tuple[object, ...]], Keyring]:
    """An autocommit connection to the current-schema database and the keyring: each command declares its
    own transactions (``with conn.transaction():``; execute_run one per page)."""
    from app.db.connect import connect

    url, keyring = ready_url_and_keyring()
    return connect(url, autocommit=True), keyring
