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


def _keyring(state: State) -> Keyring:
    keyring: Keyring = state.keyring
    return keyring


DEPENDENCIES = {
    "db": Provide(_db, sync_to_thread=False),
    "keyring": Provide(_keyring, sync_to_thread=False),
}
