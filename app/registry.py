"""Connector packages by connector_type. A new connector is one line here plus its package."""

from __future__ import annotations

import importlib

from connectors.base import ConnectorSpec

_PACKAGES = {
    "jira": "connectors.jira",
    "confluence": "connectors.confluence",
    "slack": "connectors.slack",
}


def known_types() -> list[str]:
    return sorted(_PACKAGES)


def get_spec(connector_type: str) -> ConnectorSpec:
    try:
        module = importlib.import_module(_PACKAGES[connector_type])
    except KeyError:
        raise KeyError(f"unknown connector type {connector_type!r}; known: {', '.join(known_types())}") from None
    spec: ConnectorSpec = module.CONNECTOR
    return spec


def connector_packages() -> list[str]:
    """Every connector package, for a process that imports them once ahead (app.pipeline.source_process)."""
    return list(_PACKAGES.values())
