"""What the CLI commands share: the migrated database URL and the process keyring."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import psycopg

    from app.secrets import Keyring

Handler = Callable[[argparse.Namespace], int]
# A string: argparse._SubParsersAction is generic only to the type checker.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def migrated_url() -> str:
    """The configured database's URL, migrated first (every command but `db` works on a current schema)."""
    from app.config import load_config
    from app.db.connect import database_url
    from app.db.migrate import migrate

    config = load_config()
    url = database_url(config)
    migrate(url, config.backups_dir)
    return url


def migrated_url_and_keyring() -> tuple[str, Keyring]:
    from app.config import load_config
    from app.secrets import load_keyring

    url = migrated_url()
    return url, load_keyring(load_config())


def connection_and_keyring() -> tuple[psycopg.Connection[tuple[object, ...]], Keyring]:
    """A connection to the migrated database (the caller commits) and the keyring."""
    from app.db.connect import connect

    url, keyring = migrated_url_and_keyring()
    return connect(url), keyring
