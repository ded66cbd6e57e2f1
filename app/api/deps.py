"""Dependencies every controller can ask for by name: db, keyring.

Jobs need no dependency: they are deferred on the request's own connection (app.services.jobs)."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import Provide

from app.api.db import Database
from app.secrets import Keyring


def _db(state: State) -> Database:
    db: Database = state.db
    return db


def _keyring(state: State, db: Database) -> Keyring:
    # ``db`` is asked for only to order the two: Litestar resolves dependencies of the same depth
    # concurrently, in an anyio task group with a task each, which cost every request two tasks for two
    # attribute reads on the event loop (py-spy, issue 15 §2). One after the other there is no task group.
    keyring: Keyring = state.keyring
    return keyring


DEPENDENCIES = {
    "db": Provide(_db, sync_to_thread=False),
    "keyring": Provide(_keyring, sync_to_thread=False),
}
