"""Process configuration: every environment variable the product reads, typed, read once here.

``load_config()`` is the only place that reads the environment (brief §5 "Interface contract"); entry
points call it once and pass the :class:`Config` (or the part a helper needs) down. A bad value is one
line naming the variable (``HARVESTER_EMBEDDER_DIMENSION: not an integer``), raised as
:class:`ConfigError` and printed by the CLI without a traceback.

Variables: ``HARVESTER_DATA_DIR``, ``HARVESTER_DATABASE_URL``, ``HARVESTER_SECRET_KEY``,
``HARVESTER_PREVIOUS_SECRET_KEYS`` (comma-separated, for key rotation), ``HARVESTER_EMBEDDER``
(``local`` | ``openai`` | ``none``), ``HARVESTER_EMBEDDER_URL``, ``_MODEL``, ``_DIMENSION``, ``_API_KEY``
(else ``OPENAI_API_KEY``), ``_BATCH_SIZE``, ``HARVESTER_EMBED_THREADS``, ``HARVESTER_METRICS_PUBLIC``,
``HARVESTER_SOURCE_CREDENTIAL`` (default credential of ``harvester sources add``), ``HARVESTER_LOG_LEVEL``,
``HARVESTER_AUDIT_SINK``, ``HARVESTER_CORS_ORIGINS`` (comma-separated origins a browser Admin Panel may call
the API from; unset: none), ``HARVESTER_PIPELINE_PREFETCH`` (pages a run fetches ahead of the one it
loads, 0-64, default 3; 0 is the sequential loop), ``HARVESTER_SOURCE_PROCESS`` (``on``: every whole-source run
with read-ahead lists its source in a child process; ``off``: none does; unset: the full and reconciliation
runs of connectors whose manifest says ``listing_apart``, Confluence's, decisions 153-154).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs
from croniter import croniter

from app.errors import HarvesterError

DEFAULT_TICK_CRON = "* * * * *"  # the schedule tick: every minute (seed 001 intervals are whole minutes)


EmbedderKind = Literal["local", "openai", "none"]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# An origin as a browser sends it: scheme, host, optional port, nothing after (no path, no slash).
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-]+(:\d{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


class ConfigError(HarvesterError):
    """An environment variable has a value the product cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    kind: EmbedderKind = "local"  # none: sync without the vector projection
    url: str | None = None  # openai: the OpenAI-compatible endpoint
    model: str | None = None
    dimension: int | None = None
    api_key: str | None = field(default=None, repr=False)
    batch_size: int | None = None  # None: the embedder's own default
    threads: int | None = None  # local: None = the CPUs this process may use
    # local: where the derived int8 graph is kept for the next process (<data dir>/models, decision 148);
    # None: each process derives it.
    cache_dir: Path | None = None

    def settings(self) -> dict[str, object]:
        """The ``app.embedding.get_embedder`` settings (unset values left out)."""
        values: dict[str, object] = {"embedder": self.kind}
        for name in ("url", "model", "dimension", "api_key", "batch_size", "threads", "cache_dir"):
            value = getattr(self, name)
            if value is not None:
                values[name] = value
        return values


# Seconds an API request's statement waits for another session's lock (HARVESTER_API_LOCK_WAIT, decision 161).
DEFAULT_API_LOCK_WAIT = 10


@dataclass(frozen=True, slots=True)
class Config:
    data_dir: Path
    database_url: str | None  # None: the embedded PostgreSQL in data_dir/pg
    secret_key: str | None = field(repr=False)  # None in embedded mode: generated once into data_dir/secret.key
    previous_secret_keys: tuple[str, ...] = field(default=(), repr=False)  # still decrypt, never encrypt
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    metrics_public: bool = True  # /metrics without a token
    source_credential: str | None = field(default=None, repr=False)
    log_level: str = "INFO"
    # Where admin audit events go (issue 10 §5): stdout, file:/path.jsonl or an http(s):// URL. None
    # (unset): a long-running process writes them to stdout, a one-shot CLI command to
    # <data_dir>/audit.jsonl, so its own output stays what it answers (decision 35).
    audit_sink: str | None = None
    # When the worker's periodic tick runs; croniter syntax, where an optional 6th field, LAST, is
    # seconds: tests tick every 2 s with "* * * * * */2".
    tick_cron: str = DEFAULT_TICK_CRON
    # Browser origins allowed to call the API (CORS, issue 14 item 5); empty: no cross-origin access.
    # "*" allows any origin (tokens are bearer headers, never cookies, so no credentials mode is needed).
    cors_origins: tuple[str, ...] = ()
    worker_heartbeat: int = 10  # seconds between worker heartbeats; silent for 3 = dead (issue 11 §3)
    stalled_jobs_cron: str = "* * * * *"  # when recover_stalled_jobs runs; a 6th field is seconds
    # Pages a run fetches ahead of the page it loads (issue 15 §1); 0: fetch each page after the last commit.
    pipeline_prefetch: int = 3
    # A whole-source run lists its source in a child process (app.pipeline.source_process, decision 135):
    # True every run, False none, None the connectors whose manifest asks for it (decision 153).
    source_process: bool | None = None
    # Hours a job Procrastinate finished stays in its tables before prune_jobs deletes it (issue 15 §5).
    job_retention_hours: int = 168
    # Seconds an API request's statement waits for a lock another session holds before the request answers
    # 503 (decision 161): a DBA's ALTER TABLE or VACUUM FULL must not hold every pooled connection.
    api_lock_wait: int = DEFAULT_API_LOCK_WAIT

    @property
    def backups_dir(self) -> Path:
        return self.data_dir / "backups"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pg"

    @property
    def key_file(self) -> Path:
        return self.data_dir / "secret.key"


