"""Confluence page (v1 ``content`` JSON, expanded) -> :class:`Entity`. Pure; tested on real payloads.

The payload is ``GET /rest/api/content/{id}?expand=body.storage,ancestors,version,history,space,
metadata.labels,restrictions.read.restrictions.user,restrictions.read.restrictions.group,
children.comment.body.storage,children.comment.history,children.attachment`` as the client fetched it.
What the payload cannot carry, the client puts in ``RawItem.context`` (a :class:`ConfluenceItemContext`):

- ``base_url``: the site base (``https://x.atlassian.net/wiki``) for absolute URLs;
- ``space_read``: who may read the space, ``{"users": [...], "groups": [...], "anonymous": bool}``,
  or absent/None when the client could not learn it;
- ``inherited_restrictions``: read restrictions of the page's ancestors,
  ``[{"id", "users", "groups"}]`` (unrestricted ancestors may be omitted), or None when unknown;
- ``group_members``: ``{group name: [principal user ids]}`` for groups named in restrictions (optional);
- ``page_ids``: ``{"SPACE/Title": "123"}`` for ``<ri:page>`` links the client resolved;
- ``attachment_text``: ``{attachment id: text}`` for text and PDF attachments the client read (optional);
  ``attachment_reasons``: ``{attachment id: why it stays a link}`` (kept as ``text_skipped``).

ACL (seed 000 rights, fail closed): a user sees a page when the space lets them read it *and* every
restricted page on the path root -> page (the page itself included) names them, directly or through a
group. A restricted parent therefore hides its children. Principals: ``user:<email>`` (account id
when the email is hidden), ``group:confluence:<name>`` (issue 13 §1: a Cloud group named by id only is
named through the client's look-up; one nobody could name is ``group:confluence:id:<group id>``).
Anything unknown -> ``Acl(None)``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from connectors.atlassian import user_identity
from connectors.base import Acl, Edge, Entity, EntityStatus, MalformedPayload, RawItem, Ref
from connectors.confluence.context import ConfluenceItemContext
from connectors.confluence.storage import storage_to_text
from connectors.payload import JSON_OBJECT
from connectors.payload import dig as _get
from connectors.payload import results as _results
from connectors.refs import dedup, extract_refs
from connectors.timeutil import parse_time

_STATUS: dict[str, EntityStatus] = {
    "current": "final",
    "draft": "draft",
    "archived": "archived",
    "historical": "archived",
}
_URL_RE = re.compile(r"https?://[^\s<>\"'|\])]+")
_PAGE_URL_RE = re.compile(r"/spaces/[^/]+/pages/(\d+)|/pages/viewpage\.action\?(?:[^#]*&)?pageId=(\d+)")

Level = tuple[frozenset[str], frozenset[str]]  # (user principals, group names)


def map_item(raw: RawItem) -> Entity:
    p = raw.payload
    # Another connector's context (or none) carries no Confluence facts: the ACL then fails closed.
    ctx = raw.context if isinstance(raw.context, ConfluenceItemContext) else ConfluenceItemContext()
    page_id = _str(p.get("id"))
    title = p.get("title")
    if not page_id or not isinstance(title, str):
        raise MalformedPayload("confluence page needs a string 'id' and 'title'")
    for key, kind in (("body", JSON_OBJECT), ("ancestors", list), ("version", JSON_OBJECT), ("space", JSON_OBJECT)):
        if p.get(key) is not None and not isinstance(p.get(key), kind):
            raise MalformedPayload(f"confluence page {page_id}: '{key}' has the wrong type")
    try:
        return _map(p, ctx, page_id, title, raw.container)
    except (AttributeError, TypeError, KeyError) as exc:
        raise MalformedPayload(f"confluence page {page_id}: unexpected shape: {exc}") from exc


def _map(p: Mapping[str, Any], ctx: ConfluenceItemContext, page_id: str, title: str, container: str | None) -> Entity:
    space = p.get("space") or {}
    space_key = _str(space.get("key")) or container
    base = _str(_get(p, "_links", "base")) or _str(ctx.base_url)
    history = p.get("history") or {}
    version = p.get("version") or {}

    body = storage_to_text(_str(_get(p, "body", "storage", "value")) or "")
    sections = [body.text] if body.text else []
    texts_for_refs = [body.text, " ".join(body.urls)]

    comments = []
    for c in _results(_get(p, "children", "comment")):
        parsed = storage_to_text(_str(_get(c, "body", "storage", "value")) or "")
        who = _user_id(_get(c, "history", "createdBy")) or _user_id(_get(c, "version", "by")) or "unknown"
        when = _str(_get(c, "history", "createdDate")) or _str(_get(c, "version", "when")) or ""
        if parsed.text:
            sections.append(f"Comment by {who} {when}:\n{parsed.text}".replace("  ", " "))
            texts_for_refs += [parsed.text, " ".join(parsed.urls)]
        comments.append(
            {
                "id": _str(c.get("id")),
                "author": who,
                "created": when or None,
                "title": _str(c.get("title")),
                "location": _str(_get(c, "extensions", "location")),
                "url": _abs(base, _str(_get(c, "_links", "webui"))),
            }
        )

    attachments = []
    att_text: Mapping[str, str] = ctx.attachment_text or {}
    att_reasons: Mapping[str, str] = ctx.attachment_reasons or {}
    for a in _results(_get(p, "children", "attachment")):
        aid = _str(a.get("id")) or ""
        media = _str(_get(a, "metadata", "mediaType")) or _str(_get(a, "extensions", "mediaType"))
        download = _str(_get(a, "_links", "download"))
        entry: dict[str, Any] = {
            "id": aid,
            "title": _str(a.get("title")),
            "media_type": media,
            "size": _get(a, "extensions", "fileSize"),
            "url": _abs(base, download),
            "comment": _str(_get(a, "extensions", "comment")) or None,
            "file_id": _str(_get(a, "extensions", "fileId")),
            "kind": _str(_get(a, "extensions", "mediaTypeDescription")),
            "preview_url": _abs(base, _str(_get(a, "_links", "webui"))),
        }
        if aid in att_text and att_text[aid].strip():
            entry["inline"] = True
            sections.append(f"Attachment {a.get('title')}:\n{att_text[aid].strip()}")
        elif _str(att_reasons.get(aid)):
            entry["text_skipped"] = att_reasons[aid]
        attachments.append(entry)

    urls = list(dict.fromkeys([*body.urls, *_URL_RE.findall("\n".join(texts_for_refs))]))
    edges, link_refs = _edges(p, ctx, body.page_links, urls, space_key, base)
    refs = list(link_refs)
    refs += extract_refs("\n\n".join(texts_for_refs), exclude_hints={"confluence"}, mention_hint="confluence")
    refs += [Ref("mentions", "issue", k, "jira") for k in body.jira_keys]
    refs += [Ref("mentions", "user", "@" + u, "confluence") for u in body.users]

    labels = [_str(lab.get("name")) for lab in _results(_get(p, "metadata", "labels")) if _str(lab.get("name"))]
    ancestors = [a for a in (p.get("ancestors") or []) if isinstance(a, JSON_OBJECT)]
    status_raw = _str(p.get("status")) or "current"
    metadata: dict[str, Any] = {
        "space_key": space_key,
        "space_name": _str(space.get("name")),
        "space_id": _str(space.get("id")),
        "space_type": _str(space.get("type")),
        "author_account_id": _str(_get(history, "createdBy", "accountId")),
        "api_url": _str(_get(p, "_links", "self")),
        "edit_url": _abs(base, _str(_get(p, "_links", "editui"))),
        "content_type": _str(p.get("type")),
        "status_raw": status_raw,
        "version": version.get("number"),
        "version_message": _str(version.get("message")) or None,
        "minor_edit": version.get("minorEdit"),
        "last_editor": _user_id(version.get("by")),
        # Mentioned people as ACL-style tokens (issue 13, item 2): Cloud ``ri:account-id`` is the same
        # Atlassian account Jira's ``[~accountid:…]`` names; Server user keys stay as they are.
        "mentions": sorted({_mention_token(u) for u in body.users}),
        "labels": labels,
        "ancestors": [_str(a.get("id")) for a in ancestors],
        "ancestor_titles": [_str(a.get("title")) for a in ancestors],
        "attachments": attachments,
        "comments": comments,
        "tiny_url": _abs(base, _str(_get(p, "_links", "tinyui"))),
        "position": _get(p, "extensions", "position"),
    }
    return Entity(
        source_type="page",
        source_entity_id=page_id,
        status=_STATUS.get(status_raw, "final"),
        title=title,
        text="\n\n".join(sections),
        url=_abs(base, _str(_get(p, "_links", "webui"))),
        author=_user_id(history.get("createdBy")) or _user_id(version.get("by")),
        created_at=parse_time(history.get("createdDate")),
        updated_at=parse_time(version.get("when")) or parse_time(_get(history, "lastUpdated", "when")),
        acl=effective_acl(p, ctx),
        metadata={k: v for k, v in metadata.items() if v not in (None, [], "")},
        natural_key=page_id,
        container=space_key,
        edges=tuple(dict.fromkeys(edges)),
        refs=dedup(refs),
        sections=tuple(sections),
    )


# ---------------------------------------------------------------- edges


def _edges(
    p: Mapping[str, Any],
    ctx: ConfluenceItemContext,
    page_links: list[tuple[str | None, str]],
    urls: list[str],
    space_key: str | None,
    base: str | None,
) -> tuple[list[Edge], list[Ref]]:
    edges: list[Edge] = []
    refs: list[Ref] = []
    ancestors = [a for a in (p.get("ancestors") or []) if isinstance(a, JSON_OBJECT)]
    if ancestors and _str(ancestors[-1].get("id")):
        parent = ancestors[-1]
        edges.append(Edge("parent", "page", _str(parent.get("id")) or "", _str(parent.get("title")) or None))
    page_ids: Mapping[str, str] = ctx.page_ids or {}
    for link_space, link_title in page_links:
        key = f"{link_space or space_key}/{link_title}"
        target = page_ids.get(key)
        if target:
            edges.append(Edge("links_to", "page", str(target), link_title))
        else:
            # A title the client could not resolve stays a claim until the title resolves.
            refs.append(Ref("links_to", "page", key, "confluence"))
    own_host = urlsplit(base).netloc if base else None
    for url in urls:
        m = _PAGE_URL_RE.search(url)
        if m is None:
            continue
        host = urlsplit(url).netloc
        target = m.group(1) or m.group(2)
        if not host or host == own_host:
            edges.append(Edge("links_to", "page", target))
        else:
            refs.append(Ref("mentions", "page", target, "confluence"))
    return edges, refs


# ---------------------------------------------------------------- ACL


def effective_acl(p: Mapping[str, Any], ctx: ConfluenceItemContext) -> Acl:
    """Space read permission intersected with every restricted level on the page's path.

    Every page of a space carries the same space permission, and every page under a restricted ancestor the
    same restriction and group members; each can name thousands of people. The ACL is therefore worked out
    once per distinct set of them (``_path_acl``) and found again by value: hashing the shared tuples is
    O(people) in C, where building the ACL anew cost 1.8 ms a page with 5,000 people in the space and 7.6 ms
    under a group of 5,000 (``bench/acl_growth.py``, decision 125)."""
    space = ctx.space_read
    inherited = ctx.inherited_restrictions
    own = _own_restriction(p, ctx.group_names)
    if not isinstance(space, JSON_OBJECT) or inherited is None or own is None:
        return Acl(None)
    args = (
        _tuple(space.get("users")),
        _tuple(space.get("groups")),
        bool(space.get("anonymous")),
        tuple((_tuple(r.get("users")), _tuple(r.get("groups"))) for r in [*inherited, own]),
        tuple((g, _tuple(m)) for g, m in (ctx.group_members or {}).items()),
    )
    try:
        return Acl(_path_acl(*args))
    except TypeError:  # something unhashable in a payload's list: worked out without the memo
        return Acl(_path_acl.__wrapped__(*args))


def _tuple(value: Any) -> tuple[Any, ...]:
    """The clients share one tuple per space, ancestor and group: taken as it is, at no cost."""
    return value if type(value) is tuple else tuple(value or ())


def _names(values: Iterable[Any]) -> frozenset[str]:
    return frozenset(_str(v) or "" for v in values) - {""}


@functools.lru_cache(maxsize=256)
def _path_acl(
    space_users: tuple[Any, ...],
    space_groups: tuple[Any, ...],
    anonymous: bool,
    restrictions: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...],
    members: tuple[tuple[str, tuple[Any, ...]], ...],
) -> tuple[str, ...]:
    levels: list[Level] = []
    for users, groups in restrictions:
        level = (_names(users), _names(groups))
        if level[0] or level[1]:
            levels.append(level)
    space_level: Level = (_names(space_users), _names(space_groups))
    if not levels:
        out = [f"user:{u}" for u in sorted(space_level[0])]
        out += [f"group:confluence:{g}" for g in sorted(space_level[1])]
        if anonymous:
            out.append("group:confluence:anonymous")
        return tuple(out)
    member_sets = {g: frozenset(m) for g, m in members}

    def user_in(user: str, level: Level) -> bool:
        return user in level[0] or any(user in member_sets.get(g, ()) for g in level[1])

    candidates_users: set[str] = set()
    candidates_groups: set[str] = set()
    for users_in, groups_in in levels:
        candidates_users |= users_in
        candidates_groups |= groups_in
        for g in groups_in:
            candidates_users |= member_sets.get(g, frozenset())
    principals: list[str] = []
    for u in sorted(candidates_users):
        if (anonymous or user_in(u, space_level)) and all(user_in(u, lv) for lv in levels):
            principals.append(f"user:{u}")
    for g in sorted(candidates_groups):
        if (anonymous or g in space_level[1]) and all(g in lv[1] for lv in levels):
            principals.append(f"group:confluence:{g}")
    return tuple(principals)


def _own_restriction(p: Mapping[str, Any], names: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The page's own read restriction from the payload; None when the payload lacks the expansion."""
    read = _get(p, "restrictions", "read", "restrictions")
    if not isinstance(read, JSON_OBJECT):
        return None
    return restriction_principals(read, names)


