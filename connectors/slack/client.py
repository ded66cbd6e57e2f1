"""Slack Web API client: channels -> messages (threads included) with the ACL facts the mapping needs.

Calls: ``auth.test`` (team id and URL), ``users.list`` (id -> e-mail, identity by exact e-mail),
``conversations.list`` (scope), ``conversations.members`` (private channels and DMs),
``conversations.history`` and ``conversations.replies``; all cursor-paged by
``response_metadata.next_cursor``. HTTP 429 + ``Retry-After`` (Slack's tiered limits) is retried by
:class:`connectors.http.SourceHttp`. Slack reports most errors as HTTP 200 ``{"ok": false, "error"}``:
:func:`classify_slack_error` maps them (auth -> the run fails; channel_not_found -> not_found;
missing_scope / not_in_channel -> permission; ratelimited -> transient).

Incremental runs read each channel's history from ``since - thread_lookback`` so that a thread whose
parent is older than ``since`` but which got replies since is seen (its ``latest_reply``) and re-read
whole; older top-level messages in that look-back are not emitted unless edited since. Replies to
threads older than the look-back arrive through the Events API (webhook), which re-fetches the thread.

A channel that cannot be read is reported as one :class:`ItemError` with id ``<channel>:*``; fetching
``<channel>:*`` (DLQ retry, membership webhook) re-reads that whole channel and, when that worked,
ends with ``ItemGone("message", "<channel>:*")`` so the pipeline drops the channel's dead letter.
``<channel>:*`` never becomes a RawItem: it names a fetch, not a record (see the manifest).

Checkpoints: ``{"channel": i, "cursor": next_cursor}`` after each history page but a channel's last, which
``{"channel": i + 1, "cursor": None}`` closes (decision 124; ``"cursor": ""`` from older runs means the same).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from connectors.attachments import AttachmentReader
from connectors.base import (
    ANY_CONTAINER,
    CallStats,
    Checkpoint,
    DeadLetterReason,
    Emitted,
    ItemError,
    ItemGone,
    ProbeStatus,
    RawItem,
    SourceAuthFailed,
    SourceConfig,
    SourceError,
    SourceType,
    SourceUnreachable,
)
from connectors.directories import SourceDirectories
from connectors.fanout import Ahead, FanOut
from connectors.http import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT, HttpError, SourceHttp
from connectors.payload import JSON_OBJECT, obj
from connectors.slack.context import SlackItemContext
from connectors.slack.manifest import MANIFEST
from connectors.slack.mapping import message_id, ts_to_datetime

_AUTH = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission"}
_NOT_FOUND = {"channel_not_found", "thread_not_found", "message_not_found", "user_not_found"}
_PERMISSION = {"missing_scope", "not_in_channel", "access_denied", "restricted_action", "ekm_access_denied"}
_TRANSIENT = {
    "ratelimited",
    "rate_limited",
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
}
_MENTION_RE = re.compile(r"<@([UW][A-Z0-9]+)")
ALL = "*"
FILE_HOSTS = ("files.slack.com",)
_CHANNEL_FACTS = ("id", "name", "is_private", "is_im", "is_mpim", "is_archived", "is_ext_shared")


@dataclass(frozen=True, slots=True)
class SlackError(Exception):
    error: str
    reason: DeadLetterReason
    transient: bool

    def __str__(self) -> str:
        return f"slack error: {self.error}"


def classify_slack_error(error: str) -> SlackError:
    """Slack's ``error`` string -> DLQ reason and transience; auth errors raise (the run cannot go on)."""
    if error in _AUTH:
        raise SourceAuthFailed(f"slack: {error}")
    if error in _NOT_FOUND:
        return SlackError(error, "not_found", False)
    if error in _PERMISSION:
        return SlackError(error, "permission", False)
    if error in _TRANSIENT:
        return SlackError(error, "rate_limited" if "rate" in error else "unknown", True)
    return SlackError(error, "unknown", False)