def load_config(environ: Mapping[str, str] | None = None) -> Config:
    """The configuration from ``environ`` (default: the process environment). Raises :class:`ConfigError`."""
    env = _Env(os.environ if environ is None else environ)
    data_dir = Path(env.text("HARVESTER_DATA_DIR") or platformdirs.user_data_dir("harvester")).expanduser().resolve()
    return Config(
        data_dir=data_dir,
        database_url=env.text("HARVESTER_DATABASE_URL"),
        secret_key=env.text("HARVESTER_SECRET_KEY"),
        previous_secret_keys=tuple(
            k.strip() for k in (env.text("HARVESTER_PREVIOUS_SECRET_KEYS") or "").split(",") if k.strip()
        ),
        embedder=_embedder(env, data_dir / "models"),
        metrics_public=env.flag("HARVESTER_METRICS_PUBLIC", default=True),
        source_credential=env.text("HARVESTER_SOURCE_CREDENTIAL"),
        log_level=env.choice("HARVESTER_LOG_LEVEL", LOG_LEVELS, default="INFO", upper=True),
        audit_sink=env.text("HARVESTER_AUDIT_SINK"),
        tick_cron=env.cron("HARVESTER_TICK_CRON", DEFAULT_TICK_CRON),
        cors_origins=env.origins("HARVESTER_CORS_ORIGINS"),
        worker_heartbeat=env.positive_int("HARVESTER_WORKER_HEARTBEAT") or 10,
        stalled_jobs_cron=env.cron("HARVESTER_STALLED_JOBS_CRON", DEFAULT_TICK_CRON),
        pipeline_prefetch=env.bounded_int("HARVESTER_PIPELINE_PREFETCH", 0, 64, default=3),
        source_process=env.optional_flag("HARVESTER_SOURCE_PROCESS"),
        job_retention_hours=env.positive_int("HARVESTER_JOB_RETENTION_HOURS") or 168,
        api_lock_wait=env.bounded_int("HARVESTER_API_LOCK_WAIT", 1, 3600, default=DEFAULT_API_LOCK_WAIT),
    )


def _embedder(env: _Env, cache_dir: Path) -> EmbedderConfig:
    kind = env.choice("HARVESTER_EMBEDDER", ("local", "openai", "none", "off"), default="local")
    config = EmbedderConfig(
        kind="none" if kind == "off" else kind,  # type: ignore[arg-type]  # checked by choice()
        url=env.text("HARVESTER_EMBEDDER_URL"),
        model=env.text("HARVESTER_EMBEDDER_MODEL"),
        dimension=env.positive_int("HARVESTER_EMBEDDER_DIMENSION"),
        api_key=env.text("HARVESTER_EMBEDDER_API_KEY") or env.text("OPENAI_API_KEY"),
        batch_size=env.positive_int("HARVESTER_EMBEDDER_BATCH_SIZE"),
        threads=env.positive_int("HARVESTER_EMBED_THREADS"),
        cache_dir=cache_dir if kind == "local" else None,
    )
    if config.kind == "openai":
        for name in ("url", "model", "dimension"):
            if getattr(config, name) is None:
                raise ConfigError(f"HARVESTER_EMBEDDER_{name.upper()}: required with HARVESTER_EMBEDDER=openai")
    return config


class _Env:
    """Typed reads of one environment mapping; an empty value counts as unset."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def text(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def positive_int(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{name}: not an integer") from None
        if number < 1:
            raise ConfigError(f"{name}: must be 1 or more")
        return number

    def bounded_int(self, name: str, low: int, high: int, *, default: int) -> int:
        value = self.text(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{name}: not an integer") from None
        if not low <= number <= high:
            raise ConfigError(f"{name}: must be between {low} and {high}")
        return number

    def flag(self, name: str, *, default: bool) -> bool:
        value = self.text(name)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}: expected true or false (1/0, yes/no, on/off)")

    def optional_flag(self, name: str) -> bool | None:
        """A flag that may be left unset: None then (the caller's own default applies)."""
        return None if self.text(name) is None else self.flag(name, default=False)

    def choice(self, name: str, allowed: tuple[str, ...], *, default: str, upper: bool = False) -> str:
        value = self.text(name)
        if value is None:
            return default
        value = value.upper() if upper else value.lower()
        if value not in allowed:
            raise ConfigError(f"{name}: expected one of {', '.join(allowed)}")
        return value

    def origins(self, name: str) -> tuple[str, ...]:
        values = tuple(v.strip().rstrip("/") for v in (self.text(name) or "").split(",") if v.strip())
        for value in values:
            if value != "*" and not _ORIGIN.match(value):
                raise ConfigError(f'{name}: "{value}" is not an origin (scheme://host[:port], or *)')
        return values

    def cron(self, name: str, default: str) -> str:
        value = self.text(name) or default
        if not croniter.is_valid(value):
            raise ConfigError(f'{name}: "{value}" is not a cron expression (5 fields, or 6 with seconds last)')
        return value