def restriction_principals(restrictions: Mapping[str, Any], names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"user": {"results": [...]}, "group": {"results": [...]}}`` -> user ids and group names, as tuples
    (the client keeps one per ancestor, shared by every page under it)."""
    users = tuple(u for u in (_user_id(x) for x in _results(restrictions.get("user"))) if u)
    return {"users": users, "groups": tuple(group_subjects(_results(restrictions.get("group")), names))}


def group_subjects(subjects: Iterable[Any], names: Mapping[str, str] | None = None) -> list[str]:
    """Group subjects -> group names, one token scheme for every flavour (issue 13 §1). Confluence Cloud
    names groups by ``id``, with ``name`` beside it or not at all: an id-only group takes its name from
    ``names`` (the client's ``/rest/api/group/by-id`` look-ups), so it grants ``group:confluence:<name>``
    like everywhere else; an id nobody could name becomes ``id:<group id>`` (token
    ``group:confluence:id:<group id>``), which grants exactly that group and nothing wider."""
    groups: list[str] = []
    for x in subjects:
        if not isinstance(x, JSON_OBJECT):
            continue
        gid = _str(x.get("id"))
        name = _str(x.get("name")) or ((names or {}).get(gid) if gid else None) or (f"id:{gid}" if gid else None)
        if name:
            groups.append(name)
    return groups


# ---------------------------------------------------------------- small helpers


def _mention_token(uid: str) -> str:
    return f"user:accountid:{uid}" if ":" in uid or len(uid) == 24 else f"user:confluence:key:{uid}"


def _user_id(user: Any) -> str | None:
    """Identity by exact email, lower-case (seed 000); ``accountid:<id>`` when Confluence hides it."""
    return user_identity(user)


def _str(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


def _abs(base: str | None, link: str | None) -> str | None:
    if not link:
        return None
    if link.startswith(("http://", "https://")):
        return link
    return (base or "").rstrip("/") + link if base else link
