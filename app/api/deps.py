"""Dependencies every controller can ask for by name: db, keyring.

Jobs need no dependency: they are deferred on the request's own connection (app.services.jobs)."""

from __future__ import annotations

from dataclasses import dataclass

from litestar.di import Provide

from app.api.db import Database
from app.secrets import Keyring


@dataclass
class Opened:
    """What one app's lifespan opened, for its providers (Litestar copies the ``State`` it is given, so the
    providers cannot close over that); ``None`` outside the lifespan."""

    db: Database | None = None


def dependencies(opened: Opened, keyring: Keyring) -> dict[str, Provide]:
    """The providers of one app: ``opened`` is filled by its lifespan, ``keyring`` the one it was built with.

    ``db`` takes no argument: Litestar parses a provider's arguments through a signature model on every
    request, which for ``state: State`` cost ~4 % of a ``GET runs`` request (py-spy, issue 15 §2); a
    closure over this app's state needs none. ``keyring`` asks for ``db`` only to order the two: Litestar
    resolves dependencies of the same depth concurrently, in an anyio task group with a task each, which
    cost every request two tasks for two attribute reads on the event loop."""

    def db() -> Database:
        if opened.db is None:
            raise RuntimeError("the API's pool is not open (outside the app's lifespan)")
        return opened.db

    def keyring_after(db: Database) -> Keyring:
        return keyring

    return {
        "db": Provide(db, sync_to_thread=False),
        "keyring": Provide(keyring_after, sync_to_thread=False),
    }
