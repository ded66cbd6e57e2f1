"""One typed configuration, read once from the environment; a bad value is one line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import Config, ConfigError, EmbedderConfig, load_config
from tests.conftest import REPO


def test_defaults_from_an_empty_environment(tmp_path: Path) -> None:
    config = load_config({"HARVESTER_DATA_DIR": str(tmp_path)})
    # The local embedder keeps its derived graph in the data directory for the next process (decision 148).
    embedder = EmbedderConfig(kind="local", cache_dir=tmp_path.resolve() / "models")
    assert config == Config(data_dir=tmp_path.resolve(), database_url=None, secret_key=None, embedder=embedder)
    assert config.embedder.settings() == {"embedder": "local", "cache_dir": tmp_path.resolve() / "models"}
    assert config.log_level == "INFO" and config.metrics_public is True and config.previous_secret_keys == ()
    assert config.pipeline_prefetch == 3


def test_every_variable_lands_in_a_typed_field(tmp_path: Path) -> None:
    config = load_config(
        {
            "HARVESTER_DATA_DIR": str(tmp_path),
            "HARVESTER_DATABASE_URL": "postgresql://h/db",
            "HARVESTER_SECRET_KEY": "k" * 64,
            "HARVESTER_PREVIOUS_SECRET_KEYS": " a , ,b ",
            "HARVESTER_EMBEDDER": "OpenAI",
            "HARVESTER_EMBEDDER_URL": "http://127.0.0.1:1",
            "HARVESTER_EMBEDDER_MODEL": "m",
            "HARVESTER_EMBEDDER_DIMENSION": "384",
            "HARVESTER_EMBEDDER_BATCH_SIZE": "8",
            "HARVESTER_EMBEDDER_API_KEY": "sk-1",
            "OPENAI_API_KEY": "sk-ignored",
            "HARVESTER_EMBED_THREADS": "2",
            "HARVESTER_METRICS_PUBLIC": "no",
            "HARVESTER_SOURCE_CREDENTIAL": "token",
            "HARVESTER_LOG_LEVEL": "debug",
            "HARVESTER_CORS_ORIGINS": " https://panel.example.com/ ,http://127.0.0.1:3000,, ",
            "HARVESTER_PIPELINE_PREFETCH": "0",
            "HARVESTER_SOURCE_PROCESS": "on",
            "HARVESTER_API_LOCK_WAIT": "3",
        }
    )
    assert config.pipeline_prefetch == 0  # the sequential loop
    assert config.api_lock_wait == 3 and load_config({}).api_lock_wait == 10
    assert config.source_process is True
    # Unset: each connector's manifest decides (decision 153); "off" keeps every listing in the run's process.
    assert load_config({}).source_process is None
    assert load_config({"HARVESTER_SOURCE_PROCESS": "off"}).source_process is False
    assert config.cors_origins == ("https://panel.example.com", "http://127.0.0.1:3000")
    assert config.database_url == "postgresql://h/db" and config.previous_secret_keys == ("a", "b")
    assert config.embedder == EmbedderConfig("openai", "http://127.0.0.1:1", "m", 384, "sk-1", 8, 2)
    assert (config.metrics_public, config.source_credential, config.log_level) == (False, "token", "DEBUG")
    assert "sk-1" not in repr(config) and "token" not in repr(config)  # secrets stay out of logs
    assert load_config({"HARVESTER_EMBEDDER": "off"}).embedder.kind == "none"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HARVESTER_EMBEDDER_DIMENSION": "384d"}, "HARVESTER_EMBEDDER_DIMENSION: not an integer"),
        ({"HARVESTER_EMBEDDER_BATCH_SIZE": "0"}, "HARVESTER_EMBEDDER_BATCH_SIZE: must be 1 or more"),
        ({"HARVESTER_EMBED_THREADS": "two"}, "HARVESTER_EMBED_THREADS: not an integer"),
        ({"HARVESTER_EMBEDDER": "bert"}, "HARVESTER_EMBEDDER: expected one of local, openai, none, off"),
        ({"HARVESTER_EMBEDDER": "openai"}, "HARVESTER_EMBEDDER_URL: required with HARVESTER_EMBEDDER=openai"),
        (
            {"HARVESTER_METRICS_PUBLIC": "maybe"},
            "HARVESTER_METRICS_PUBLIC: expected true or false (1/0, yes/no, on/off)",
        ),
        (
            {"HARVESTER_CORS_ORIGINS": "https://ok.example,panel.example/app"},
            'HARVESTER_CORS_ORIGINS: "panel.example/app" is not an origin (scheme://host[:port], or *)',
        ),
        ({"HARVESTER_PIPELINE_PREFETCH": "-1"}, "HARVESTER_PIPELINE_PREFETCH: must be between 0 and 64"),
        ({"HARVESTER_API_LOCK_WAIT": "0"}, "HARVESTER_API_LOCK_WAIT: must be between 1 and 3600"),
        (
            {"HARVESTER_SOURCE_PROCESS": "fork"},
            "HARVESTER_SOURCE_PROCESS: expected true or false (1/0, yes/no, on/off)",
        ),
        ({"HARVESTER_LOG_LEVEL": "loud"}, "HARVESTER_LOG_LEVEL: expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(env)
    assert str(caught.value) == message


def test_the_cli_refuses_a_bad_variable_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "HARVESTER_DATA_DIR": str(tmp_path), "HARVESTER_EMBEDDER_DIMENSION": "x"}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "status"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "harvester: error: HARVESTER_EMBEDDER_DIMENSION: not an integer\n"
