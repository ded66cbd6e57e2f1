"""What the Confluence client learns about a page beyond its payload, for the mapping (built in ``client._raw``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.base import ItemContext


@dataclass(frozen=True, slots=True)
class ConfluenceItemContext(ItemContext):
    # The site base (https://x.atlassian.net/wiki) for absolute URLs.
    base_url: str | None = None
    # Who may read the space: {"users": [...], "groups": [...], "anonymous": bool}; None: unknown.
    space_read: Mapping[str, Any] | None = None
    # Read restrictions of the page's ancestors, [{"id", "users", "groups"}]; None: unknown.
    inherited_restrictions: Sequence[Mapping[str, Any]] | None = None
    # Group name -> principal user ids, for groups named in restrictions.
    group_members: Mapping[str, Sequence[str]] | None = None
    # "SPACE/Title" -> page id for <ri:page> links the client resolved.
    page_ids: Mapping[str, str] | None = None
    # Attachment id -> text for text attachments the client downloaded.
    attachment_text: Mapping[str, str] | None = None
    # Attachment id -> why it stays a link (not text or PDF, over the cap, unreadable).
    attachment_reasons: Mapping[str, str] | None = None
    # Cloud group id -> group name, for groups the payload names by id only (``/group/by-id`` look-ups).
    group_names: Mapping[str, str] | None = None
