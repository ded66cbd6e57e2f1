"""Slack connector: one message per entity, threads as reply_to edges, channel membership as ACL."""

from connectors.base import ConnectorSpec
from connectors.slack.client import create
from connectors.slack.manifest import MANIFEST
from connectors.slack.mapping import map_item
from connectors.slack.webhook import parse_webhook, verify_signature

CONNECTOR = ConnectorSpec(
    manifest=MANIFEST,
    create=create,
    map_item=map_item,
    parse_webhook=parse_webhook,
    verify_webhook=verify_signature,
)

__all__ = ["CONNECTOR"]
