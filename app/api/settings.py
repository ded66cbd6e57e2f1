"""Platform settings (seed 001 "Расписание", seed 003 "Настройки"): read, and validated all-or-nothing update."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, get, put

from app.api import schemas as s
from app.api.db import Database
from app.api.problems import ProblemError, problem_responses
from app.secrets import Keyring
from app.services.settings import SettingsConflict, read_settings, update_settings

R = problem_responses


def _out(version: int, values: dict[str, Any]) -> s.SettingsOut:
    return s.SettingsOut(version=version, values=msgspec.convert(values, s.SettingsValues))


class SettingsController(Controller):
    path = "/settings"
    tags = ("settings",)

    @get("/", operation_id="getSettings", sync_to_thread=True, responses=R(401))
    def get_settings(self, db: Database) -> s.SettingsOut:
        """Platform defaults and their version (every changed value raises it)."""
        with db.tx() as conn:
            return _out(*read_settings(conn))

    @put("/", operation_id="putSettings", sync_to_thread=True, responses=R(400, 401, 403, 409, 413, 415, 422))
    def put_settings(self, data: s.SettingsUpdate, db: Database, keyring: Keyring) -> s.SettingsOut:
        """Change the given keys. One invalid value -> 422 naming it; nothing written, version unchanged."""
        raw = {k: v for k, v in msgspec.structs.asdict(data).items() if v is not msgspec.UNSET}
        expected = raw.pop("version", None)
        if isinstance(raw.get("reconcile_window"), s.WindowIn):
            raw["reconcile_window"] = msgspec.structs.asdict(raw["reconcile_window"])
        if "alert_channels" in raw:
            raw["alert_channels"] = msgspec.to_builtins(raw["alert_channels"])
        with db.tx() as conn:
            try:
                return _out(*update_settings(conn, raw, expected_version=expected, keyring=keyring))
            except SettingsConflict as exc:
                raise ProblemError(
                    409,
                    "settings-version",
                    f"settings changed meanwhile; the current version is {exc.current}",
                    field="version",
                ) from None
