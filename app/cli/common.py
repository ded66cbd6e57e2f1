"""What the CLI commands share: the database URL (schema checked, never migrated) and the process keyring.

Only `harvester db migrate` changes the schema (issue 9 §5); every other command checks that the schema is
current and stops with one line if not."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import psycopg

    from app.db.readiness import Process
    from app.secrets import Keyring

Handler = Callable[[argparse.Namespace], int]
# A string: argparse._SubParsersAction is generic only to the type checker.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


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
