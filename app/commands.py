"""Registry of CLI subcommands defined next to the code they drive."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

REGISTRY: list[Register] = []
