"""Confluence client: enumerate / fetch pages with everything the mapping needs (ACL facts included).

Flavour: a base URL ending in ``/wiki`` (or on ``*.atlassian.net``) is Confluence Cloud, anything else
Server/Data Center. Cloud full runs list pages per space with REST v2 (cursor paging, ``_links.next``)
and read each page through v1 ``content/{id}`` for what v2 lacks (storage body with ancestors,
restrictions, labels, comments, attachments in one call). Server full runs list v1 ``content`` per
space with the same expansions (start/limit). Incremental runs (``since`` given) on both use CQL
``type in (page, blogpost, comment, attachment) and lastmodified >= "yyyy-MM-dd HH:mm"`` through
``content/search``: a changed comment or attachment (which leaves its page's lastmodified alone)
makes its page or blog post (``container``) fetched again.

Time zones: Confluence reads CQL dates in the *API user's* time zone and only to the minute. We ask
``/rest/api/user/current`` for ``timeZone``, convert ``since`` (UTC) into that zone and round the minute
*down*, so the window can only grow. When the zone is unknown we format in UTC and widen the window
by 14 hours (the largest UTC offset): over-fetching is harmless (loads are idempotent), a gap is not.
The pipeline adds its own overlap look-back on top.

Checkpoints: ``{"mode": "full", "space": i, "cursor"|"start": ...}`` or ``{"mode": "since", "start": n}``;
each is emitted after the page of items it covers.

Directories (decision 125, ``connectors.directories``): every run leaves the space list, each space's read
permission, each group's members and each Cloud group's name it read for the next runs of the source; a run
that fetches pages by id takes them while younger than ``directory_ttl``. A page whose space the kept list
lacks makes it read the list anew before the page is taken for gone. Ancestors' restrictions are page
content: always read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from connectors.atlassian import auth_headers, user_identity
from connectors.attachments import AttachmentReader
from connectors.base import (
    CallStats,
    Checkpoint,
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
from connectors.confluence.context import ConfluenceItemContext
from connectors.confluence.manifest import MANIFEST
from connectors.confluence.mapping import group_subjects, restriction_principals
from connectors.directories import SourceDirectories
from connectors.fanout import Ahead, FanOut, call
from connectors.http import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT, HttpError, SourceHttp
from connectors.payload import JSON_OBJECT, listing_page
from connectors.payload import dig as _get
from connectors.payload import results as _results
from connectors.timeutil import parse_time, window_literal

_BASE_EXPAND = (
    "body.storage,ancestors,version,history,space,metadata.labels,"
    "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
)
_PAGE_LINK_RE = re.compile(r"<ri:page\b([^>]*)/?>")
_ATTR_RE = re.compile(r'(ri:content-title|ri:space-key)="([^"]*)"')
_GONE = {"trashed", "deleted"}
# Content kinds a full run lists per space, in order (blog posts were never requested before issue 13).
_KINDS = ("page", "blogpost")


_NOT_FETCHED = object()  # no restriction was fetched ahead for this ancestor


@dataclass(frozen=True, slots=True)
class _Read:
    """One page as read on the fan-out: its payload (with every attachment listed) and the attachments'
    text, or the error that kept it from being read."""

    page_id: str
    payload: Any = None
    error: HttpError | None = None
    texts: dict[str, str] | None = None
    reasons: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class _SinceRead:
    """One read an incremental listing page asks for: a changed page as listed, or the page a changed
    comment or attachment belongs to (read whole)."""

    space_key: str | None
    payload: Any = None
    parent_id: str | None = None


class ConfluenceConnector:
    manifest = MANIFEST

    def __init__(self, config: SourceConfig, stats: CallStats, *, page_size: int = 50, max_wait: float = 30.0) -> None:
        base = config.base_url.rstrip("/")
        host = urlsplit(base).netloc
        self.cloud = base.endswith("/wiki") or host.endswith(".atlassian.net")
        if self.cloud and not base.endswith("/wiki"):
            base += "/wiki"
        self.base_url = base
        self.config = config
        self.stats = stats
        self.page_size = page_size
        self.http = SourceHttp(
            base,
            headers=auth_headers(config.credential),
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
        filters = {f.key: f.default for f in MANIFEST.content_filters}
        filters.update(config.content_filters)
        self.filters = filters
        expand = _BASE_EXPAND
        if filters["comments"]:
            expand += ",children.comment.body.storage,children.comment.history"
        if filters["attachments"]:
            expand += ",children.attachment"
        self.expand = expand
        self.attachments = AttachmentReader(self.http, stats, "confluence")
        self.fanout = FanOut(config.fanout, name="harvester-confluence", listing_ahead=config.listing_ahead)
        self._space_read: dict[str, dict[str, Any] | None] = {}
        # A space's readers, an ancestor's restriction and a group's members are tuples, one per space,
        # ancestor or group, that every page under it shares: the mapping's ACL memo finds them at O(1)
        # a page instead of copying them (decision 125).
        self._restrictions: dict[str, dict[str, tuple[str, ...]] | None] = {}
        self._groups: dict[str, tuple[str, ...] | None] = {}
        self._group_names: dict[str, str | None] = {}  # Cloud group id -> name (None: unknown)
        # The names known so far, one dict replaced (not changed) when a name is learned: each page's
        # context holds the dict as it was, and a page no longer copies it twice (decision 125).
        self._names_known: dict[str, str] = {}
        self._titles: dict[str, str | None] = {}
        self._tz: ZoneInfo | bool | None = False  # False: not asked yet
        # A run that fetches by id takes the directories an earlier run of the source read (the space list,
        # spaces' read permissions, groups' members, Cloud group names) while they are young enough
        # (connectors.directories, decision 125); every other run reads its own.
        self._kept = SourceDirectories("confluence", config)

    # ------------------------------------------------------------ Connector protocol

    def probe(self) -> ProbeStatus:
        try:
            self.http.get_json("/rest/api/user/current")
        except SourceAuthFailed:
            return "auth_failed"
        except (SourceUnreachable, HttpError):
            return "unreachable"
        return "ok"

    def enumerate(self, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
        cp = dict(checkpoint or {})
        if since is None:
            yield from self._full(cp)
        else:
            yield from self._since(since, cp)

    def fetch(self, ids: list[tuple[SourceType, str]]) -> Iterator[RawItem | ItemError | ItemGone]:
        self._kept.taking = True
        try:
            yield from self._fetch(ids)
        finally:
            self._kept.taking = False

    def _fetch(self, ids: list[tuple[SourceType, str]]) -> Iterator[RawItem | ItemError | ItemGone]:
        # The space list an earlier run left (with what its read noted), else this run's own.
        taken = self._kept.get("spaces", *self._space_list_depends_on())
        scoped = {s["key"] for s in (self._spaces() if taken is None else taken[0])}
        # Each page is one read with its attachments, as in a listing: a few at a time (connectors.fanout),
        # handed back in the order asked. An items-scoped run asks for at most a page's worth of ids.
        pages = [page_id for source_type, page_id in ids if source_type == "page" and not page_id.endswith(":*")]
        fetched = list(self.fanout.ordered(self._read, pages))
        if taken is not None:
            if any(key not in scoped for key in _live_spaces(fetched)):
                # A space the kept list does not have may be new since (created, or made visible to the
                # credential): the list is read anew before any of its pages is taken for gone.
                scoped = {s["key"] for s in self._spaces()}
            else:
                self._note_unseen(taken[1])  # what the read that left the list noted, now that it stands
        # Ancestors' read restrictions read ahead for these pages: ``_inherited`` takes each at the point
        # it would have requested it, so what it learns and notes, and in which order, is what one-by-one
        # reading gave. What this fetch did not use goes with it.
        parked = self._read_facts(
            [
                (r.payload, _space_key(r.payload))
                for r in fetched
                if isinstance(r.payload, Mapping) and r.payload.get("status") not in _GONE
            ]
        )
        reads = iter(fetched)
        for source_type, page_id in ids:
            if source_type != "page":
                yield ItemError(source_type, page_id, "not_found", "confluence serves pages only")
            elif page_id.endswith(":*"):
                yield from self._subtree(page_id)
            else:
                yield self._fetched(page_id, next(reads), scoped, parked)

    def _fetched(
        self, page_id: str, read: _Read, scoped: set[str], parked: dict[str, Any]
    ) -> RawItem | ItemError | ItemGone:
        """What ``fetch`` yields for page ``page_id`` once read; ``parked``: as ``_inherited`` takes it."""
        if read.error is not None:
            if read.error.status in (404, 410):
                return ItemGone("page", page_id)
            return ItemError("page", page_id, read.error.reason, read.error.detail)
        payload = read.payload
        if not isinstance(payload, Mapping):
            return ItemError("page", page_id, "malformed", "content is not a JSON object")
        space = _space_key(payload)
        # A page moved out of scope is gone for this source; one without a space is left to the
        # mapping, which rejects it as malformed.
        if payload.get("status") in _GONE or (space is not None and space not in scoped):
            return ItemGone("page", page_id)
        # A page a listing skips (archived, with the filter off) was read without its attachments.
        return self._raw(payload, space, read if read.page_id else None, parked)

    def _subtree(self, pseudo_id: str) -> Iterator[RawItem | ItemError | ItemGone]:
        """Every descendant of a page (its inherited ACL changed); "<id>:*" names a fetch, not a page."""
        root = pseudo_id[:-2]
        start = 0
        try:
            while True:
                params = {
                    "cql": f"ancestor = {root} and type = page",
                    "start": start,
                    "limit": self.page_size,
                    "expand": self.expand,
                }
                data = self.http.get_json("/rest/api/content/search", params)
                results = _results(data)
                for payload in results:
                    for emitted in self._emit(payload, _space_key(payload)):
                        if isinstance(emitted, RawItem):
                            yield emitted
                start += len(results)
                if not results or not _get(data, "_links", "next"):
                    break
        except HttpError as exc:
            yield ItemError("page", pseudo_id, exc.reason, exc.detail)
            return
        yield ItemGone("page", pseudo_id)  # resolves a dead letter of the pseudo-id, if one was queued

    def has_delta(self, since: datetime) -> bool:
        data = self.http.get_json("/rest/api/content/search", {"cql": self._cql(since, order=False), "limit": 1})
        # An answer without its array (a login page's JSON) is not "nothing new" (decision 164).
        return bool(
            listing_page(data, "results", "confluence delta check failed: GET /rest/api/content/search")["results"]
        )

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]:
        """Pages per in-scope space as CQL reports them (``totalSize`` of a one-row search)."""
        scoped = [s["key"] for s in self._spaces()]
        keys = sorted({*containers, *scoped})
        asked = [key for key in keys if key in scoped]
        # One count a space, a few at a time (decision 139): an audit of fifty spaces is fifty round trips.
        counted = dict(zip(asked, self.fanout.ordered(self._space_count, asked), strict=True))
        # A space held but out of scope now: the source has none of it in scope.
        return {key: counted.get(key, 0) for key in keys}

    def _space_count(self, key: str) -> int | None:
        """Request only (safe on the fan-out): the pages of space ``key`` as CQL reports them (``totalSize``
        of a one-row search); None when it cannot be read."""
        try:
            data = self.http.get_json("/rest/api/content/search", {"cql": f'type=page and space = "{key}"', "limit": 1})
        except HttpError:
            return None
        total = data.get("totalSize") if isinstance(data, Mapping) else None
        return total if isinstance(total, int) and not isinstance(total, bool) else None

    def unseen_scope(self) -> list[str]:
        """Allow-listed spaces missing from the spaces the credential can list."""
        if self.config.scope_mode != "selected":
            return []
        visible = {s["key"] for s in self._spaces()}
        return [k for k in dict.fromkeys(str(s) for s in self.config.scope_list) if k not in visible]

    def close(self) -> None:
        self.fanout.close()
        self.http.close()

    # ------------------------------------------------------------ enumeration

    def _full(self, cp: dict[str, Any]) -> Iterator[Emitted]:
        """Per space, its pages then its blog posts (both are "page" entities; ``content_type`` tells)."""
        spaces = self._spaces()
        # (space, kind, where to start): the checkpoint's for its own listing, the beginning for the rest.
        listings: list[tuple[int, str, Mapping[str, Any]]] = []
        for si in range(int(cp.get("space", 0)), len(spaces)):
            position = cp if int(cp.get("space", 0)) == si else {}
            first = _KINDS.index(position["kind"]) if position.get("kind") in _KINDS else 0
            listings += [(si, kind, position if kind == _KINDS[first] else {}) for kind in _KINDS[first:]]

        def first_page(listing: tuple[int, str, Mapping[str, Any]]) -> Callable[[], Any]:
            return partial(self._first_listing, spaces[listing[0]], listing[1])

        with closing(self.fanout.openings(listings, first_page)) as units:
            for (si, kind, at), opening in units:
                if self.cloud:
                    yield from self._full_space_v2(si, spaces[si], at.get("cursor"), kind, opening)
                else:
                    yield from self._full_space_v1(si, spaces[si], int(at.get("start", 0)), kind, opening)

    def _first_listing(self, space: Mapping[str, Any], kind: str) -> Any:
        """Request only (safe on the fan-out): the first page of a space's pages or blog posts."""
        return self._v2_listing(space, kind, None) if self.cloud else self._v1_listing(space, kind, 0)

    def _v2_listing(self, space: Mapping[str, Any], kind: str, cursor: str | None) -> Any:
        path = f"/api/v2/spaces/{space['id']}/{'pages' if kind == 'page' else 'blogposts'}"
        return self._list(path, {"limit": min(self.page_size, 250), "cursor": cursor})

    def _v1_listing(self, space: Mapping[str, Any], kind: str, start: int) -> Any:
        params = {
            "type": kind,
            "spaceKey": space["key"],
            "start": start,
            "limit": self.page_size,
            "expand": self.expand,
        }
        return self._list("/rest/api/content", params)

    @staticmethod
    def _after(si: int, kind: str) -> dict[str, Any]:
        """Checkpoint position once ``kind`` of space ``si`` is done: the next kind, or the next space."""
        rest = _KINDS[_KINDS.index(kind) + 1 :]
        return {"mode": "full", "space": si, "kind": rest[0]} if rest else {"mode": "full", "space": si + 1}

    def _full_space_v2(
        self, si: int, space: Mapping[str, Any], cursor: str | None, kind: str, opening: Ahead[Any] | None = None
    ) -> Iterator[Emitted]:
        """``opening``: the listing's first page (``cursor`` None), already asked for."""

        def following(data: Any) -> Callable[[], Any] | None:
            nxt = _next_cursor(data)
            return partial(self._v2_listing, space, kind, nxt) if nxt else None

        first = partial(self._v2_listing, space, kind, cursor)
        with closing(self.fanout.listing(first, following, opening=opening)) as pages:
            for data in pages:
                # The v2 list names pages; each page's body, ACL facts and attachments are one read per page,
                # done a few at a time (connectors.fanout) and yielded in the list's order.
                ids = [str(_mapping(page).get("id")) for page in _results(data)]
                with closing(self.fanout.ordered(self._read, ids)) as reads:
                    for read in reads:
                        yield from self._emit_read(read, space["key"])
                cursor = _next_cursor(data)
                here = {"mode": "full", "space": si, "kind": kind, "cursor": cursor}
                yield Checkpoint(here if cursor else self._after(si, kind))

    def _full_space_v1(
        self, si: int, space: Mapping[str, Any], start: int, kind: str, opening: Ahead[Any] | None = None
    ) -> Iterator[Emitted]:
        """``opening``: the listing's first page (``start`` 0), already asked for."""

        def following(data: Any) -> Callable[[], Any] | None:
            results = _results(data)
            more = bool(results) and bool(_get(data, "_links", "next"))
            return partial(self._v1_listing, space, kind, start + len(results)) if more else None

        first = partial(self._v1_listing, space, kind, start)
        with closing(self.fanout.listing(first, following, opening=opening)) as pages:
            for data in pages:
                results = _results(data)
                more = following(data) is not None
                start += len(results)
                with closing(self.fanout.ordered(self._complete, results)) as reads:
                    for read in reads:
                        yield from self._emit_read(read, space["key"])
                here = {"mode": "full", "space": si, "kind": kind, "start": start}
                yield Checkpoint(here if more else self._after(si, kind))

    def _since(self, since: datetime, cp: dict[str, Any]) -> Iterator[Emitted]:
        start = int(cp.get("start", 0)) if cp.get("mode") == "since" else 0
        cql = self._cql(since)

        def listing(at: int) -> Any:
            params = {"cql": cql, "start": at, "limit": self.page_size, "expand": self.expand}
            return self._list("/rest/api/content/search", params)

        def following(data: Any) -> Callable[[], Any] | None:
            results = _results(data)
            return partial(listing, start + len(results)) if results and _get(data, "_links", "next") else None

        # A changed comment or attachment does not change its page's lastmodified: CQL finds the child,
        # and the page it belongs to is fetched again (once per run), so its text sections are current.
        parents_done: set[str] = set()
        with closing(self.fanout.listing(partial(listing, start), following)) as pages:
            for data in pages:
                results = _results(data)
                # What to read is decided on this thread, in the listing's order (it depends only on the
                # listing); the reads go out a few at a time (connectors.fanout) and come back in that order.
                todo: list[_SinceRead] = []
                for payload in results:
                    kind = payload.get("type") if isinstance(payload, Mapping) else None
                    if kind in ("comment", "attachment"):
                        parent = _get(payload, "container", "id")
                        if parent is not None and str(parent) not in parents_done:
                            parents_done.add(str(parent))
                            todo.append(_SinceRead(_space_key(payload) or "", parent_id=str(parent)))
                        continue
                    if isinstance(payload, Mapping):
                        parents_done.add(str(payload.get("id")))
                    todo.append(_SinceRead(_space_key(payload), payload=payload))
                with closing(self.fanout.ordered(self._since_read, todo)) as reads:
                    for one, read in zip(todo, reads, strict=True):
                        yield from self._emit_read(read, one.space_key)
                start += len(results)
                total = data.get("totalSize") if isinstance(data, Mapping) else None
                yield Checkpoint({"mode": "since", "start": start}, total if isinstance(total, int) else None)

    def _emit(self, payload: Any, space_key: str | None) -> Iterator[Emitted]:
        yield from self._emit_read(self._complete(payload), space_key)

    # Requests only, no run state: these three run on the fan-out's threads.
    def _since_read(self, one: _SinceRead) -> _Read:
        return self._read(one.parent_id) if one.parent_id is not None else self._complete(one.payload)

    def _read(self, page_id: str) -> _Read:
        try:
            payload = self.http.get_json(f"/rest/api/content/{page_id}", {"expand": self.expand})
        except HttpError as exc:
            return _Read(page_id, error=exc)
        return self._complete(payload)

    def _complete(self, payload: Any) -> _Read:
        """A listed page with its attachments paged in and their text read (skipped pages: as they are)."""
        if not self._live(payload):
            return _Read("", payload)
        return self._with_attachments(payload)

    def _with_attachments(self, payload: Mapping[str, Any]) -> _Read:
        page_id = str(payload.get("id"))
        payload = self._all_attachments(page_id, payload)
        texts, reasons = self._attachment_texts(page_id, payload)
        return _Read(page_id, payload, texts=texts, reasons=reasons)

    def _live(self, payload: Any) -> bool:
        if not isinstance(payload, JSON_OBJECT):
            return False
        status = payload.get("status")
        return not (status in _GONE or (status == "archived" and not self.filters["archived"]))

    def _read_facts(self, pages: Sequence[tuple[Mapping[str, Any], str | None]]) -> dict[str, Any]:
        """Read, a few at a time (connectors.fanout), what ``_raw`` will look up for the fetched ``pages``
        and no earlier page read: their ancestors' read restrictions and the pages their links name by
        title. Against a real Confluence each is 100-500 ms, and ``_raw`` asked for them one after another:
        most of an items-scoped fetch's time. Listings do not use it: there the pool reads the next pages
        while ``_raw`` waits, and gathering a page first measured slower (decision 71). Returns the
        ancestors' restrictions by page id, for ``_inherited``; the titles go to their cache."""
        ancestors: dict[str, None] = {}
        titles: dict[str, tuple[str, str]] = {}
        own: set[str] = set()  # pages of the batch before this one that carry their own restrictions
        for payload, space_key in pages:
            path = payload.get("ancestors")
            for a in path if isinstance(path, list) else []:
                aid = str(a.get("id")) if isinstance(a, Mapping) and a.get("id") else None
                if aid and aid not in self._restrictions and aid not in own:
                    ancestors[aid] = None
            if isinstance(payload.get("restrictions"), Mapping):
                own.add(str(payload.get("id")))  # ``_raw`` keeps them before a later page asks
            self._learn_titles(payload)
            for key, space, title in self._titled_links(payload, space_key):
                if key not in self._titles:
                    titles[key] = (space, title)
        reads: list[Callable[[], Any]] = [partial(self._read_restriction, aid) for aid in ancestors]
        reads += [partial(self._read_title, space, title) for space, title in titles.values()]
        found = list(self.fanout.ordered(call, reads))
        # A title's answer has no side effect beyond the cache: kept as ``_link_targets`` would keep it.
        self._titles.update(zip(titles, found[len(ancestors) :], strict=True))
        return dict(zip(ancestors, found[: len(ancestors)], strict=True))

    def _emit_read(self, read: _Read, space_key: str | None) -> Iterator[Emitted]:
        if read.error is not None:
            yield ItemError("page", read.page_id, read.error.reason, read.error.detail)
        elif self._live(read.payload):
            yield self._raw(read.payload, space_key, read)

    def _raw(
        self,
        payload: Mapping[str, Any],
        space_key: str | None,
        read: _Read | None = None,
        parked: dict[str, Any] | None = None,
    ) -> RawItem:
        """The page as an item, with the ACL facts and link targets its mapping needs; ``parked``:
        ancestors' restrictions read ahead (``fetch``), taken by ``_inherited``."""
        page_id = str(payload.get("id"))
        if read is None:
            read = self._with_attachments(payload)
        payload, texts, reasons = read.payload, read.texts, read.reasons
        if isinstance(payload.get("restrictions"), Mapping):
            own = _get(payload, "restrictions", "read", "restrictions")
            if isinstance(own, Mapping):
                self._learn_group_names(_results(own.get("group")))
                self._restrictions[page_id] = restriction_principals(own, self._group_names_known())
            else:
                self._restrictions[page_id] = None
        space_read = self._space_permissions(space_key) if space_key else None
        inherited = self._inherited(payload, parked)
        levels = [*(inherited or []), self._restrictions.get(page_id) or {}]
        groups = {g for r in levels for g in r.get("groups", [])}
        if isinstance(space_read, Mapping) and any(r.get("users") or r.get("groups") for r in levels):
            # A restricted page is visible to a user who passes every restriction AND the space
            # permission; space access usually comes through groups, so their members are needed too
            # (without them every restricted page ended up visible to nobody).
            groups |= set(space_read.get("groups") or [])
        context = ConfluenceItemContext(
            base_url=self.base_url,
            space_read=space_read,
            inherited_restrictions=inherited,
            page_ids=self._link_targets(payload, space_key),
            group_members={g: m for g in sorted(groups) if (m := self._members(g)) is not None} if groups else None,
            attachment_text=texts,
            attachment_reasons=reasons,
            group_names=self._group_names_known() or None,
        )
        return RawItem(
            source_type="page",
            source_entity_id=page_id,
            payload=payload,
            fetched_at=datetime.now(UTC),
            source_updated_at=parse_time(_get(payload, "version", "when")),
            container=space_key,
            context=context,
        )

    # ------------------------------------------------------------ attachments (issue 12 §3)

    def _all_attachments(self, page_id: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        """The payload with every attachment: the ``children.attachment`` expansion holds one page of
        them (25 on Cloud); when it says there are more, the rest come from ``child/attachment``."""
        listed = _get(payload, "children", "attachment")
        if not self.filters["attachments"] or not isinstance(listed, Mapping) or not _get(listed, "_links", "next"):
            return payload
        found: list[Any] = []
        start = 0
        while True:
            params = {"start": start, "limit": 100, "expand": "version"}
            try:
                data = self.http.get_json(f"/rest/api/content/{page_id}/child/attachment", params)
            except HttpError as exc:
                if exc.transient:
                    raise
                return payload  # the first page of them stays: nothing listed is dropped
            batch = _results(data)
            found += batch
            start += len(batch)
            if not batch or not _get(data, "_links", "next"):
                break
        children = {**_mapping(payload.get("children")), "attachment": {**listed, "results": found, "size": len(found)}}
        return {**payload, "children": children}

    def _attachment_texts(
        self, page_id: str, payload: Mapping[str, Any]
    ) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """Text and PDF attachments of the page read within the cap; why the others stay links."""
        if not self.filters["attachments"]:
            return None, None
        texts: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for a in _results(_get(payload, "children", "attachment")):
            aid = a.get("id")
            if aid is None:
                continue
            size = _get(a, "extensions", "fileSize")
            download = _get(a, "_links", "download")
            got = self.attachments.read(
                f"page {page_id}",
                download if isinstance(download, str) else None,
                content_type=str(_get(a, "metadata", "mediaType") or _get(a, "extensions", "mediaType") or ""),
                filename=str(a.get("title") or ""),
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            )
            if got.text is not None:
                texts[str(aid)] = got.text
            elif got.reason:
                reasons[str(aid)] = got.reason
        return texts or None, reasons or None

    # ------------------------------------------------------------ ACL facts (cached per run)

    def _space_permissions(self, key: str) -> dict[str, Any] | None:
        if key not in self._space_read:
            taken = self._kept.get_item("space_read", key)
            if taken is not None:
                read: dict[str, Any] | None = taken[0]
                # The Cloud group names the read learns along (taken too, or asked again when older).
                self._learn_group_names([{"id": gid} for gid in taken[1]])
                self._space_read[key] = read
                return read
            try:
                data = self.http.get_json(f"/rest/api/space/{key}", {"expand": "permissions"})
            except HttpError:
                data = None
            perms = _get(data, "permissions")
            ids: list[str] = []
            for p in perms if isinstance(perms, list) else []:
                subjects = _results(_get(p, "subjects", "group"))
                self._learn_group_names(subjects)
                ids += _unnamed_group_ids(subjects)
            read = _space_read(data, self._group_names_known())
            self._space_read[key] = read
            # Kept only whole: not when unreadable, nor with a group whose name could not be learned.
            if read is not None and all(self._group_names.get(gid) for gid in ids):
                self._kept.put_item("space_read", key, (read, tuple(ids)))
        return self._space_read[key]

    def _inherited(self, payload: Mapping[str, Any], parked: dict[str, Any] | None) -> list[dict[str, Any]] | None:
        """The read restrictions of the page's ancestors that restrict anyone, root first (None: one is
        unknown). An ancestor's restrictions are read once per run; one in ``parked`` was read ahead and
        is taken from there (and removed) instead of requested."""
        ancestors = payload.get("ancestors")
        if not isinstance(ancestors, list):
            return None
        out: list[dict[str, Any]] = []
        for a in ancestors:
            aid = str(a.get("id")) if isinstance(a, JSON_OBJECT) else None
            if not aid:
                return None
            if aid not in self._restrictions:
                fetched = parked.pop(aid, _NOT_FETCHED) if parked is not None else _NOT_FETCHED
                data = self._read_restriction(aid) if fetched is _NOT_FETCHED else fetched
                inner = _get(data, "restrictions")
                if isinstance(inner, Mapping):
                    self._learn_group_names(_results(inner.get("group")))
                    self._restrictions[aid] = restriction_principals(inner, self._group_names_known())
                else:
                    self._restrictions[aid] = None
            r = self._restrictions[aid]
            if r is None:
                return None  # one unknown ancestor makes the whole path unknown: fail closed
            if r["users"] or r["groups"]:
                out.append({"id": aid, **r})
        return out

    def _read_restriction(self, aid: str) -> Any:
        """Request only (safe on the fan-out): page ``aid``'s read restrictions; None when unreadable (the
        path through it is then unknown, and its pages fail closed)."""
        try:
            return self.http.get_json(
                f"/rest/api/content/{aid}/restriction/byOperation/read",
                {"expand": "restrictions.user,restrictions.group"},
            )
        except HttpError:
            return None

    def _learn_group_names(self, subjects: list[Any]) -> None:
        """Names of Cloud groups named by id only (issue 13 §1), through ``/rest/api/group/by-id``, once
        per run each; an id that cannot be looked up stays an id (it grants ``group:confluence:id:<id>``)."""
        for gid in _unnamed_group_ids(subjects):
            if gid in self._group_names:
                continue
            taken = self._kept.get_item("group_names", gid)
            if taken is not None:
                self._group_names[gid] = taken
                self._names_known = {**self._names_known, gid: taken}
                continue
            try:
                name = _get(self.http.get_json("/rest/api/group/by-id", {"id": gid}), "name")
            except HttpError as exc:
                if exc.transient:
                    raise
                self.stats.note(f"confluence group id {gid}: name unreadable ({exc.status}); granted by id only")
                name = None
            self._group_names[gid] = name if isinstance(name, str) and name else None
            if isinstance(name, str) and name:
                self._names_known = {**self._names_known, gid: name}
                self._kept.put_item("group_names", gid, name)

    def _group_names_known(self) -> dict[str, str]:
        return self._names_known

    def _members(self, group: str) -> tuple[str, ...] | None:
        if group.startswith("id:"):
            return None  # a group known by id only: its members cannot be listed by name
        if group not in self._groups:
            taken = self._kept.get_item("group_members", group)
            if taken is not None:
                members_taken: tuple[str, ...] = taken
                self._groups[group] = members_taken
                return members_taken
            members: list[str] | None = []
            start = 0
            try:
                while members is not None:
                    data = self.http.get_json(f"/rest/api/group/{group}/member", {"start": start, "limit": 200})
                    batch = _results(data)
                    members += [u for u in (_user_id(x) for x in batch) if u]
                    start += len(batch)
                    if not batch or not _get(data, "_links", "next"):
                        break
            except HttpError:
                members = None
            self._groups[group] = tuple(members) if members is not None else None
            if members is not None:
                self._kept.put_item("group_members", group, self._groups[group])
        return self._groups[group]

    def _link_targets(self, payload: Mapping[str, Any], space_key: str | None) -> dict[str, str]:
        self._learn_titles(payload)
        out: dict[str, str] = {}
        for key, space, title in self._titled_links(payload, space_key):
            if key not in self._titles:
                self._titles[key] = self._read_title(space, title)
            target = self._titles[key]
            if target:
                out[key] = target
        return out

    def _learn_titles(self, payload: Mapping[str, Any]) -> None:
        """Note the ``space/title`` of the page itself and of its ancestors (a page's ancestors are pages of
        its space), as a look-up by title would answer them (decision 129): most links by title name a page
        the run has read or the page's own parent ("Part of …"), and each look-up is a round trip on the
        thread that emits, one after another. Only current pages (a look-up by title finds current pages,
        type page by default); a title already known keeps its first answer, as the look-ups' cache does."""
        space = _space_key(payload)
        if space is None:
            return
        pages = [payload] if payload.get("type") == "page" else []
        ancestors = payload.get("ancestors")
        pages += [a for a in ancestors if isinstance(a, Mapping)] if isinstance(ancestors, list) else []
        for page in pages:
            title, page_id = page.get("title"), page.get("id")
            if page.get("status") == "current" and isinstance(title, str) and title and page_id is not None:
                self._titles.setdefault(f"{space}/{title}", str(page_id))

    @staticmethod
    def _titled_links(payload: Mapping[str, Any], space_key: str | None) -> Iterator[tuple[str, str, str]]:
        """(``space/title`` key, space, title) of every page the storage body links to by title."""
        storage = _get(payload, "body", "storage", "value")
        if not isinstance(storage, str):
            return
        for m in _PAGE_LINK_RE.finditer(storage):
            attrs = dict(_ATTR_RE.findall(m.group(1)))
            title = attrs.get("ri:content-title")
            if title:
                space = attrs.get("ri:space-key") or space_key
                yield f"{space}/{title}", str(space), title

    def _read_title(self, space: str, title: str) -> str | None:
        """Request only (safe on the fan-out): the id of the page titled ``title`` in ``space``, if any."""
        try:
            hits = _results(self.http.get_json("/rest/api/content", {"spaceKey": space, "title": title, "limit": 1}))
        except HttpError:
            return None
        return str(hits[0]["id"]) if hits else None

    # ------------------------------------------------------------ spaces, CQL

    def _spaces(self) -> list[dict[str, Any]]:
        """In-scope spaces: allow-list when scope_mode=selected, deny-list when all."""
        listed = {str(s) for s in self.config.scope_list}
        out: list[dict[str, Any]] = []
        start = 0
        while True:
            data = self._list("/rest/api/space", {"start": start, "limit": 100})
            batch = _results(data)
            for s in batch:
                key = str(s.get("key"))
                personal = s.get("type") == "personal" or key.startswith("~")
                if self.config.scope_mode == "selected":
                    keep = key in listed
                else:
                    keep = key not in listed and (not personal or self.filters["personal_spaces"])
                if keep:
                    out.append({"key": key, "id": s.get("id"), "name": s.get("name")})
            start += len(batch)
            if not batch or (not _get(data, "_links", "next") and len(batch) < 100):
                break
        unseen = tuple(sorted(listed - {s["key"] for s in out})) if self.config.scope_mode == "selected" else ()
        # Left for the next runs that fetch by id, with what it notes; nobody changes either afterwards.
        self._kept.put("spaces", (tuple(out), unseen), *self._space_list_depends_on())
        self._note_unseen(unseen)
        return out

    def _note_unseen(self, keys: Sequence[str]) -> None:
        """Spaces the allow-list names but the credential cannot see (issue 12, bad input): named in the run's
        notes and kept from deletion; the other spaces run as usual."""
        for key in keys:
            self.stats.unreadable(
                key,
                f"confluence space {key} named in scope_list is not visible to the credential; "
                "its pages were not read and nothing of it was changed",
            )

    # ------------------------------------------------------------ directories kept between runs (decision 125)

    def _space_list_depends_on(self) -> tuple[Hashable, ...]:
        """Which spaces are in scope depends on the scope and on the personal-spaces filter as well."""
        return (*self._kept.scope, bool(self.filters["personal_spaces"]))

    def _cql(self, since: datetime, order: bool = True) -> str:
        if self._tz is False:
            # The spaces and the user's zone are both round trips before the first search, and neither needs
            # the other: asked together (decision 139). A failed space list is raised first, as in turn.
            listed, _ = self.fanout.ordered(call, [self._spaces, self._user_tz])
            keys = [s["key"] for s in cast(list[dict[str, Any]], listed)]
        else:
            keys = [s["key"] for s in self._spaces()]
        spaces = ", ".join(f'"{k}"' for k in keys) or '"-none-"'
        # Blog posts are "page" entities too (a full run lists them per space): polling must see their edits.
        types = ["page", "blogpost"]
        if self.filters["comments"]:
            types.append("comment")
        if self.filters["attachments"]:
            types.append("attachment")
        cql = f'type in ({", ".join(types)}) and lastmodified >= "{self.cql_time(since)}" and space in ({spaces})'
        return cql + " order by lastmodified" if order else cql

    def cql_time(self, since: datetime) -> str:
        """``since`` as Confluence reads it: the API user's zone, minute precision, rounded down."""
        return window_literal(since, self._user_tz(), "%Y-%m-%d %H:%M")

    def _user_tz(self) -> ZoneInfo | None:
        if self._tz is False:
            try:
                name = _get(self.http.get_json("/rest/api/user/current"), "timeZone")
                self._tz = ZoneInfo(name) if isinstance(name, str) and name else None
            except (HttpError, ZoneInfoNotFoundError, ValueError):
                self._tz = None
        return self._tz if isinstance(self._tz, ZoneInfo) else None

    def _list(self, path: str, params: Mapping[str, Any]) -> Any:
        """A list call: failing it means the run cannot enumerate, so it ends the run (no deletes). So does an
        answer without its ``results`` array (connectors.payload.listing_page)."""
        try:
            data = self.http.get_json(path, params)
        except HttpError as exc:
            raise SourceError(f"confluence listing failed: {exc.detail}") from exc
        return listing_page(data, "results", f"confluence listing failed: GET {path}")


# ---------------------------------------------------------------- helpers


def _space_read(data: Any, names: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    perms = _get(data, "permissions")
    if not isinstance(perms, list):
        return None
    users: list[str] = []
    groups: list[str] = []
    anonymous = False
    for p in perms:
        if not isinstance(p, Mapping) or _get(p, "operation", "operation") != "read":
            continue
        anonymous = anonymous or bool(p.get("anonymousAccess"))
        users += [u for u in (_user_id(x) for x in _results(_get(p, "subjects", "user"))) if u]
        groups += group_subjects(_results(_get(p, "subjects", "group")), names)
    return {"users": tuple(users), "groups": tuple(groups), "anonymous": anonymous}


def _unnamed_group_ids(subjects: Sequence[Any]) -> list[str]:
    """Ids of the Cloud group subjects named by id only (their names are looked up)."""
    out: list[str] = []
    for x in subjects:
        gid = x.get("id") if isinstance(x, Mapping) else None
        if isinstance(gid, str) and gid and not x.get("name"):
            out.append(gid)
    return out


def _live_spaces(reads: Sequence[_Read]) -> set[str]:
    """Spaces of the pages read that are not trashed or deleted: what ``_fetched`` checks against the scope."""
    out: set[str] = set()
    for r in reads:
        key = _space_key(r.payload) if isinstance(r.payload, Mapping) and r.payload.get("status") not in _GONE else None
        if key is not None:
            out.add(key)
    return out


def _user_id(user: Any) -> str | None:
    """Identity by exact email, lower-case (seed 000); ``accountid:<id>`` when Confluence hides it."""
    return user_identity(user)


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _space_key(payload: Any) -> str | None:
    key = _get(payload, "space", "key")
    return str(key) if key else None


def _next_cursor(data: Any) -> str | None:
    nxt = _get(data, "_links", "next")
    if not isinstance(nxt, str):
        return None
    values = parse_qs(urlsplit(nxt).query).get("cursor")
    return values[0] if values else None


def create(config: SourceConfig, stats: CallStats) -> ConfluenceConnector:
    return ConfluenceConnector(config, stats)
