"""The package's shape (issue 9 §6): explicit CLI commands, no import cycles, the import-linter contracts."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from app.cli import COMMANDS, build_cli
from tools.import_cycles import cycles, strongly_connected

REPO = Path(__file__).resolve().parents[1]


def test_version_prints_the_installed_distribution_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == f"harvester {metadata.version('harvester')}"


def test_every_listed_command_module_registers_its_subcommands() -> None:
    commands = set(build_cli().commands)
    assert commands == {
        "db",
        "serve",
        "token",
        "worker",
        "sources",
        "runs",
        "dlq",
        "settings",
        "sync",
        "search",
        "reembed",
        "demo",
    }
    assert all(callable(module.register) for module in COMMANDS)


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in strongly_connected(sorted(edges), edges) if len(c) > 1] == [["a", "b", "c"]]


def test_app_and_connectors_have_no_import_cycles() -> None:
    assert cycles() == []


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], capture_output=True, text=True, check=False, cwd=REPO)
    assert out.returncode == 0, out.stdout[-2000:]
