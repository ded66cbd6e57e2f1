"""Process configuration from the environment (brief §5 "Interface contract")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from croniter import croniter

from app.errors import HarvesterError

DEFAULT_TICK_CRON = "* * * * *"  # the schedule tick: every minute (seed 001 intervals are whole minutes)


@dataclass(frozen=True, slots=True)
class Config:
    data_dir: Path
    database_url: str | None  # None: the embedded PostgreSQL in data_dir/pg
    secret_key: str | None  # None in embedded mode: generated once into data_dir/secret.key
    # When the worker's periodic tick runs; croniter syntax, where an optional 6th field, LAST, is
    # seconds: tests tick every 2 s with "* * * * * */2".
    tick_cron: str = DEFAULT_TICK_CRON

    @property
    def backups_dir(self) -> Path:
        return self.data_dir / "backups"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pg"

    @property
    def key_file(self) -> Path:
        return self.data_dir / "secret.key"


def load_config() -> Config:
    data_dir = os.environ.get("HARVESTER_DATA_DIR") or platformdirs.user_data_dir("harvester")
    return Config(
        data_dir=Path(data_dir).expanduser().resolve(),
        database_url=os.environ.get("HARVESTER_DATABASE_URL") or None,
        secret_key=os.environ.get("HARVESTER_SECRET_KEY") or None,
        tick_cron=_cron("HARVESTER_TICK_CRON", DEFAULT_TICK_CRON),
    )


def _cron(name: str, default: str) -> str:
    value = (os.environ.get(name) or "").strip() or default
    if not croniter.is_valid(value):
        raise HarvesterError(f'{name}: "{value}" is not a cron expression (5 fields, or 6 with seconds last)')
    return value
