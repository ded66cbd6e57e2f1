"""Jira connector (Cloud REST v3 and Server/Data Center REST v2); see client.py and mapping.py."""

from __future__ import annotations

from connectors.base import ConnectorSpec
from connectors.jira.client import create
from connectors.jira.manifest import MANIFEST
from connectors.jira.mapping import map_item
from connectors.jira.webhook import parse_webhook, verify_signature

CONNECTOR = ConnectorSpec(
    manifest=MANIFEST,
    create=create,
    map_item=map_item,
    parse_webhook=parse_webhook,
    verify_webhook=verify_signature,
)

__all__ = ["CONNECTOR"]
