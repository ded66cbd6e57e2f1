"""CLI: `harvester settings get|set` (seed 001 schedule defaults, seed 003 "Настройки").

The same rules as ``PUT /settings``: an invalid value is one line naming the key, nothing is written and
the version stays. ``--json`` prints what ``GET /settings`` answers.
"""

from __future__ import annotations

import json
from typing import Any

import click

from app.cli.common import Args, JsonValue, add_command, add_group, connection_and_keyring, json_option, print_json
from app.errors import HarvesterError


def _view(version: int, values: dict[str, Any]) -> Any:
    """``GET /settings``'s answer."""
    import msgspec

    from app.api import schemas as s

    return s.SettingsOut(version=version, values=msgspec.convert(values, s.SettingsValues))


def _settings_get(args: Args) -> int:
    import msgspec

    from app.services.settings import read_settings

    conn, _ = connection_and_keyring()
    with conn:
        out = _view(*read_settings(conn))
    values = msgspec.to_builtins(out.values)
    if args.key is not None:
        if args.key not in values:
            raise HarvesterError(f"KEY: unknown setting {args.key!r}; known: {', '.join(sorted(values))}")
        if args.as_json:
            print_json({args.key: values[args.key]})
        else:
            value = values[args.key]
            print(value if isinstance(value, str) else json.dumps(value))
        return 0
    if args.as_json:
        print_json(out)
        return 0
    print(f"version  {out.version}")
    width = max(len(k) for k in values)
    for key, value in values.items():
        print(f"{key.ljust(width)}  {value if isinstance(value, str) else json.dumps(value)}")
    return 0


def _settings_set(args: Args) -> int:
    from app.services.settings import SettingsConflict, update_settings

    conn, keyring = connection_and_keyring()
    with conn:
        try:
            with conn.transaction():
                version, values = update_settings(
                    conn, {args.key: args.value}, expected_version=args.version, keyring=keyring
                )
        except SettingsConflict as exc:
            raise HarvesterError(
                f"--version: settings changed meanwhile; the current version is {exc.current}"
            ) from None
    out = _view(version, values)
    if args.as_json:
        print_json(out)
    else:
        print(f"{args.key} set; settings version {out.version}")
    return 0


def register(cli: click.Group) -> None:
    settings = add_group(cli, "settings", help="platform settings (schedule defaults, alerts, time zone)")
    add_command(
        settings,
        "get",
        _settings_get,
        click.argument("key", required=False, metavar="[KEY]"),
        json_option,
        help="every setting and the version, or the value of KEY",
    )
    add_command(
        settings,
        "set",
        _settings_set,
        click.argument("key", metavar="KEY"),
        click.argument("value", type=JsonValue(), metavar="VALUE"),
        click.option("--version", type=click.IntRange(min=0), help="refuse unless the settings are at this version"),
        json_option,
        help='set KEY to VALUE (JSON: 900, 0.2, true, \'{"day": "sunday", "time": "03:00"}\'; a bare word is a string)',
    )
