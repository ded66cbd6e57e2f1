"""What the Jira client learns about an issue beyond its payload, for the mapping (built in ``client._emit``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from connectors.base import ItemContext


@dataclass(frozen=True, slots=True)
class JiraItemContext(ItemContext):
    # Who may browse the project (None: unknown, the issue is visible to nobody).
    project_principals: Sequence[str] | None = None
    # Issue fields whose users/groups may also browse (reporter, assignee, customfield_N): holders the
    # scheme names per issue (connectors.jira.permissions), read by the mapping from the payload.
    project_fields: Sequence[str] = ()
    # Members of the security level; read only when the issue has one (None: unknown).
    security_principals: Sequence[str] | None = None
    security_fields: Sequence[str] = ()
    # The client could not learn the rights: the ACL fails closed (kept for diagnostics).
    acl_unknown: bool = False
    # Fetched one hop outside the scope (seed 003 neighbour).
    neighbour: bool = False
    # Logical field name -> this site's field id (epic_link, sprint...); None: the mapping's defaults.
    field_map: Mapping[str, str] | None = None
    # Issue key -> id for keys the payload names but does not resolve (an epic link).
    key_ids: Mapping[str, str] | None = None
    archived: bool = False
    # Attachment id -> text for text attachments the client downloaded.
    attachment_texts: Mapping[str, str] | None = None
    # Attachment id -> why it stays a link (not text or PDF, over the cap, unreadable).
    attachment_reasons: Mapping[str, str] | None = None
    # Keys the issue had before a move.
    previous_keys: Sequence[str] = ()