class SlackConnector:
    manifest = MANIFEST

    def __init__(
        self,
        config: SourceConfig,
        stats: CallStats,
        *,
        page_size: int = 200,
        thread_lookback: timedelta = timedelta(days=7),
        max_wait: float = 30.0,
    ) -> None:
        base = config.base_url.rstrip("/")
        if not base.endswith("/api"):
            base += "/api"
        headers = {"Authorization": f"Bearer {config.credential}"} if config.credential else {}
        self.http = SourceHttp(
            base,
            headers=headers,
            stats=stats,
            errors=MANIFEST.errors,
            max_attempts=config.max_attempts or DEFAULT_ATTEMPTS,
            max_wait=max_wait,
            timeout=config.timeout or DEFAULT_TIMEOUT,
            rate_limit_patience=config.rate_limit_patience,
            gate=config.rate_gate,
            max_bytes=config.response_max_bytes,
            max_seconds=config.response_max_seconds,
        )
        # Files are served from Slack's file host with the same bearer token (url_private_download).
        self.attachments = AttachmentReader(self.http, stats, "slack", extra_hosts=FILE_HOSTS)
        self.fanout = FanOut(config.fanout, name="harvester-slack", listing_ahead=config.listing_ahead)
        self.config = config
        self.stats = stats
        self.page_size = page_size
        self.lookback = thread_lookback
        filters = {f.key: f.default for f in MANIFEST.content_filters}
        filters.update(config.content_filters)
        self.filters = filters
        self._team: dict[str, Any] | None = None
        self._users: dict[str, dict[str, Any]] | None = None
        self._has_guests = False  # any guest in users.list: known with the user map, asked of every message
        # The user map / the channels were taken from an earlier run (fetch by id, connectors.directories):
        # someone or a channel not in them is new since, and makes the run read them anew.
        self._kept = SourceDirectories("slack", config)
        self._users_taken = False
        self._channels_taken = False
        # Ids a fresh user map was found to lack (people of another organisation in a Slack Connect channel):
        # kept with the map, so a later run that takes it does not read it again for them.
        self._absent: frozenset[str] = frozenset()
        self._invisible_taken: frozenset[str] = frozenset()  # noted once the taken channel list stands
        self._outsiders: dict[str, tuple[str, ...] | None] = {}
        self._channels: dict[str, dict[str, Any]] = {}
        # Per channel, one tuple every message of it shares: the mapping builds its ACL once (decision 124).
        self._members: dict[str, tuple[str, ...] | None] = {}
        # Completeness audit: messages enumerated per channel by this process, for channels read from
        # their first page (a channel resumed mid-way after a crash has no whole count here).
        self._enumerated: dict[str, int] = {}

    # ------------------------------------------------------------ Connector protocol

    def probe(self) -> ProbeStatus:
        try:
            self.call("auth.test")
        except SourceAuthFailed:
            return "auth_failed"
        except (SourceUnreachable, HttpError, SlackError):
            return "unreachable"
        return "ok"

    def enumerate(self, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
        cp = dict(checkpoint or {})
        channels = self._scoped_channels()
        first = int(cp.get("channel", 0))
        indices = range(first, len(channels))

        def first_page(ci: int) -> Callable[[], dict[str, Any]]:
            return partial(self._history, channels[ci], since, None)

        with closing(self.fanout.openings(indices, first_page)) as units:
            for ci, opening in units:
                cursor = cp.get("cursor") if ci == first else None
                if ci == first and cursor == "":
                    continue  # taken after this channel's last page by a run before decision 124
                yield from self._channel(ci, channels[ci], since, cursor, opening)

    def _channel(
        self, ci: int, channel: dict[str, Any], since: datetime | None, cursor: str | None, opening: Ahead[Any] | None
    ) -> Iterator[Emitted]:
        """Channel ``ci``'s messages, checkpoints and failure; ``opening``: its first history page, asked
        for ahead."""
        counted = 0
        try:
            for emitted in self._channel_messages(channel, since, cursor, opening):
                if isinstance(emitted, str):
                    # The channel's last page ("" after it) is closed by the checkpoint past the channel
                    # just below: a second checkpoint here would cost the run a transaction of its own.
                    if emitted:
                        yield Checkpoint({"channel": ci, "cursor": emitted})
                else:
                    counted += isinstance(emitted, RawItem)
                    yield emitted
            if cursor is None:
                self._enumerated[str(channel["id"])] = counted
        except SlackError as exc:
            yield ItemError("message", message_id(channel["id"], ALL), exc.reason, str(exc), channel["id"])
        except HttpError as exc:
            yield ItemError("message", message_id(channel["id"], ALL), exc.reason, exc.detail, channel["id"])
        yield Checkpoint({"channel": ci + 1, "cursor": None})

    def fetch(self, ids: list[tuple[SourceType, str]]) -> Iterator[RawItem | ItemError | ItemGone]:
        # A "<channel>:*" id comes from an event about the channel itself (renamed, archived, a member
        # joined or left): its facts are read fresh, never taken from an earlier run.
        self._take_directories(channels=not any(sid.endswith(":" + ALL) for _, sid in ids))
        scoped = {c["id"] for c in self._scoped_channels()}
        if self._channels_taken and not {sid.partition(":")[0] for _, sid in ids} <= scoped:
            # A channel the kept list does not have may be new since: the list is read anew before any
            # of its messages is taken for gone.
            self._channels, self._channels_taken = {}, False
            scoped = {c["id"] for c in self._scoped_channels()}
        elif self._channels_taken:
            self._note_invisible(set(self._invisible_taken))  # what the read that left the list noted
        # Each single message (with its thread, if it has one) is read a few at a time (connectors.fanout)
        # and taken below in the order asked; an items-scoped run asks for at most a page's worth of ids.
        # A message that an earlier id's thread already brought is still read (its answer goes unused).
        single = list(dict.fromkeys(sid for t, sid in ids if t == "message" and _single(sid, scoped)))
        reads = dict(zip(single, self.fanout.ordered(self._read_one, single), strict=True))
        done: set[str] = set()
        for source_type, sid in ids:
            cid, _, ts = sid.partition(":")
            if source_type != "message" or not cid or not ts:
                yield ItemError(source_type, sid, "not_found", "slack ids look like <channel>:<ts>")
                continue
            if sid in done:
                continue
            if cid not in scoped:
                yield ItemGone("message", sid)
                continue
            channel = self._channels[cid]
            try:
                if ts == ALL:
                    for item in self._channel_messages(channel, None, None):
                        if isinstance(item, RawItem):
                            done.add(item.source_entity_id)
                            yield item
                        elif not isinstance(item, str):
                            yield item
                    # The whole channel was read: its "<channel>:*" dead letter (if any) is resolved.
                    # ItemGone is the contract's way to drop it; no entity carries this id to delete.
                    yield ItemGone("message", sid)
                    continue
                read = reads[sid]
                if read.error is not None:
                    raise read.error
                members = self._channel_members(channel)
                found = False
                for msg, files in read.messages:
                    item = self._raw(channel, msg, members, files)
                    found = found or item.source_entity_id == sid
                    if item.source_entity_id not in done:
                        done.add(item.source_entity_id)
                        yield item
                if not found:
                    yield ItemGone("message", sid)
            except SlackError as exc:
                if exc.reason == "not_found":
                    yield ItemGone("message", sid)
                else:
                    yield ItemError("message", sid, exc.reason, str(exc))
            except HttpError as exc:
                yield ItemError("message", sid, exc.reason, exc.detail)

    def has_delta(self, since: datetime) -> bool:
        oldest = _ts(since)
        for channel in self._scoped_channels():
            try:
                data = self.call("conversations.history", channel=channel["id"], oldest=oldest, limit=1)
            except SlackError:
                continue
            if data.get("messages"):
                return True
        return False

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]:
        """Slack has no count API: the messages this run enumerated per channel (seed: reconciliation
        reads every channel whole); None for a channel it did not read whole in this process."""
        return {c: self._enumerated.get(c) for c in sorted({*containers, *self._enumerated})}

    def unseen_scope(self) -> list[str]:
        """Allow-listed channels (id or name, ``#`` optional) the token's conversations.list does not show."""
        if self.config.scope_mode != "selected":
            return []
        seen: set[str] = set()
        for c in self._scoped_channels():
            seen |= {str(c["id"]), str(c.get("name") or "")}
        return [s for s in dict.fromkeys(str(i) for i in self.config.scope_list) if s.lstrip("#") not in seen]

    def close(self) -> None:
        self.fanout.close()
        self.http.close()

    # ------------------------------------------------------------ Web API

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        data = self.http.get_json(f"/{method}", params)
        if not isinstance(data, Mapping):
            raise SlackError("invalid_response", "malformed", False)
        if not data.get("ok"):
            raise classify_slack_error(str(data.get("error") or "unknown_error"))
        return dict(data)

    def paged(self, method: str, key: str, cursor: str | None = None, **params: Any) -> Iterator[tuple[Any, str]]:
        """Items of a cursor-paged method, each with the cursor of the page *after* its own."""
        for items, nxt in self.pages(method, key, cursor, **params):
            for item in items:
                yield item, nxt

    def pages(
        self,
        method: str,
        key: str,
        cursor: str | None = None,
        *,
        ahead: bool = False,
        opening: Ahead[dict[str, Any]] | None = None,
        **params: Any,
    ) -> Generator[tuple[list[Any], str], None, None]:
        """Pages of a cursor-paged method, each with the cursor of the page after it ("" at the end).

        ``ahead``: each page's successor is requested as soon as its cursor is known, before the page is
        handed out (``FanOut.ahead``, decision 127); only from the thread that enumerates, never from a
        request already on the fan-out. ``opening``: the first page (``cursor`` None), already asked for."""
        read = partial(self.call, method, limit=self.page_size, **params)

        def following(data: dict[str, Any]) -> Callable[[], dict[str, Any]] | None:
            nxt = _next_cursor(data)
            return partial(read, cursor=nxt) if nxt else None

        with closing(
            self.fanout.listing(partial(read, cursor=cursor or None), following, opening=opening, ahead=ahead)
        ) as listing:
            for data in listing:
                yield list(data.get(key) or []), _next_cursor(data)

    # ------------------------------------------------------------ enumeration

    def _history(self, channel: Mapping[str, Any], since: datetime | None, cursor: str | None) -> dict[str, Any]:
        """Request only (safe on the fan-out): one page of the channel's history."""
        return self.call("conversations.history", limit=self.page_size, cursor=cursor, **self._window(channel, since))

    def _window(self, channel: Mapping[str, Any], since: datetime | None) -> dict[str, Any]:
        """The history parameters besides paging: the channel, and how far back an incremental run reads."""
        return {"channel": channel["id"], "oldest": _ts(since - self.lookback) if since is not None else None}

    def _channel_messages(
        self, channel: dict[str, Any], since: datetime | None, cursor: str | None, opening: Ahead[Any] | None = None
    ) -> Iterator[RawItem | ItemError | str]:
        """Messages of one channel, newest page first; a ``str`` marks the end of a page (its cursor).
        ``opening``: the channel's first history page, asked for ahead (``cursor`` None)."""
        cid = channel["id"]
        members = self._channel_members(channel)
        since_ts = _ts(since) if since is not None else None
        # Closed with the run's stop, not when collected: the page asked ahead is dropped at once.
        window = self._window(channel, since)
        listing = self.pages("conversations.history", "messages", cursor, ahead=True, opening=opening, **window)
        with closing(listing):
            for messages, nxt in listing:
                plan: list[tuple[Mapping[str, Any], str, bool, bool]] = []
                for msg in messages:
                    if not isinstance(msg, JSON_OBJECT):
                        continue
                    ts = str(msg.get("ts", ""))
                    is_parent = bool(msg.get("reply_count")) and msg.get("thread_ts", ts) == ts
                    latest = _key(str(msg.get("latest_reply", "")))
                    # a parent whose thread moved since is re-read whole (its reply count changed too)
                    thread_active = is_parent and (since_ts is None or latest >= _key(since_ts))
                    shown = (since_ts is None or thread_active or _changed_since(msg, since_ts)) and self._wanted(msg)
                    plan.append((msg, ts, shown, thread_active))
                # What needs a request (a thread's replies, a shown message's files) is read a few at a time
                # (connectors.fanout) and taken in the page's order; the rest is built here at once.
                asks = [(ts, m if shown else None, active) for m, ts, shown, active in plan if _asks(m, shown, active)]
                with closing(self.fanout.ordered(partial(self._read_planned, cid), asks)) as reads:
                    for msg, _, shown, active in plan:
                        read = next(reads) if _asks(msg, shown, active) else _PlanRead()
                        if shown:
                            yield self._raw(channel, msg, members, read.files)
                        for reply, files in read.replies:
                            yield self._raw(channel, reply, members, files)
                if messages:
                    yield nxt

    def _read_planned(self, cid: str, need: tuple[str, Mapping[str, Any] | None, bool]) -> _PlanRead:
        """Requests only (runs on the fan-out): a shown message's files; a thread's wanted replies and
        their files."""
        ts, shown, active = need
        files = self._file_texts(message_id(cid, ts), shown.get("files")) if shown is not None else _NO_FILES
        replies: list[tuple[Mapping[str, Any], _FileTexts]] = []
        if active:
            for reply in self._replies(cid, ts):
                if isinstance(reply, JSON_OBJECT) and reply.get("ts") != ts and self._wanted(reply):
                    sid = message_id(cid, str(reply.get("ts", "")))
                    replies.append((reply, self._file_texts(sid, reply.get("files"))))
        return _PlanRead(files, replies)

    def _replies(self, cid: str, ts: str) -> list[Any]:
        """Every message of one thread, the parent included."""
        return [reply for reply, _ in self.paged("conversations.replies", "messages", channel=cid, ts=ts)]

    def _read_one(self, sid: str) -> _OneRead:
        """Requests only (runs on the fan-out): message ``<channel>:<ts>`` by ts, with its files; a thread
        parent comes with its whole thread (nothing missed); or the error that kept it from being read."""
        cid, _, ts = sid.partition(":")
        try:
            data = self.call("conversations.history", channel=cid, latest=ts, oldest=ts, inclusive="true", limit=1)
            hits = [m for m in data.get("messages") or [] if isinstance(m, Mapping) and m.get("ts") == ts]
            if hits:
                messages = hits[:1]
                if hits[0].get("reply_count"):
                    thread = self.paged("conversations.replies", "messages", channel=cid, ts=ts)
                    messages += [r for r, _ in thread if isinstance(r, Mapping) and r.get("ts") != ts]
            else:
                data = self.call("conversations.replies", channel=cid, ts=ts, limit=self.page_size)
                messages = [m for m in data.get("messages") or [] if isinstance(m, Mapping) and m.get("ts") == ts]
            return _OneRead(
                [(m, self._file_texts(message_id(cid, str(m.get("ts", ""))), m.get("files"))) for m in messages]
            )
        except (SlackError, HttpError) as exc:
            return _OneRead(error=exc)

    def _wanted(self, msg: Mapping[str, Any]) -> bool:
        return self.filters["bot_messages"] or not (msg.get("subtype") == "bot_message" or msg.get("bot_id"))

    def _raw(
        self,
        channel: Mapping[str, Any],
        msg: Mapping[str, Any],
        members: tuple[str, ...] | None,
        files: _FileTexts | None = None,
    ) -> RawItem:
        team = self._team_info()
        ts = str(msg.get("ts", ""))
        text = str(msg.get("text") or "")
        wanted = {str(msg.get("user") or "")} | set(_MENTION_RE.findall(text))
        named = set(_CHANNEL_RE.findall(text))
        blocks = msg.get("blocks")
        if blocks:
            _ids_in(blocks, wanted, named)
        users = self._users_knowing(wanted)
        channel_names = {c: str(self._channels[c].get("name")) for c in named if self._channels.get(c, {}).get("name")}
        edited = obj(msg.get("edited")).get("ts")  # absent on most messages
        if files is None:  # a message read on its own (webhook, fetch by id)
            files = self._file_texts(message_id(channel["id"], ts), msg.get("files"))
        texts, reasons = files
        return RawItem(
            source_type="message",
            source_entity_id=message_id(channel["id"], ts),
            payload=msg,
            fetched_at=datetime.now(UTC),
            source_updated_at=_when(str(edited or ts)),
            container=channel["id"],
            context=SlackItemContext(
                channel={k: channel.get(k) for k in _CHANNEL_FACTS},
                outsiders=self._channel_outsiders(channel),
                team_id=team.get("team_id"),
                team_url=team.get("url"),
                users={u: users[u] for u in wanted if u in users},
                members=members,
                channels=channel_names or None,
                file_texts=texts,
                file_reasons=reasons,
            ),
        )

    def _file_texts(self, sid: str, files: Any) -> _FileTexts:
        """Text and PDF files of a message read within the cap (``url_private_download``, bearer auth);
        why the others stay links."""
        if not isinstance(files, list):
            return None, None
        texts: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for f in files:
            if not isinstance(f, Mapping) or not f.get("id") or f.get("mode") in ("tombstone", "hidden_by_limit"):
                continue
            url = f.get("url_private_download") or f.get("url_private")
            size = f.get("size")
            got = self.attachments.read(
                sid,
                url if isinstance(url, str) else None,
                content_type=str(f.get("mimetype") or ""),
                filename=str(f.get("name") or ""),
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            )
            if got.text is not None:
                texts[str(f["id"])] = got.text
            elif got.reason:
                reasons[str(f["id"])] = got.reason
        return texts or None, reasons or None

    # ------------------------------------------------------------ workspace facts (cached per run)

    def _team_info(self) -> dict[str, Any]:
        if self._team is None:
            self._team = self.call("auth.test")
            self._kept.put("team", self._team)
        return self._team

    def _user_map(self) -> dict[str, dict[str, Any]]:
        if self._users is None:
            users: dict[str, dict[str, Any]] = {}
            for u, _ in self.paged("users.list", "members"):
                if isinstance(u, Mapping) and u.get("id"):
                    profile = u.get("profile") or {}
                    email = profile.get("email") if isinstance(profile, Mapping) else None
                    entry: dict[str, Any] = {"email": email or None, "name": u.get("name") or None}
                    if u.get("is_restricted") or u.get("is_ultra_restricted"):
                        entry["guest"] = True  # sees only the channels they are a member of
                    users[str(u["id"])] = entry
            self._has_guests = any(u.get("guest") for u in users.values())
            self._users = users
            self._absent = frozenset()
            self._kept.put("users", (users, self._has_guests, self._absent))
        return self._users

    def _users_knowing(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The user map; read anew when it was taken from an earlier run and lacks one of ``ids`` (someone
        who joined since). Someone it still lacks then is not in ``users.list`` (another organisation)."""
        users = self._user_map()
        if self._users_taken and any(u and u not in users and u not in self._absent for u in ids):
            self._users, self._users_taken = None, False
            users = self._user_map()
            absent = frozenset(u for u in ids if u and u not in users)
            if absent:  # the map just read, with the ids it lacks, for the runs after this one
                self._absent = absent
                self._kept.put("users", (users, self._has_guests, absent))
        return users

    # ------------------------------------------------------------ directories kept between runs (decision 125)

    def _channels_depend_on(self) -> tuple[Hashable, ...]:
        """Which channels are kept depends on the scope and the filters as well."""
        return (*self._kept.scope, tuple(sorted(self.filters.items())))

    def _take_directories(self, *, channels: bool) -> None:
        """A run that fetches by id takes the workspace's directories an earlier run of this source read, while
        they are younger than ``directory_ttl`` (connectors.directories); the channel list only if
        ``channels``."""
        self._kept.taking = True
        team = self._kept.get("team")
        if team is not None and self._team is None:
            self._team = team
        users = self._kept.get("users")
        if users is not None and self._users is None:
            self._users, self._has_guests, self._absent = users
            self._users_taken = True
        kept = self._kept.get("channels", *self._channels_depend_on()) if channels else None
        if kept is not None and not self._channels:
            self._channels, self._invisible_taken = kept
            self._channels_taken = True

    def _channel_outsiders(self, channel: Mapping[str, Any]) -> tuple[str, ...] | None:
        """Members of a public channel who are not full members of the workspace (issue 13 §1): guests
        (``is_restricted`` / ``is_ultra_restricted``: they see only channels they belong to) and people of
        another organisation in a Slack Connect channel (``is_ext_shared``; not in ``users.list``).
        () when there are none; None when the member list cannot be read (they then see nothing)."""
        if channel.get("is_private") or channel.get("is_im") or channel.get("is_mpim"):
            return ()
        users = self._user_map()
        if not channel.get("is_ext_shared") and not channel.get("is_shared") and not self._has_guests:
            return ()  # no guests in the workspace and no other organisation: the workspace group says it all
        cid = str(channel["id"])
        if cid not in self._outsiders:
            try:
                ids = [str(m) for m, _ in self.paged("conversations.members", "members", channel=cid)]
            except (SlackError, HttpError) as exc:
                self.stats.note(f"slack channel {cid}: members unreadable ({exc}); guests and external people omitted")
                self._outsiders[cid] = None
                return None
            users = self._users_knowing(ids)
            out = [users[m].get("email") or m for m in ids if m in users and users[m].get("guest")]
            out += [m for m in ids if m not in users]
            self._outsiders[cid] = tuple(out)
        return self._outsiders[cid]

    def _channel_members(self, channel: Mapping[str, Any]) -> tuple[str, ...] | None:
        """Member principals (e-mail, else user id) of a private channel / DM; None when unknown."""
        cid = channel["id"]
        if not (channel.get("is_private") or channel.get("is_im") or channel.get("is_mpim")):
            return ()
        if cid not in self._members:
            try:
                ids = [str(m) for m, _ in self.paged("conversations.members", "members", channel=cid)]
                users = self._users_knowing(ids)
                self._members[cid] = tuple(users.get(m, {}).get("email") or m for m in ids)
            except (SlackError, HttpError):
                self._members[cid] = None
        return self._members[cid]

    def _note_invisible(self, names: set[str]) -> None:
        """Channels the allow-list names that ``conversations.list`` does not show (issue 12, bad input):
        named in the run's notes and kept from deletion. A channel named by id protects that channel's
        messages; one named by name cannot be tied to an id, so the run deletes nothing at all."""
        for name in sorted(names):
            by_id = bool(_CHANNEL_ID_RE.match(name))
            self.stats.unreadable(
                name if by_id else ANY_CONTAINER,
                f"slack channel {name if by_id else '#' + name} named in scope_list is not visible to the token "
                "(not a member, archived or gone); its messages were not read and nothing of it was changed",
            )

    def _scoped_channels(self) -> list[dict[str, Any]]:
        if not self._channels:
            types = ["public_channel"]
            if self.filters["private_channels"]:
                types.append("private_channel")
            if self.filters["direct_messages"]:
                types += ["im", "mpim"]
            listed = {str(s).lstrip("#") for s in self.config.scope_list}
            try:
                pages = list(
                    self.paged(
                        "conversations.list",
                        "channels",
                        types=",".join(types),
                        exclude_archived="false" if self.filters["archived_channels"] else "true",
                    )
                )
            except (SlackError, HttpError) as exc:
                raise SourceError(f"slack conversations.list failed: {exc}") from exc
            seen: set[str] = set()
            channels: dict[str, dict[str, Any]] = {}
            for c, _ in pages:
                if not isinstance(c, Mapping) or not c.get("id"):
                    continue
                named = {str(c["id"]), str(c.get("name") or "")} & listed
                seen |= named
                keep = bool(named) if self.config.scope_mode == "selected" else not named
                if keep:
                    channels[str(c["id"])] = dict(c)
            invisible = frozenset(listed - seen) if self.config.scope_mode == "selected" else frozenset()
            self._note_invisible(set(invisible))
            # A new dict each time, never changed afterwards: another run may hold the one it replaces.
            self._channels = channels
            self._kept.put("channels", (channels, invisible), *self._channels_depend_on())
        return list(self._channels.values())


_CHANNEL_ID_RE = re.compile(r"^[CGD][A-Z0-9]{6,}$")


def _next_cursor(data: Mapping[str, Any]) -> str:
    """The cursor of the page after ``data`` ("" after the last)."""
    return str((data.get("response_metadata") or {}).get("next_cursor") or "")


def _changed_since(msg: Mapping[str, Any], since_ts: str) -> bool:
    edited = msg.get("edited")
    edited_ts = str(edited.get("ts", "")) if isinstance(edited, Mapping) else ""
    return _key(str(msg.get("ts", ""))) >= _key(since_ts) or (bool(edited_ts) and _key(edited_ts) >= _key(since_ts))


def _key(ts: str) -> tuple[int, int]:
    sec, _, frac = ts.partition(".")
    try:
        return int(sec or 0), int((frac + "000000")[:6])
    except ValueError:
        return (0, 0)


def _ts(when: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return f"{when.timestamp():.6f}"


def _when(ts: str) -> datetime | None:
    try:
        return ts_to_datetime(ts)
    except ValueError:
        return None


_FileTexts = tuple[dict[str, str] | None, dict[str, str] | None]  # a message's file texts, and why others stay links
_NO_FILES: _FileTexts = (None, None)


@dataclass(frozen=True, slots=True)
class _PlanRead:
    """What the fan-out read for one message of a history page: its files, and its thread's replies."""

    files: _FileTexts = _NO_FILES
    replies: list[tuple[Mapping[str, Any], _FileTexts]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _OneRead:
    """What the fan-out read for one message asked for by id: the messages to emit (it, or a thread
    parent and its replies), each with its files; or the error that kept it from being read."""

    messages: list[tuple[Mapping[str, Any], _FileTexts]] = field(default_factory=list)
    error: SlackError | HttpError | None = None


def _single(sid: str, scoped: set[str]) -> bool:
    """Whether ``fetch`` reads message id ``sid`` on its own (a well-formed id of an in-scope channel, not
    a whole channel's ``<channel>:*``)."""
    cid, _, ts = sid.partition(":")
    return bool(cid and ts) and ts != ALL and cid in scoped


def _asks(msg: Mapping[str, Any], shown: bool, active: bool) -> bool:
    """Whether a planned message needs a request: its thread's replies, or the files it shows."""
    files = msg.get("files")
    return active or (shown and isinstance(files, list) and bool(files))


def create(config: SourceConfig, stats: CallStats) -> SlackConnector:
    return SlackConnector(config, stats)


_CHANNEL_RE = re.compile(r"<#([CG][A-Z0-9]+)(?:\|[^>]*)?>")


def _ids_in(value: Any, users: set[str], channels: set[str]) -> None:
    """Every ``user_id`` and ``channel_id`` string inside Block Kit blocks (the users and channels a
    blocks-only message names), added to ``users`` and ``channels``: one walk for both."""
    # Lists and scalars first: each is answered in C, where a scalar checked against Mapping would go
    # through the ABC's Python-level check (a message's blocks are mostly strings).
    if isinstance(value, list):
        for v in value:
            _ids_in(v, users, channels)
    elif value is not None and not isinstance(value, str | int | float) and isinstance(value, JSON_OBJECT):
        for k, v in value.items():
            if isinstance(v, str):
                if k == "user_id":
                    users.add(v)
                elif k == "channel_id":
                    channels.add(v)
            else:
                _ids_in(v, users, channels)
