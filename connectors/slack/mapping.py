"""Slack message (as ``conversations.history`` / ``.replies`` return it) -> :class:`Entity`. Pure.

One message is one entity: ``source_entity_id = "<channel>:<ts>"``, ``natural_key = "<channel>/<ts>"``
(the form :mod:`connectors.refs` gives Slack archive links). What the message lacks, the client puts
in ``RawItem.context`` (a :class:`SlackItemContext`):

- ``channel``: ``{"id", "name", "is_private", "is_im", "is_mpim", "is_archived"}``;
- ``team_id``, ``team_url`` (``https://acme.slack.com/``) for permalinks and the workspace group;
- ``users``: ``{user id: {"email", "name"}}`` for the author and every ``<@U...>`` in the text;
- ``members``: principal ids (email, else user id) of a private channel / DM, None when unknown;
- ``file_texts`` / ``file_reasons``: text of the message's text and PDF files the client read (one
  section each, ``Attachment <name>:``), and why the others stay links (``files[].text_skipped``).

ACL (fail closed): public channel -> ``group:slack:<team>:members`` (full members of the workspace:
never guests, never people of another organisation) plus ``user:`` tokens of the channel's
``outsiders`` (its guests, ``is_restricted``/``is_ultra_restricted``, and its Slack Connect members of
other organisations); private channel, group DM and DM -> ``user:<email>`` of each member
(``user:slack:<id>`` when the e-mail is hidden); no channel facts, no team id or no member list ->
``Acl(None)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from connectors.base import Acl, Edge, Entity, MalformedPayload, RawItem, Ref
from connectors.memo import PerContainer
from connectors.payload import JSON_OBJECT
from connectors.payload import dig as _get
from connectors.refs import dedup, extract_refs
from connectors.slack.context import SlackItemContext
from connectors.slack.text import Rendered, render_blocks, render_mrkdwn, same_content

_TS_RE = re.compile(r"^\d{9,11}\.\d{1,6}$")
# Slack's mrkdwn escapes: <@U123>, <@U123|name>, <#C123|name>, <!here>, <url|label>, <url>
_SLACK_ARCHIVE_RE = re.compile(r"https?://[\w.-]+\.slack\.com/archives/([CGD][A-Z0-9]+)/p(\d{10})(\d{6})")
_TITLE_WORDS = 8
_OWN_HINTS = frozenset({"slack"})


def message_id(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def map_item(raw: RawItem) -> Entity:
    m = raw.payload
    # Another connector's context (or none) carries no Slack facts: the ACL then fails closed.
    ctx = raw.context if isinstance(raw.context, SlackItemContext) else SlackItemContext()
    channel: Mapping[str, Any] = ctx.channel or {}
    channel_id = raw.container or _str(channel.get("id")) or _str(m.get("channel"))
    ts = m.get("ts")
    text = m.get("text", "")
    if not channel_id or not isinstance(ts, str) or not _TS_RE.match(ts):
        raise MalformedPayload("slack message needs a channel and a 'ts' like 1512085950.000216")
    if not isinstance(text, str):
        raise MalformedPayload(f"slack message {channel_id}:{ts}: 'text' is not a string")
    try:
        return _map(m, ctx, channel, channel_id, ts, text)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        raise MalformedPayload(f"slack message {channel_id}:{ts}: unexpected shape: {exc}") from exc


def _map(
    m: Mapping[str, Any],
    ctx: SlackItemContext,
    channel: Mapping[str, Any],
    channel_id: str,
    ts: str,
    text: str,
) -> Entity:
    # A chat message is small and a sync maps thousands a second on the run's thread, under the interpreter
    # lock that also fetches the next pages: what a message lacks (blocks, files, reactions, mentions) costs
    # no call and no comprehension here, and each metadata value is added only when it is kept (decision 118).
    get = m.get
    users: Mapping[str, Mapping[str, Any]] = ctx.users or {}
    channels: Mapping[str, str] = ctx.channels or {}
    rendered = render_mrkdwn(text, users, channels)
    clean = rendered.text
    mentioned, links = rendered.users, rendered.links
    # Blocks are rendered only when they say something ``text`` does not (a blocks-only message, or a
    # fallback text like "This content can't be displayed."). Their mentions join the text's.
    raw_blocks = get("blocks")
    if raw_blocks:
        shared = Rendered(users=mentioned, channels=rendered.channels, links=links)
        blocks = render_blocks(raw_blocks, users, channels, shared).text
        if blocks and blocks != clean and not same_content(clean, blocks):
            clean = f"{clean}\n\n{blocks}" if clean and not _is_fallback(clean) else blocks
    sections = [clean] if clean else []
    attachments = get("attachments")
    if attachments:
        for att in attachments:
            if isinstance(att, JSON_OBJECT):
                part = "\n".join(
                    s for s in (_str(att.get("title")), _str(att.get("text")) or _str(att.get("fallback"))) if s
                )
                if part:
                    sections.append(part)
                if _str(att.get("title_link")):
                    links.append(str(att["title_link"]))
    file_texts: Mapping[str, str] = ctx.file_texts or {}
    raw_files = get("files")
    if raw_files:
        for f in raw_files:
            fid = _str(f.get("id")) if isinstance(f, JSON_OBJECT) else None
            if fid and (file_texts.get(fid) or "").strip():
                sections.append(f"Attachment {_str(f.get('name')) or fid}:\n{file_texts[fid].strip()}")
    body = "\n\n".join(sections)

    user_id = _str(get("user"))
    author = _author(user_id, users) or _str(get("username")) or _str(get("bot_id"))
    thread_ts = _str(get("thread_ts"))
    is_reply = bool(thread_ts and thread_ts != ts)
    edges: list[Edge] = []
    if is_reply and thread_ts:
        edges.append(Edge("reply_to", "message", message_id(channel_id, thread_ts), f"{channel_id}/{thread_ts}"))
    for url in links:
        hit = _SLACK_ARCHIVE_RE.match(url)
        if hit:
            target = f"{hit.group(2)}.{hit.group(3)}"
            edges.append(Edge("links_to", "message", message_id(hit.group(1), target), f"{hit.group(1)}/{target}"))

    # Slack's own links are the edges above, its people the mentions below: neither is scanned for.
    refs = list(extract_refs(body + "\n" + "\n".join(links), exclude_hints=_OWN_HINTS, mentions=False))
    if mentioned:
        refs += [Ref("mentions", "user", _author(u, users) or u, "slack") for u in mentioned]
    if rendered.channels:
        refs += [Ref("mentions", "channel", f"#{channels.get(c) or c}", "slack") for c in rendered.channels]

    name = _str(channel.get("name")) or channel_id
    prefix = f"#{name}" if not channel.get("is_im") else f"DM {name}"
    if clean:
        split = clean.split()
        words = " ".join(split[:_TITLE_WORDS]) + (" …" if len(split) > _TITLE_WORDS else "")
    else:
        words = _str(get("subtype")) or "message"
    edited_obj = get("edited")
    edited = _get(edited_obj, "ts") if edited_obj is not None else None
    # Only what is kept (not None, [] or ""), in the order the keys have always had (the content hash sorts
    # them; a reader of the stored JSON should not see them move).
    metadata: dict[str, Any] = {"channel_id": channel_id}
    _put(metadata, "channel_name", _str(channel.get("name")))
    _put(metadata, "channel_type", _channel_type(channel) if channel else _str(get("channel_type")))
    if channel.get("is_ext_shared"):
        metadata["channel_shared"] = True
    _put(metadata, "subtype", _str(get("subtype")))
    _put(metadata, "thread_ts", thread_ts)
    _keep(metadata, "reply_count", get("reply_count"))
    _keep(metadata, "reply_users", get("reply_users"))
    _put(metadata, "latest_reply", _str(get("latest_reply")))
    _put(metadata, "user_id", user_id)
    _put(metadata, "bot_id", _str(get("bot_id")))
    _put(metadata, "team", _str(get("team")) or _str(ctx.team_id))
    _put(metadata, "client_msg_id", _str(get("client_msg_id")))
    if edited_obj is not None:
        _put(metadata, "edited_by", _str(_get(edited_obj, "user")))
        _put(metadata, "edited_ts", _str(edited))
    _put(metadata, "parent_user_id", _str(get("parent_user_id")))
    reactions = get("reactions")
    if reactions:
        listed = [{"name": r.get("name"), "count": r.get("count")} for r in reactions if isinstance(r, JSON_OBJECT)]
        if listed:
            metadata["reactions"] = listed
    metadata["reaction_count"] = (
        sum(r["count"] for r in reactions if isinstance(r, JSON_OBJECT) and isinstance(r.get("count"), int))
        if reactions
        else 0
    )
    # A thread parent deleted while replies remain is kept by Slack as a tombstone.
    if get("subtype") in ("tombstone", "message_deleted"):
        metadata["deleted"] = True
    if edited:
        metadata["edited"] = True
    if raw_files:
        file_reasons: Mapping[str, str] = ctx.file_reasons or {}
        files = [_file(f, file_texts, file_reasons) for f in raw_files if isinstance(f, JSON_OBJECT)]
        if files:
            metadata["files"] = files
    _keep(metadata, "pinned_to", get("pinned_to"))
    # Every identity of the people the message names (issue 13, item 2): e-mail (lower-case) and Slack id.
    if user_id:
        metadata["author_identities"] = identities(user_id, users)
    if mentioned:
        metadata["mentions"] = sorted({t for u in mentioned for t in identities(u, users)})
    if rendered.channels:
        metadata["channel_mentions"] = [{"id": c, "name": channels.get(c)} for c in rendered.channels]
    created = ts_to_datetime(ts)  # also the updated time of a message never edited: one datetime, not two
    return Entity(
        source_type="message",
        source_entity_id=message_id(channel_id, ts),
        status="archived" if channel.get("is_archived") else "final",
        title=f"{prefix}: {words}",
        text=body,
        url=permalink(_str(ctx.team_url), channel_id, ts, thread_ts if is_reply else None),
        author=author,
        created_at=created,
        updated_at=ts_to_datetime(edited) if isinstance(edited, str) and _TS_RE.match(edited) else created,
        acl=channel_acl(channel, ctx),
        metadata=metadata,
        natural_key=f"{channel_id}/{ts}",
        container=channel_id,
        edges=tuple(dict.fromkeys(edges)) if len(edges) > 1 else tuple(edges),
        refs=dedup(refs),
        sections=tuple(sections),
    )


def _put(metadata: dict[str, Any], key: str, value: str | None) -> None:
    if value is not None:
        metadata[key] = value


def _keep(metadata: dict[str, Any], key: str, value: Any) -> None:
    """A value as the source sent it, kept unless it is None, [] or "" (0, False and {} say something)."""
    if value or (value is not None and value != [] and value != ""):
        metadata[key] = value


def _file(f: Mapping[str, Any], file_texts: Mapping[str, str], file_reasons: Mapping[str, str]) -> dict[str, Any]:
    """A file's metadata: what the source says of it, and whether its text is in the entity's."""
    fid = _str(f.get("id"))
    found = {
        "id": fid,
        "name": _str(f.get("name")),
        "title": _str(f.get("title")),
        "mimetype": _str(f.get("mimetype")),
        "size": f.get("size"),
        "url": _str(f.get("permalink")) or _str(f.get("url_private")),
        "inline": True if (file_texts.get(fid or "") or "").strip() else None,
        "text_skipped": _str(file_reasons.get(fid or "")),
    }
    return {k: v for k, v in found.items() if v is not None}


def render_text(text: str, users: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[str], list[str]]:
    """Slack mrkdwn -> readable text; also the mentioned user ids and the linked URLs."""
    rendered = render_mrkdwn(text, users)
    return rendered.text, rendered.users, rendered.links


def identities(user_id: str | None, users: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """ACL-style tokens for one Slack user: ``user:<email>`` (lower-case) and ``user:slack:<id>``."""
    if not user_id:
        return []
    email = _str((users.get(user_id) or {}).get("email"))
    return ([f"user:{email.lower()}"] if email else []) + [f"user:slack:{user_id}"]


def _member_token(member: str) -> str:
    return f"user:{member.lower()}" if "@" in member else f"user:slack:{member}"


def _is_fallback(text: str) -> bool:
    return text.strip().lower() in {"this content can't be displayed.", "this content can’t be displayed."}


def channel_acl(channel: Mapping[str, Any], ctx: SlackItemContext) -> Acl:
    if channel.get("is_im") or channel.get("is_mpim") or channel.get("is_private"):
        members = ctx.members
        if not isinstance(members, list | tuple) or not members:
            return Acl(None)
        return Acl(_member_tokens(members))
    team = _str(ctx.team_id)
    if channel.get("is_private") is not False or not team:
        return Acl(None)  # privacy not stated, or no workspace to name: fail closed
    # The workspace group holds full members only; guests and people of another organisation (Slack
    # Connect) see a public channel only as its members, so they are named one by one (issue 13 §1).
    return Acl((f"group:slack:{team}:members", *_member_tokens(ctx.outsiders or ())))


def _tokens(members: Iterable[Any]) -> tuple[str, ...]:
    """Members' tokens, each once, sorted: a member's e-mail (lower-case: compared case-insensitively),
    else their Slack id as ``user:slack:<id>``."""
    return tuple(sorted({_member_token(m) for m in members if isinstance(m, str) and m}))


# The same for every message of a channel, which can have thousands of members: built once per channel
# (the client shares one member tuple per channel).
_member_tokens = PerContainer(_tokens)


def permalink(team_url: str | None, channel: str, ts: str, thread_ts: str | None = None) -> str | None:
    if not team_url:
        return None
    url = f"{team_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    return f"{url}?thread_ts={thread_ts}&cid={channel}" if thread_ts else url


def ts_to_datetime(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), tz=UTC)


def _channel_type(channel: Mapping[str, Any]) -> str:
    if channel.get("is_im"):
        return "im"
    if channel.get("is_mpim"):
        return "mpim"
    return "private_channel" if channel.get("is_private") else "public_channel"


def _author(user_id: str | None, users: Mapping[str, Mapping[str, Any]]) -> str | None:
    if not user_id:
        return None
    user = users.get(user_id) or {}
    return _str(user.get("email")) or user_id


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None
