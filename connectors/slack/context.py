"""What the Slack client knows about a message's channel and people, for the mapping (built in ``client``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.base import ItemContext


@dataclass(frozen=True, slots=True)
class SlackItemContext(ItemContext):
    # {"id", "name", "is_private", "is_im", "is_mpim", "is_archived", "is_ext_shared"} of the message's channel.
    channel: Mapping[str, Any] | None = None
    team_id: str | None = None
    team_url: str | None = None  # https://acme.slack.com/ for permalinks
    # User id -> {"email", "name"} for the author and every <@U...> in the text.
    users: Mapping[str, Mapping[str, Any]] | None = None
    # Principal ids (email, else user id) of a private channel or DM; None: unknown.
    members: Sequence[str] | None = None
    # Channel id -> name for channels the message mentions (``<#C123>`` without a label, blocks).
    channels: Mapping[str, str] | None = None
    # File id -> text for text and PDF files the client read; file id -> why it stays a link.
    file_texts: Mapping[str, str] | None = None
    file_reasons: Mapping[str, str] | None = None
    # Principal ids (email, else user id) of a public channel's members who are not full workspace
    # members: guests and people of another organisation (Slack Connect); None: unknown.
    outsiders: Sequence[str] | None = None
