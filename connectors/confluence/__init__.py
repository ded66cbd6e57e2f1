"""Confluence connector: pages (Cloud REST v2/v1, Server/DC v1) with inherited page restrictions."""

from connectors.base import ConnectorSpec
from connectors.confluence.client import create
from connectors.confluence.manifest import MANIFEST
from connectors.confluence.mapping import map_item
from connectors.confluence.webhook import parse_webhook, verify_signature

CONNECTOR = ConnectorSpec(
    manifest=MANIFEST,
    create=create,
    map_item=map_item,
    parse_webhook=parse_webhook,
    verify_webhook=verify_signature,
)

__all__ = ["CONNECTOR"]
