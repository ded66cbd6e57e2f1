"""Registry of CLI subcommands defined next to the code they drive."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

REGISTRY: list[Register] = []


def load_all() -> list[Register]:
    # Imported for their side effect of appending to REGISTRY.
    from app import cli_api, cli_demo, cli_search, cli_sync, cli_worker  # noqa: F401

    return REGISTRY
