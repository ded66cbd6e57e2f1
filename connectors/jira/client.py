"""Jira REST client implementing the Connector protocol (paging, scope, ACL facts, neighbours).

Decisions (seed 001 "Окно", seed 003 "Соседняя задача"):

- API version: ``GET /rest/api/2/serverInfo`` once; Cloud -> v3 ``/search/jql`` with
  ``nextPageToken`` (total from ``/search/approximate-count``), else v2 ``/search`` with
  ``startAt``/``total``. Filter ``force_api_v2`` pins v2.
- Incremental window: ``updated >= "yyyy/MM/dd HH:mm"``. Jira reads JQL dates in the *calling user's*
  time zone, so ``since`` (UTC) is converted to the zone ``/myself`` reports and floored to the
  minute; if the zone is unknown the window opens 14 h earlier (the widest UTC offset). The window
  can only widen, never shift later; the pipeline's look-back and content hashes absorb repeats.
- v2 offset paging can skip an item when an earlier one is updated mid-run (it moves to the end);
  each next page therefore starts ``OVERLAP`` items early and repeats of the previous page's ids are
  dropped.
- Checkpoints: ``{"phase": "scope", "api": 3, "token": ...}`` / ``{"phase": "scope", "api": 2,
  "start_at": n, "last_ids": [...]}`` after each page, ``{"phase": "neighbours", "batch": k}`` after
  each neighbour batch. A resumed run that lost the in-memory neighbour candidates re-reads them
  with a links-only pass (``fields=issuelinks``).
- Neighbours: keys linked (either direction) from enumerated issues and outside the scope
  (``key in (...) AND NOT (<scope>)``), one hop, emitted with ``context.neighbour`` set.
- ACL facts (``connectors.jira.permissions``): ``/project/{key}/permissionscheme?expand=permissions,user,
  group,projectRole,field`` (``BROWSE_PROJECTS`` grants with holders of every type: groups, users, project
  roles resolved through ``/project/{key}/role/{id}``, application roles through ``/applicationrole``,
  anyone, reporter, assignee, project lead through ``/project/{key}``, user/group custom fields read from
  the issue) and ``/issuesecurityschemes/level/member?levelId=`` (which narrows). Resolved once per
  project (and level) per run. A holder that cannot be resolved grants nobody and is named in the run's
  notes (``CallStats.note`` -> ``error_detail``); a scheme that cannot be read at all, a level whose
  members cannot be read, or a ``security`` value that is not an object with an id makes the facts
  unknown -> the mapping fails closed with ``Acl(None)``.
- ``/field`` failing: the field map falls back to Jira Cloud's default ids (epic link
  ``customfield_10014``, sprint ``customfield_10020``...) and the failure is noted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import closing
from datetime import UTC, datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from connectors.atlassian import auth_headers
from connectors.attachments import AttachmentReader
from connectors.base import (
    CallStats,
    Checkpoint,
    Emitted,
    ItemError,
    ItemGone,
    Manifest,
    Preview,
    ProbeStatus,
    RawItem,
    SourceAuthFailed,
    SourceConfig,
    SourceError,
    SourceType,
    SourceUnreachable,
)
from connectors.directories import SourceDirectories
from connectors.fanout import FanOut, call
from connectors.http import DEFAULT_TIMEOUT, HttpError, SourceHttp
from connectors.jira.context import JiraItemContext
from connectors.jira.manifest import MANIFEST, PROJECT_KEY_RE
from connectors.jira.permissions import Grants, Lookups, browse_holders, level_holders, needs, resolve
from connectors.payload import JSON_OBJECT, listing_page
from connectors.payload import obj as _obj
from connectors.timeutil import parse_time, window_literal

PAGE_SIZE = 100
OVERLAP = 5
NEIGHBOUR_BATCH = 50
DELTA_PAGE = 50
_FIELD_NAMES = {
    "planned_start": {"start date", "target start", "planned start"},
    "planned_end": {"target end", "planned end", "end date"},
}
# Jira Cloud's default ids for the agile fields, used when ``/field`` cannot be read.
CLOUD_DEFAULT_FIELDS = {
    "sprint": "customfield_10020",
    "epic_link": "customfield_10014",
    "epic_name": "customfield_10011",
    "planned_start": "customfield_10015",
}
_FIELD_CUSTOM = {
    "com.pyxis.greenhopper.jira:gh-sprint": "sprint",
    "com.pyxis.greenhopper.jira:gh-epic-link": "epic_link",
    "com.pyxis.greenhopper.jira:gh-epic-label": "epic_name",
}


def scope_clause(config: SourceConfig, hidden: frozenset[str] = frozenset()) -> str | None:
    """The base JQL of the scope (no ORDER BY), or None for the whole instance.

    Seed 000 ``scope_list``: an allow-list under ``scope_mode = 'selected'``, a deny-list under
    ``'all'`` (``project not in (...)`` and ``NOT (jql)``). Projects in ``hidden`` (the credential
    cannot see them) are left out: Jira refuses the whole JQL when one project value is unknown.
    """
    projects, jqls = _scope_items(config)
    projects = [p for p in projects if p.upper() not in hidden]
    if config.scope_mode == "all":
        denied = [f"project not in ({', '.join(dict.fromkeys(projects))})"] if projects else []
        denied.extend(f"NOT ({j})" for j in jqls)
        return " AND ".join(denied) or None
    parts = []
    if projects:
        parts.append(f"project in ({', '.join(dict.fromkeys(projects))})")
    parts.extend(f"({j})" for j in jqls)
    if not parts:
        # An empty selection means nothing is in scope, never "everything".
        return "key in (EMPTY-0)"
    return " OR ".join(parts)


def _scope_items(config: SourceConfig) -> tuple[list[str], list[str]]:
    """Project keys and JQL filters named by ``scope_list``."""
    projects: list[str] = []
    jqls: list[str] = []
    for item in config.scope_list:
        if isinstance(item, Mapping):
            if item.get("kind") == "project" and item.get("key"):
                projects.append(str(item["key"]).upper())
            elif item.get("kind") == "jql" and item.get("jql"):
                jqls.append(str(item["jql"]))
        elif isinstance(item, str) and PROJECT_KEY_RE.match(item.strip()):
            projects.append(item.strip())
        elif isinstance(item, str) and item.strip():
            jqls.append(item.strip())
    return projects, jqls


class JiraConnector:
    manifest: Manifest = MANIFEST

    def __init__(
        self,
        config: SourceConfig,
        stats: CallStats,
        *,
        page_size: int = PAGE_SIZE,
        max_attempts: int = 5,
        max_wait: float = 30.0,
    ) -> None:
        self.config = config
        self.stats = stats
        self.page_size = page_size
        self.http = SourceHttp(
            config.base_url,
            headers=auth_headers(config.credential),
            stats=stats,
            errors=MANIFEST.errors,
            max_attempts=min(max_attempts, config.max_attempts or max_attempts),
            max_wait=max_wait,
            timeout=config.timeout or DEFAULT_TIMEOUT,
            rate_limit_patience=config.rate_limit_patience,
            gate=config.rate_gate,
            max_bytes=config.response_max_bytes,
            max_seconds=config.response_max_seconds,
        )
        self.attachments = AttachmentReader(self.http, stats, "jira")
        self.fanout = FanOut(config.fanout, name="harvester-jira", listing_ahead=config.listing_ahead)
        # Asked for every issue and attachment: resolved once (a manifest scan per call was a sixth of
        # the attachment reads' own CPU, docs/performance.md).
        self._filters = {f.key: bool(config.content_filters.get(f.key, f.default)) for f in MANIFEST.content_filters}
        self._scope: str | None = None
        self._scope_checked = False
        self._hidden: frozenset[str] = frozenset()
        self._scope_project_set: frozenset[str] | None = None  # see _scope_projects
        # A run fetching by id takes the instance's facts an earlier run of this source read, while they are
        # young enough (connectors.directories, decision 125); every run leaves what it read for the next.
        self._kept = SourceDirectories("jira", config)
        self._api: int | None = None
        self._tz: ZoneInfo | None = None
        self._tz_known = False
        self._field_map: dict[str, str] | None = None
        self._project_acl: dict[str, Grants | None] = {}
        self._level_acl: dict[str, Grants | None] = {}
        self._app_roles: list[Any] | None = None
        self._app_roles_read = False
        # The fan-out resolves several projects' schemes at once, and any of them may need the
        # application roles first: one thread reads them, the others wait for its answer.
        self._app_roles_lock = threading.Lock()
        # (project, role id) -> the role with its actors: a role named by the project's scheme and by a
        # security level of the same project is read once per run.
        self._roles: dict[tuple[str, str], Mapping[str, Any] | None] = {}
        self._leads: dict[str, Mapping[str, Any] | None] = {}  # project -> its lead, read once per run
        self._key_ids: dict[str, str] = {}
        self._missing_keys: set[str] = set()
        # The next listing page's issues, once announced ahead by a Preview (decision 138): that page then
        # emits no preview of its own.
        self._announced: list[Any] | None = None

    @property
    def scope(self) -> str | None:
        """The scope's JQL, once the projects it names were checked for visibility (one call each)."""
        if not self._scope_checked:
            # Taken only when every project the scope names was visible: a project hidden then may be
            # visible now, and a webhook for one of its issues says it is; that is checked anew.
            hidden: frozenset[str] = frozenset()
            marks: tuple[tuple[str, str], ...] = ()
            if not self._kept.get("all_visible", self._kept.scope):
                hidden, marks = self._invisible_projects()
                if not hidden:
                    self._kept.put("all_visible", True, self._kept.scope)
            for key, why in marks:
                self.stats.unreadable(key, why)
            self._hidden = hidden
            self._scope = scope_clause(self.config, self._hidden)
            items = self.config.scope_list
            if self._scope is not None and all(isinstance(i, str) and PROJECT_KEY_RE.match(i.strip()) for i in items):
                self._scope_project_set = frozenset(str(i).strip() for i in items) - self._hidden
            self._scope_checked = True
        return self._scope

    @property
    def _scope_projects(self) -> frozenset[str] | None:
        """Scope projects when the scope is made of projects only (then links are classified locally).
        Asked for every linked key: worked out once per connector, with the scope's visibility check that
        it depends on (``scope``; 245 µs a call with 300 projects in scope when worked out per call,
        decision 124)."""
        if self.scope is None:
            return None
        return self._scope_project_set

    def _invisible_projects(self) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
        """Projects named in ``scope_list`` that ``/project/{key}`` does not show to the credential (issue
        12, bad input), each with the line that names it in the run's notes and keeps it from deletion; the
        rest of the scope runs."""
        projects, _ = _scope_items(self.config)
        keys = list(dict.fromkeys(p.upper() for p in projects))
        api = self.api()
        marks: list[tuple[str, str]] = []
        # Asked a few at a time: each is a round trip before the run's first search (decision 139). An
        # error that is not the project's own (transient) is raised at that project's turn, as in turn.
        look = partial(self._project_hiding, api, lambda exc: exc.transient)
        for key, status in zip(keys, self.fanout.ordered(look, keys), strict=True):
            if status is not None:
                marks.append(
                    (
                        key,
                        f"jira project {key} named in scope_list is not visible to the credential "
                        f"({status}); its issues were not read and nothing of it was changed",
                    )
                )
        return frozenset(k for k, _ in marks), tuple(marks)

    def _project_hiding(self, api: int, fatal: Callable[[HttpError], bool], key: str) -> int | None:
        """Request only (safe on the fan-out): None when ``/project/{key}`` shows the project, else the status
        that hid it; a failure ``fatal`` says is not the project's own is raised."""
        try:
            self.http.get_json(f"/rest/api/{api}/project/{key}")
        except HttpError as exc:
            if fatal(exc):
                raise
            return exc.status
        return None

    def _filter(self, name: str) -> bool:
        return self._filters.get(name, False)

    def _fields(self) -> str:
        """Issue fields to ask for: everything, minus comments when the ``comments`` filter is off."""
        return "*all" if self._filter("comments") else "*all,-comment"

    # ------------------------------------------------------------ protocol

    def probe(self) -> ProbeStatus:
        try:
            self.http.get_json("/rest/api/2/myself")
        except SourceAuthFailed:
            return "auth_failed"
        except HttpError as exc:
            return "auth_failed" if exc.status == 403 else "unreachable"
        except SourceError:
            return "unreachable"
        return "ok"

    def has_delta(self, since: datetime) -> bool:
        """Anything updated strictly after ``since``? JQL compares by the minute, so the page (issues of
        ``since``'s minute and later) is checked against the exact ``updated`` times; a full page of
        same-minute issues counts as a delta (cheaper to sync once than to page on)."""
        api = self._instance(since)
        params: dict[str, Any] = {"jql": self._jql(since), "maxResults": DELTA_PAGE, "fields": "updated"}
        path = "/rest/api/3/search/jql" if api == 3 else "/rest/api/2/search"
        # An answer without its array (a login page's JSON) is not "nothing new" (decision 164).
        page = listing_page(self.http.get_json(path, params), "issues", f"jira delta check failed: GET {path}")
        issues = page["issues"]
        moment = since if since.tzinfo else since.replace(tzinfo=UTC)
        if len(issues) >= DELTA_PAGE:
            return True
        for issue in issues:
            updated = parse_time(_obj(_obj(issue).get("fields")).get("updated"))
            if updated is None or updated > moment:
                return True
        return False

    def enumerate(self, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
        api = self._instance(since)
        position = dict(checkpoint or {})
        jql = self._jql(since)
        candidates: set[str] = set()
        resumed = bool(position)
        if position.get("phase", "scope") == "scope":
            yield from self._scope_pages(api, jql, position, candidates)
            position = {"phase": "neighbours", "batch": 0}
        if not self._filter("neighbours") or self.scope is None or self.config.scope_mode == "all":
            return
        if resumed:
            candidates = self._link_targets(api, jql)
        yield from self._neighbours(api, sorted(candidates), int(position.get("batch", 0)))

    def fetch(self, ids: list[tuple[SourceType, str]]) -> Iterator[RawItem | ItemError | ItemGone]:
        """The issues ``ids`` names (a webhook's, a dead letter's), read a few at a time, then their rights
        and attachments as a listing page's are (``_emitted``); yielded in the order asked."""
        self._kept.taking = True
        api = self.api()
        if self._field_map is None:
            self._field_map = self._kept.get("fields")
        wanted = [sid for stype, sid in ids if stype == "ticket"]
        # The scope's own look-ups change the connector's state, so they run here first (once per
        # connector); the scope check itself and the field list (first use) then go out beside the issue
        # reads, not before them: a webhook's one issue costs one round trip there instead of three.
        _ = self.scope
        if not wanted:
            return
        jobs: list[Callable[[], Any]] = [partial(self._in_scope, api, wanted)]
        jobs += [partial(self._read_issue, api, sid) for sid in wanted]
        got = self._with_fields(jobs)
        in_scope: set[str] = got[0]
        reads = got[1:]
        issues = [(sid, r) for sid, r in zip(wanted, reads, strict=True) if not isinstance(r, ItemGone | ItemError)]
        found = self._emitted([r for _, r in issues], [sid not in in_scope for sid, _ in issues])
        for read in reads:
            yield read if isinstance(read, ItemGone | ItemError) else next(found)[1]

    def _read_issue(self, api: int, sid: str) -> Any:
        """Request only (safe on the fan-out): issue ``sid``, or what the run records instead of it."""
        try:
            return self.http.get_json(f"/rest/api/{api}/issue/{sid}", {"fields": self._fields(), "expand": "changelog"})
        except HttpError as exc:
            if exc.status in (404, 410):
                return ItemGone("ticket", sid)
            return ItemError("ticket", sid, exc.reason, exc.detail)

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]:
        """Issues per project the source reports in scope: a ``maxResults=0`` search's ``total`` (v2) or
        ``/search/approximate-count`` (Cloud v3, whose search returns no total)."""
        api = self.api()
        # An allow-listed project with nothing held yet is still audited (its source count may not be 0).
        selected = self.config.scope_mode == "selected"
        listed: frozenset[str] = (self._scope_projects or frozenset()) if selected else frozenset()
        keys = sorted({*containers, *listed})
        projects = [key for key in keys if PROJECT_KEY_RE.match(key)]
        # One count a project, a few at a time (decision 139): an audit of fifty projects is fifty round trips.
        count = partial(self._project_count, api, self.scope if projects else None)
        counted = dict(zip(projects, self.fanout.ordered(count, projects), strict=True))
        return {key: counted.get(key) for key in keys}

    def _project_count(self, api: int, scope: str | None, key: str) -> int | None:
        """Request only (safe on the fan-out): the issues of project ``key`` within ``scope`` the source
        reports; None when it cannot be read."""
        jql = f"project = {key}" + (f" AND ({scope})" if scope else "")
        if api == 3:
            return self._approximate_count(jql)
        try:
            value = _obj(self.http.get_json("/rest/api/2/search", {"jql": jql, "maxResults": 0})).get("total")
        except HttpError:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def unseen_scope(self) -> list[str]:
        """Allow-listed projects the credential cannot browse: Jira answers 404 for a project that does not
        exist and for one hidden from the caller alike. JQL items are not looked up (nothing to name)."""
        if self.config.scope_mode != "selected":
            return []
        projects, _ = _scope_items(self.config)
        keys = list(dict.fromkeys(projects))
        # A few at a time (decision 139): a connection test is waited for by the person who asked for it.
        # Only 403 and 404 mean "not visible"; any other failure is raised.
        look = partial(self._project_hiding, 2, lambda exc: exc.status not in (403, 404))
        return [key for key, status in zip(keys, self.fanout.ordered(look, keys), strict=True) if status is not None]

    def close(self) -> None:
        self.fanout.close()
        self.http.close()

    # ------------------------------------------------------------ paging

    def _scope_pages(self, api: int, jql: str, position: dict[str, Any], candidates: set[str]) -> Iterator[Emitted]:
        # Each search page's successor is asked for while the page's items are read (FanOut.listing,
        # decision 127).
        total: int | None = None
        if api == 3:
            if position.get("done"):
                return

            def first() -> Any:
                # The count only labels the run's progress: asked beside the first page, not before it; so
                # is the field list, which the page's first item needs.
                nonlocal total
                total, found = self._with_fields(
                    [partial(self._approximate_count, jql), partial(self._search_v3, jql, position.get("token"))]
                )
                return found

            def after_v3(found: Any) -> Callable[[], Any] | None:
                token = _obj(found).get("nextPageToken")
                return partial(self._search_v3, jql, token) if token and not _obj(found).get("isLast") else None

            with closing(self.fanout.listing(first, after_v3)) as pages:
                for found in pages:
                    page = _obj(found)
                    yield from self._emit_page(page.get("issues"), candidates, set(), pages.upcoming)
                    last = after_v3(found) is None
                    yield Checkpoint(
                        {"phase": "scope", "api": 3, "token": page.get("nextPageToken"), "done": last}, total
                    )
            return
        start_at = int(position.get("start_at", 0))
        last_ids = {str(x) for x in position.get("last_ids", [])}
        overlap = min(OVERLAP, self.page_size // 2)
        begin = max(0, start_at - overlap) if last_ids else start_at

        def after_v2(found: Any) -> Callable[[], Any] | None:
            issues, total = _obj(found).get("issues") or [], _obj(found).get("total")
            end = begin + len(issues)
            # This page's issues are the next one's overlap: it starts a few of them back.
            more = issues and (not isinstance(total, int) or end < total)
            return partial(self._search_v2, jql, max(0, end - overlap)) if more else None

        def first_v2() -> Any:
            (found,) = self._with_fields([partial(self._search_v2, jql, begin)])
            return found

        with closing(self.fanout.listing(first_v2, after_v2)) as pages:
            for found in pages:
                page = _obj(found)
                issues = page.get("issues") or []
                total = int(page["total"]) if isinstance(page.get("total"), int) else None
                start_at = begin + len(issues)
                begin = max(0, start_at - overlap)
                last_ids = yield from self._emit_page(issues, candidates, last_ids, pages.upcoming)
                here = {"phase": "scope", "api": 2, "start_at": start_at, "last_ids": sorted(last_ids)}
                yield Checkpoint(here, total)

    def _search_v3(self, jql: str, token: str | None) -> Any:
        """Request only (safe on the fan-out): one page of Cloud's enhanced search."""
        params: dict[str, Any] = {
            "jql": jql,
            "maxResults": self.page_size,
            "fields": self._fields(),
            "expand": "changelog",
        }
        if token:
            params["nextPageToken"] = token
        return _search_page(self.http.get_json("/rest/api/3/search/jql", params), "/rest/api/3/search/jql")

    def _search_v2(self, jql: str, start_at: int) -> Any:
        """Request only (safe on the fan-out): one page of Server/DC's search, from ``start_at``."""
        params = {
            "jql": jql,
            "startAt": start_at,
            "maxResults": self.page_size,
            "fields": self._fields(),
            "expand": "changelog",
        }
        return _search_page(self.http.get_json("/rest/api/2/search", params), "/rest/api/2/search")

    def _with_fields(self, reads: list[Callable[[], Any]]) -> list[Any]:
        """What ``reads`` got, read a few at a time; the field list is read first beside them until it is
        known (a first listing page or fetch: one round trip less before its first item)."""
        if self._field_map is not None:
            return [reads[0]()] if len(reads) == 1 else list(self.fanout.ordered(call, reads))
        got: list[Any] = list(self.fanout.ordered(call, [self._read_fields, *reads]))
        self._keep_fields(got.pop(0))
        return got

    def _emit_page(
        self, issues: Any, candidates: set[str], skip_ids: set[str], upcoming: Callable[[], Any] | None = None
    ) -> Generator[Emitted, None, set[str]]:
        """Emit one page's items; returns the ids on the page (generator return value). ``upcoming``: the
        listing's next page once the source has answered it (``Listing.upcoming``): its issues are announced
        as a Preview ahead while this page's items still wait on their rights and attachments (decision 138)."""
        ids: set[str] = set()
        wanted: list[Any] = []
        for issue in issues or []:
            sid = str(_obj(issue).get("id") or "")
            ids.add(sid)
            if not (sid and sid in skip_ids):
                wanted.append(issue)
        if issues is not self._announced:  # else announced while the page before went out
            preview = self._preview(wanted, neighbour=False)
            if preview is not None:
                yield preview
        self._announced = None
        announce = upcoming if self.config.previews else None
        for issue, item in self._emitted(wanted, [False] * len(wanted)):
            for key in _linked_keys(issue):
                if self._maybe_outside(key):
                    candidates.add(key)
            yield item
            if announce is not None and (found := announce()) is not None:
                announce = None
                ahead = self._announce(found, ids)
                if ahead is not None:
                    yield ahead
        return ids

    def _announce(self, found: Any, ids: set[str]) -> Preview | None:
        """A Preview (``ahead`` 1) of the next listing page's issues, ``found``, but those of this page (``ids``:
        a Server page starts a few issues back). The next page then emits no preview of its own."""
        issues = _obj(found).get("issues")
        if not isinstance(issues, list):
            return None
        self._announced = issues
        items = self._preview_items([i for i in issues if str(_obj(i).get("id") or "") not in ids], neighbour=False)
        return Preview(items, ahead=1) if items else None

    def _emitted(self, issues: list[Any], neighbours: Sequence[bool]) -> Iterator[tuple[Any, RawItem | ItemError]]:
        """Each issue with its item, in order: the rights the issues need resolved first (two rounds of
        requests, ``_resolve_acls``), their attachment downloads a few at a time (connectors.fanout);
        everything else of an issue stays on this thread. ``neighbours``: per issue, whether it is a linked
        issue outside the scope."""
        self._resolve_acls(issues)
        attachments = self.fanout.ordered(self._issue_attachments, issues)
        for issue, flag, texts in zip(issues, neighbours, attachments, strict=True):
            yield issue, self._emit(issue, neighbour=flag, attachments=texts)

    def _approximate_count(self, jql: str) -> int | None:
        """Cloud's issue count for ``jql`` (its search returns no total); None when it cannot be read."""
        try:
            value = _obj(self.http.post_json("/rest/api/3/search/approximate-count", {"jql": jql})).get("count")
        except HttpError:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _resolve_acls(self, issues: Sequence[Any]) -> None:
        """Read what the page's items need and no earlier page read, in two rounds of requests a few at a
        time (connectors.fanout): first the permission schemes of its new projects, the members of its new
        security levels and (first page) the field list; then every project role, project lead and the
        application roles those name. Against a real Jira each request waits 100-500 ms, and a first page
        names many projects, each a scheme, then its roles, then its lead: read as the resolver met them,
        the first item waited for ten round trips; now for four, counting the server info and the search
        (decision 70). The rights are then resolved here from what was read, and kept (with their notes)
        in the page's order, so the stream and the run's notes are what one-by-one reading gave; ``_emit``
        then finds every answer cached."""
        projects, levels = self._unread_rights(issues)
        fields = self._field_map is None and bool(issues)
        payloads: list[Callable[[], tuple[Any, str | None]]] = [partial(self._read_scheme, p) for p in projects]
        payloads += [partial(self._read_members, level) for level in levels]
        if fields:
            payloads.append(self._read_fields)
        read = list(self.fanout.ordered(call, payloads))
        if fields:
            self._keep_fields(read.pop())
        schemes = dict(zip(projects, read[: len(projects)], strict=True))
        members = dict(zip(levels, read[len(projects) :], strict=True))
        named = [(p, browse_holders(scheme)) for p, (scheme, failed) in schemes.items() if failed is None]
        named += [(levels[lv], level_holders(page)) for lv, (page, failed) in members.items() if failed is None]
        # Round two: each read keeps its answer in a cache that is the same whoever fills it (roles, leads)
        # or is guarded by a lock (application roles); a transient failure is raised here, at this page.
        for _ in self.fanout.ordered(call, self._lookup_reads(named)):
            pass
        for project, scheme in schemes.items():
            self._keep(self._project_acl, project, self._scheme_grants(project, scheme))
        for level, page in members.items():
            self._keep(self._level_acl, level, self._member_grants(level, levels[level], page))

    def _unread_rights(self, issues: Sequence[Any]) -> tuple[dict[str, None], dict[str, str]]:
        """The projects (in order) and the security levels (each with its project) of ``issues`` whose
        rights no earlier page read."""
        projects: dict[str, None] = {}
        levels: dict[str, str] = {}
        for issue in issues:
            found = _acl_keys(issue)
            if found is None:
                continue
            project, level = found
            if project not in self._project_acl and not self._took(self._project_acl, "project", project):
                projects[project] = None
            if level and level not in self._level_acl and not self._took(self._level_acl, "level", level):
                levels.setdefault(level, project)
        return projects, levels

    def _preview(self, issues: Sequence[Any], *, neighbour: bool) -> Preview | None:
        """The issues as items without their rights, when reading those rights takes requests (a first page,
        a page naming a new project or security level): the pipeline cuts and embeds their text while
        ``_resolve_acls`` waits on the source (decision 107). None when the consumer takes no previews."""
        if not self.config.previews:
            return None
        projects, levels = self._unread_rights(issues)
        if not (projects or levels):
            return None
        items = self._preview_items(issues, neighbour=neighbour)
        return Preview(items) if items else None

    def _preview_items(self, issues: Sequence[Any], *, neighbour: bool) -> tuple[RawItem, ...]:
        """The issues as items with their rights unknown. Makes no request: no epic ids, no attachment texts;
        a malformed issue is left out (its ItemError follows with the page)."""
        items: list[RawItem] = []
        for issue in issues:
            data = self._filtered(_obj(issue))
            fields = _fields_of(data)
            if fields is None:
                continue
            project, _ = _acl_keys(data) or ("", None)
            ctx = JiraItemContext(field_map=self._field_map, neighbour=neighbour, acl_unknown=True)
            updated = parse_time(fields.get("updated"))
            items.append(RawItem("ticket", str(data["id"]), data, datetime.now(UTC), updated, project, ctx))
        return tuple(items)

    def _filtered(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """The issue without its comments when the comments filter is off and the server sent them anyway
        (one that ignores "-comment" in ``fields``): the filter still holds."""
        if not self._filter("comments") and isinstance(data.get("fields"), Mapping) and "comment" in data["fields"]:
            return {**data, "fields": {k: v for k, v in data["fields"].items() if k != "comment"}}
        return data

    def _lookup_reads(self, named: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[Callable[[], object]]:
        """The reads resolving ``named`` (project, holders) pairs will want that are not cached yet, once each."""
        roles: dict[tuple[str, str], None] = {}
        leads: dict[str, None] = {}
        application_roles = False
        for project, holders in named:
            need = needs(holders)
            roles.update(dict.fromkeys((project, r) for r in need.roles if (project, r) not in self._roles))
            if need.lead and project not in self._leads:
                leads[project] = None
            application_roles |= need.application_roles
        reads: list[Callable[[], object]] = [partial(self._role, p, r) for p, r in roles]
        reads += [partial(self._lead, p) for p in leads]
        if application_roles and not self._app_roles_read:
            reads.append(self._application_roles)
        return reads

    def _keep(self, cache: dict[str, Grants | None], key: str, read: tuple[Grants | None, list[str]]) -> None:
        grants, notes = read
        for note in notes:
            self.stats.note(note)
        cache[key] = grants
        if grants is not None:  # rights that could not be read are read again by the next run
            self._kept.put_item("project" if cache is self._project_acl else "level", key, (grants, tuple(notes)))

    def _took(self, cache: dict[str, Grants | None], what: str, key: str) -> bool:
        """Whether the rights of project or level ``key`` were taken from an earlier run (with its notes)."""
        taken = self._kept.get_item(what, key)
        if taken is None:
            return False
        grants, notes = taken
        for note in notes:
            self.stats.note(note)
        cache[key] = grants
        return True

    def _issue_attachments(self, issue: Any) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """Requests only (runs on the fan-out): the issue's attachment texts, nothing for a malformed one."""
        data = _obj(issue)
        fields = _fields_of(data)
        if fields is None:
            return None, None
        return self._attachment_texts(str(data["key"]), fields.get("attachment"))

    def _emit(
        self,
        issue: Any,
        *,
        neighbour: bool,
        attachments: tuple[dict[str, str] | None, dict[str, str] | None] | None = None,
    ) -> RawItem | ItemError:
        data = self._filtered(_obj(issue))
        sid = str(data.get("id") or data.get("key") or "unknown")
        fields = _fields_of(data)
        if fields is None:
            return ItemError("ticket", sid, "malformed", "issue without id, key or fields")
        project, level = _acl_keys(data) or ("", None)
        security = fields.get("security")
        project_grants = self._project_grants(project)
        level_grants = self._level_grants(project, level) if level is not None else None
        key_ids: dict[str, str] | None = None
        issuetype = fields.get("issuetype")
        epic_type = isinstance(issuetype, JSON_OBJECT) and (
            issuetype.get("hierarchyLevel") == 1 or issuetype.get("name") == "Epic"
        )
        if epic_type:
            # Only epics are ever looked up by key; remembering every issue would grow with the source.
            self._key_ids[str(data["key"])] = str(data["id"])
        epic = fields.get(self.field_map().get("epic_link", "")) if self.field_map().get("epic_link") else None
        if isinstance(epic, str) and epic:
            # Always resolve the epic's id, whatever else this run fetched: the same payload must map to
            # the same Entity (an epic edge in one window and a ref in another would rewrite the row).
            epic_id = self._issue_id(epic)
            if epic_id is not None:
                key_ids = {epic: epic_id}
        has_level = security is not None
        texts, reasons = attachments or self._attachment_texts(str(data["key"]), fields.get("attachment"))
        ctx = JiraItemContext(
            field_map=self.field_map(),
            neighbour=neighbour,
            project_principals=project_grants.principals if project_grants else None,
            project_fields=project_grants.issue_fields if project_grants else (),
            security_principals=level_grants.principals if level_grants else None,
            security_fields=level_grants.issue_fields if level_grants else (),
            acl_unknown=project_grants is None or (has_level and level_grants is None),
            key_ids=key_ids,
            attachment_texts=texts,
            attachment_reasons=reasons,
        )
        return RawItem(
            source_type="ticket",
            source_entity_id=str(data["id"]),
            payload=data,
            fetched_at=datetime.now(UTC),
            source_updated_at=parse_time(fields.get("updated")),
            container=project,
            context=ctx,
        )

    def _attachment_texts(self, key: str, attachments: Any) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """Text and PDF attachments read when ``attachments_text`` is on (connectors.attachments: allow-list,
        size cap, streamed); the others stay links, with the reason (second map) kept in the metadata."""
        if not self._filter("attachments_text") or not isinstance(attachments, list):
            return None, None
        texts: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for a in attachments:
            att = _obj(a)
            url, aid = att.get("content"), att.get("id")
            if aid is None:
                continue
            size = att.get("size")
            got = self.attachments.read(
                key,
                url if isinstance(url, str) else None,
                content_type=str(att.get("mimeType") or ""),
                filename=str(att.get("filename") or ""),
                size=size if isinstance(size, int) else None,
            )
            if got.text is not None:
                texts[str(aid)] = got.text
            elif got.reason:
                reasons[str(aid)] = got.reason
        return texts or None, reasons or None

    def _issue_id(self, key: str) -> str | None:
        """Id of the issue with ``key`` (cached per connector; None if it does not exist or is hidden)."""
        if key in self._key_ids:
            return self._key_ids[key]
        if key in self._missing_keys:
            return None
        try:
            found = _obj(self.http.get_json(f"/rest/api/{self.api()}/issue/{key}", {"fields": "id"})).get("id")
        except HttpError:
            found = None
        if found:
            self._key_ids[key] = str(found)
            return str(found)
        self._missing_keys.add(key)
        return None

    # ------------------------------------------------------------ neighbours

    def _neighbours(self, api: int, candidates: list[str], first_batch: int) -> Iterator[Emitted]:
        batches = [candidates[k : k + NEIGHBOUR_BATCH] for k in range(0, len(candidates), NEIGHBOUR_BATCH)]
        for number in range(first_batch, len(batches)):
            jql = f"key in ({', '.join(batches[number])}) AND NOT ({self.scope}) ORDER BY updated ASC, key ASC"
            # A batch is at most NEIGHBOUR_BATCH issues, committed as one page: its rights and attachments
            # are read as a scope page's are, not one issue after another.
            issues = list(self._search_all(api, jql, self._fields()))
            preview = self._preview(issues, neighbour=True)
            if preview is not None:
                yield preview
            for _, item in self._emitted(issues, [True] * len(issues)):
                yield item
            yield Checkpoint({"phase": "neighbours", "batch": number + 1}, None)

    def _link_targets(self, api: int, jql: str) -> set[str]:
        found: set[str] = set()
        for issue in self._search_all(api, jql, "issuelinks"):
            found.update(k for k in _linked_keys(issue) if self._maybe_outside(k))
        return found

    def _in_scope(self, api: int, ids: list[str]) -> set[str]:
        """Which of ``ids`` the scope holds. Requests only once ``scope`` was read (safe on the fan-out)."""
        if self.scope is None:
            return set(ids)
        inside: set[str] = set()
        for k in range(0, len(ids), NEIGHBOUR_BATCH):
            batch = ids[k : k + NEIGHBOUR_BATCH]
            jql = f"id in ({', '.join(batch)}) AND ({self.scope})"
            inside.update(str(_obj(i).get("id")) for i in self._search_all(api, jql, "id"))
        return inside

    def _search_all(self, api: int, jql: str, fields: str) -> Iterator[Any]:
        if api == 3:
            token: str | None = None
            while True:
                params: dict[str, Any] = {"jql": jql, "maxResults": self.page_size, "fields": fields}
                if token:
                    params["nextPageToken"] = token
                page = _search_page(self.http.get_json("/rest/api/3/search/jql", params), "/rest/api/3/search/jql")
                yield from page["issues"]
                token = page.get("nextPageToken")
                if not token or page.get("isLast"):
                    return
        start = 0
        while True:
            page = _search_page(
                self.http.get_json(
                    "/rest/api/2/search", {"jql": jql, "startAt": start, "maxResults": self.page_size, "fields": fields}
                ),
                "/rest/api/2/search",
            )
            issues = page["issues"]
            yield from issues
            start += len(issues)
            if not issues or start >= int(page.get("total") or 0):
                return

    def _maybe_outside(self, key: str) -> bool:
        if self.scope is None or not self._filter("neighbours") or self.config.scope_mode == "all":
            # The whole instance is in scope, neighbours are off, or the scope is a deny-list (what
            # lies outside it was excluded on purpose): nothing to collect.
            return False
        if self._scope_projects is None:
            return True
        return key.rsplit("-", 1)[0] not in self._scope_projects

    # ------------------------------------------------------------ instance facts

    def api(self) -> int:
        if self._api is None:
            if self._filter("force_api_v2"):
                self._api = 2
            elif (taken := self._kept.get("api")) is not None:
                self._api = int(taken)
            else:
                info = _obj(self.http.get_json("/rest/api/2/serverInfo"))
                self._api = 3 if info.get("deploymentType") == "Cloud" else 2
                self._kept.put("api", self._api)
        return self._api

    def _instance(self, since: datetime | None) -> int:
        """The API version; with ``since``, the user's zone its JQL is written in is read beside it, not
        after it: both are round trips before the first search, and neither needs the other (decision 139)."""
        if since is not None and self._api is None and not self._tz_known:
            for _ in self.fanout.ordered(call, [self.api, self._user_zone]):
                pass
        return self.api()

    def _jql(self, since: datetime | None) -> str:
        parts = [f"({self.scope})"] if self.scope else []
        if since is not None:
            parts.append(f'updated >= "{self.jql_time(since)}"')
        if not parts:
            # Cloud's /search/jql refuses unbounded queries; this bound matches every issue.
            parts.append('updated >= "1970/01/01 00:00"')
        return " AND ".join(parts) + " ORDER BY updated ASC, key ASC"

    def jql_time(self, since: datetime) -> str:
        """``since`` as a JQL literal in the calling user's zone, floored to the minute."""
        return window_literal(since, self._user_zone(), "%Y/%m/%d %H:%M")

    def _user_zone(self) -> ZoneInfo | None:
        if not self._tz_known:
            self._tz_known = True
            me = _obj(self.http.get_json("/rest/api/2/myself"))
            try:
                self._tz = ZoneInfo(str(me.get("timeZone"))) if me.get("timeZone") else None
            except (ZoneInfoNotFoundError, ValueError):
                self._tz = None
        return self._tz

    def field_map(self) -> dict[str, str]:
        if self._field_map is None:
            self._keep_fields(self._read_fields())
        assert self._field_map is not None
        return self._field_map

    def _read_fields(self) -> tuple[Any, str | None]:
        """Request only (safe on the fan-out): the field list, or why it could not be read."""
        try:
            return self.http.get_json(f"/rest/api/{self.api()}/field"), None
        except HttpError as exc:
            return None, f"jira /field failed ({exc.status}); using Jira Cloud's default field ids"

    def _keep_fields(self, read: tuple[Any, str | None]) -> None:
        fields, failed = read
        if failed is not None:
            # Without the field list the epic link would vanish from every issue: use Cloud's ids
            # (issue 13 §5), whatever the failure; the run's detail says so.
            self.stats.note(failed)
            self._field_map = dict(CLOUD_DEFAULT_FIELDS)
            return
        fmap: dict[str, str] = {}
        for f in fields if isinstance(fields, list) else []:
            f = _obj(f)
            custom = str(_obj(f.get("schema")).get("custom") or "")
            name = str(f.get("name") or "").lower()
            role = _FIELD_CUSTOM.get(custom) or next((r for r, n in _FIELD_NAMES.items() if name in n), None)
            if role and role not in fmap and f.get("id"):
                fmap[role] = str(f["id"])
        self._field_map = fmap
        self._kept.put("fields", fmap)  # never changed afterwards: a new dict each read

    def _project_grants(self, project: str) -> Grants | None:
        """Who may browse ``project`` (resolved once per run); None when the scheme cannot be read."""
        if project not in self._project_acl and not self._took(self._project_acl, "project", project):
            self._keep(self._project_acl, project, self._scheme_grants(project, self._read_scheme(project)))
        return self._project_acl[project]

    def _level_grants(self, project: str, level: str) -> Grants | None:
        """Members of issue security level ``level``; None when unknown (the issue fails closed)."""
        if not level:
            return None
        if level not in self._level_acl and not self._took(self._level_acl, "level", level):
            self._keep(self._level_acl, level, self._member_grants(level, project, self._read_members(level)))
        return self._level_acl[level]

    def _read_scheme(self, project: str) -> tuple[Any, str | None]:
        """Request only (safe on the fan-out): the project's permission scheme, or why not."""
        return self._read_holders(
            f"/rest/api/{self.api()}/project/{project}/permissionscheme",
            {"expand": "permissions,user,group,projectRole,field"},
            f"jira project {project}: permission scheme",
        )

    def _read_members(self, level: str) -> tuple[Any, str | None]:
        """Request only (safe on the fan-out): the members of issue security level ``level``, or why not."""
        return self._read_holders(
            f"/rest/api/{self.api()}/issuesecurityschemes/level/member",
            {"levelId": level, "expand": "user,group,projectRole,field"},
            f"jira security level {level}: members",
        )

    def _read_holders(self, path: str, params: dict[str, str], what: str) -> tuple[Any, str | None]:
        """The page at ``path``, or the note saying ``what`` is unreadable (the issues it guards fail
        closed). A transient failure is raised: a 503 must not narrow anyone's rights."""
        try:
            return self.http.get_json(path, params), None
        except HttpError as exc:
            if exc.transient:
                raise
            return None, f"{what} unreadable ({exc.status}); fail closed"

    def _scheme_grants(self, project: str, read: tuple[Any, str | None]) -> tuple[Grants | None, list[str]]:
        """The project's browse grants from its scheme (None: unreadable), with the notes to make."""
        return self._grants(project, read, browse_holders, f"jira project {project}: Browse Projects holder")

    def _member_grants(self, level: str, project: str, read: tuple[Any, str | None]) -> tuple[Grants | None, list[str]]:
        """As ``_scheme_grants`` for security level ``level`` of ``project``: its members."""
        return self._grants(project, read, level_holders, f"jira security level {level}: member holder")

    def _grants(
        self, project: str, read: tuple[Any, str | None], holders: Callable[[Any], list[Mapping[str, Any]]], holder: str
    ) -> tuple[Grants | None, list[str]]:
        """Who ``holders`` finds in what ``read`` got, resolved within ``project`` (None: unreadable),
        with the notes to make: the read's failure, or each ``holder`` that grants nobody."""
        payload, failed = read
        if failed is not None:
            return None, [failed]
        grants = resolve(holders(payload), self._lookups(project))
        return grants, [f"{holder} grants nobody: {r}" for r in grants.unresolved]

    def _lookups(self, project: str) -> Lookups:
        return Lookups(
            role=partial(self._role, project),
            application_roles=self._application_roles,
            project_lead=partial(self._lead, project),
            cloud=self.api() == 3,
        )

    def _role(self, project: str, role_id: str) -> Mapping[str, Any] | None:
        """Project role ``role_id`` with its actors, read once per run (None: unreadable)."""
        if (project, role_id) not in self._roles:
            try:
                found = _obj(self.http.get_json(f"/rest/api/{self.api()}/project/{project}/role/{role_id}"))
            except HttpError as exc:
                if exc.transient:
                    raise
                found = None
            self._roles[(project, role_id)] = found
        return self._roles[(project, role_id)]

    def _lead(self, project: str) -> Mapping[str, Any] | None:
        """The project's lead user, read once per run (None: unreadable)."""
        if project not in self._leads:
            try:
                found = _obj(_obj(self.http.get_json(f"/rest/api/{self.api()}/project/{project}")).get("lead"))
            except HttpError as exc:
                if exc.transient:
                    raise
                found = None
            self._leads[project] = found
        return self._leads[project]

    def _application_roles(self) -> list[Any] | None:
        with self._app_roles_lock:
            if not self._app_roles_read:
                try:
                    roles = self.http.get_json(f"/rest/api/{self.api()}/applicationrole")
                    self._app_roles = roles if isinstance(roles, list) else None
                except HttpError as exc:
                    if exc.transient:
                        raise  # not marked read: asked again by the retried page
                    self.stats.note(f"jira /applicationrole unreadable ({exc.status}); roles grant their own token")
                    self._app_roles = None
                self._app_roles_read = True
            return self._app_roles


def create(config: SourceConfig, stats: CallStats) -> JiraConnector:
    return JiraConnector(config, stats)


# ---------------------------------------------------------------- helpers


def _search_page(data: Any, path: str) -> Mapping[str, Any]:
    """A search answer, which must carry its ``issues`` array (connectors.payload.listing_page)."""
    return listing_page(data, "issues", f"jira search failed: GET {path}")


def _acl_keys(issue: Any) -> tuple[str, str | None] | None:
    """The project key and the security level id an issue's rights depend on (level: None for no level,
    "" for a level that names no id, which fails closed); None for an issue without key or fields."""
    data = _obj(issue)
    fields = _fields_of(data)
    if fields is None:
        return None
    project = str(_obj(fields.get("project")).get("key") or str(data["key"]).rsplit("-", 1)[0])
    security = fields.get("security")
    # Only an object with an id names a level; any other non-null value is unknown, never "no level".
    if security is None:
        return project, None
    level = _obj(security).get("id")
    return project, str(level) if level is not None else ""


def _fields_of(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """An issue's fields, or None when it lacks an id, a key or fields (a malformed issue)."""
    fields = data.get("fields")
    if not data.get("id") or not data.get("key") or not isinstance(fields, JSON_OBJECT):
        return None
    return fields


def _linked_keys(issue: Any) -> list[str]:
    keys = []
    for link in _obj(_obj(issue).get("fields")).get("issuelinks") or []:
        for side in ("outwardIssue", "inwardIssue"):
            key = _obj(_obj(link).get(side)).get("key")
            if key:
                keys.append(str(key))
    return keys


__all__ = ["JiraConnector", "SourceUnreachable", "auth_headers", "create", "scope_clause"]
