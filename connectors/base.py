"""The contract between a connector and the pipeline (seed 000: RawItem -> Entity).

A connector package is a client, a manifest and a mapping, one job per file (plus the small helpers
they need, such as ``webhook.py``):

- ``client.py``   HTTP against the source (paging, retries, call counting) via ``connectors.http``;
- ``manifest.py`` a :class:`Manifest`: scope kinds, content filters, default authority, error classes;
- ``mapping.py``  a pure function ``map_item(raw: RawItem) -> Entity`` (raises :class:`MalformedPayload`).

Its emulator (a local HTTP server speaking the source's API, for tests and the demo) lives apart, in
``connectors/emulators/``, which production code never imports (an import-linter contract).

The package's ``__init__`` exposes ``CONNECTOR: ConnectorSpec``. The pipeline only ever sees the
types in this module; nothing source-specific leaks past ``mapping.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from connectors.directories import DEFAULT_DIRECTORY_TTL
from connectors.fanout import DEFAULT_FANOUT

SourceType = Literal["ticket", "page", "message"]
DeadLetterReason = Literal["permission", "not_found", "malformed", "rate_limited", "unknown"]
ProbeStatus = Literal["ok", "unreachable", "auth_failed"]
EntityStatus = Literal["draft", "final", "archived"]


# ---------------------------------------------------------------- RawItem (connector -> transform)


@dataclass(frozen=True, slots=True)
class ItemContext:
    """Facts a connector's mapping needs that the payload lacks (ACL facts, the neighbour flag...).

    Each connector subclasses it with typed fields (``JiraItemContext`` in ``connectors.jira.context``...);
    its client builds one per item and its mapping reads it. The pipeline never looks inside. This base,
    with no fields, is "no facts": a mapping given it fails closed (``Acl(None)``).
    """


@dataclass(frozen=True, slots=True)
class RawItem:
    """A source record exactly as the API returned it, plus collection metadata (seed 000 "RawItem")."""

    source_type: SourceType
    source_entity_id: str
    payload: Mapping[str, Any]
    fetched_at: datetime
    # Source-side modification time: the incremental cursor is built from these (source clock, UTC).
    source_updated_at: datetime | None = None
    # Container the item lives in (Jira project key, Confluence space key, Slack channel id).
    container: str | None = None
    # Connector-private facts the mapping needs and the payload lacks (a subclass of ItemContext).
    context: ItemContext = field(default_factory=ItemContext)


@dataclass(frozen=True, slots=True)
class ItemError:
    """One item that could not be fetched or parsed; it goes to the dead-letter queue, the run goes on."""

    source_type: SourceType
    source_entity_id: str
    reason: DeadLetterReason
    detail: str
    # Set when the error covers a whole container (a channel or space that could not be read): the run
    # did not see that container's items, so reconciliation must not take them for deleted.
    container: str | None = None


@dataclass(frozen=True, slots=True)
class ItemGone:
    """An item asked for by id (DLQ retry, webhook) that no longer exists at the source."""

    source_type: SourceType
    source_entity_id: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Emitted by ``enumerate`` after each page: everything before it may be committed.

    ``position`` is connector-defined JSON that, passed back to ``enumerate``, resumes right after
    this page. ``total`` is the connector's current estimate of M for "N of M" (None: unknown).
    """

    position: Mapping[str, Any]
    total: int | None = None


@dataclass(frozen=True, slots=True)
class Preview:
    """Items a page's answer brought whose rights the connector is still reading (decision 107).

    Emitted before the page's own items when their rights need requests (against a real source, rounds of
    100-500 ms each): the pipeline may cut and embed their text meanwhile. Each item's context lacks the
    rights (and whatever else needs a request, such as attachment texts), so a Preview is never loaded,
    counted or checkpointed; the same records follow as the page's RawItems or ItemErrors, and what was
    embedded ahead is used only where their chunks' text is the same. A connector never has to emit one,
    and emits none when ``SourceConfig.previews`` is off.

    ``ahead`` 1: the items of the page after the one being handed out, announced as soon as the source has
    answered that page's listing request, while this page's items still wait on theirs (decision 138).
    """

    items: tuple[RawItem, ...]
    ahead: int = 0


Emitted = RawItem | ItemError | Checkpoint | Preview


# ---------------------------------------------------------------- Entity (transform -> load)


@dataclass(frozen=True, slots=True)
class Edge:
    """A link inside the source, declared by the entity that owns it (seed 003: outward side is source).

    The target is named by its natural key inside the same source; it may not be loaded yet.
    """

    relation: str  # blocks, relates, parent, epic, reply_to, links_to, ...
    target_type: SourceType
    target_id: str  # the target's source_entity_id
    target_key: str | None = None  # human key as the source shows it (PROJ-12), if different


@dataclass(frozen=True, slots=True)
class Ref:
    """A mention of another source: a claim, not an edge (seed 000 "Формат refs")."""

    relation: str  # mentions, blocks, parent, author, duplicate, ...
    target_kind: str  # issue, page, user, commit, mr, message
    target_ref: str  # natural id as written: "PROJ-123", a URL, "@user", a sha
    source_hint: str | None  # jira, confluence, slack, gitlab, or None when unknown


@dataclass(frozen=True, slots=True)
class Acl:
    """Who may see the record, captured with it.

    ``principals`` are opaque strings the search layer matches against a caller's identities:
    ``user:<email or source user id>``, ``group:<connector>:<group id>``. ``None`` means the rights
    could not be determined: the entity is visible to nobody (fail closed).
    """

    principals: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class Entity:
    source_type: SourceType
    source_entity_id: str
    status: EntityStatus
    title: str
    text: str  # clean text for display and embedding; structure kept as blank-line separated blocks
    url: str | None
    author: str | None  # email when the source gives one, else the source user id
    created_at: datetime | None
    updated_at: datetime | None
    acl: Acl
    metadata: Mapping[str, Any] = field(default_factory=dict)  # typed per connector, JSON-safe
    natural_key: str | None = None  # PROJ-12, page id, channel/ts
    container: str | None = None
    edges: tuple[Edge, ...] = ()
    refs: tuple[Ref, ...] = ()
    # Other source ids this record was known under (moved issue, renamed key); reconciliation
    # collapses entities whose id appears here into this one (seed 001, aggressive resolve).
    aliases: tuple[str, ...] = ()
    out_of_scope: bool = False  # a neighbour fetched one hop outside the scope (seed 003)
    # Text split points the chunker must respect (comment boundaries, thread replies).
    sections: tuple[str, ...] = ()


class MalformedPayload(ValueError):
    """The payload does not have the shape the mapping needs; the item goes to the DLQ as malformed."""


# ---------------------------------------------------------------- whole-run failures


class SourceError(Exception):
    """The run as a whole cannot go on; the run ends ``failed`` with this message as error_detail."""


class SourceUnreachable(SourceError):
    pass


class SourceAuthFailed(SourceError):
    pass


class RunStopped(SourceError):
    """The run stopped (cancelled, taken over, failed elsewhere) while its listing still ran: its rate gate
    lets no more requests out (decision 158). Raised on the listing's threads, whose results nobody reads."""


# ---------------------------------------------------------------- manifest


@dataclass(frozen=True, slots=True)
class ContentFilter:
    key: str
    description: str
    default: bool


@dataclass(frozen=True, slots=True)
class ErrorClassification:
    """HTTP status -> transient/permanent and DLQ reason. Seed 000 default: 429/5xx transient, 403/404 permanent."""

    transient: frozenset[int] = frozenset({429, 500, 502, 503, 504})
    permanent: Mapping[int, DeadLetterReason] = field(
        default_factory=lambda: {401: "permission", 403: "permission", 404: "not_found", 410: "not_found"}
    )

    def is_transient(self, status: int) -> bool:
        return status in self.transient or (status >= 500 and status not in self.permanent)

    def reason(self, status: int) -> DeadLetterReason:
        if status == 429:
            return "rate_limited"
        return self.permanent.get(status, "unknown")


@dataclass(frozen=True, slots=True)
class WebhookSpec:
    signature_header: str  # e.g. X-Hub-Signature
    scheme: str  # e.g. "sha256=<hex hmac of body>"
    delivery_id_header: str | None  # header carrying a unique delivery id, if the source sends one


@dataclass(frozen=True, slots=True)
class Manifest:
    connector_type: str  # jira, confluence, slack
    display_name: str
    source_types: tuple[SourceType, ...]
    scope_kinds: tuple[str, ...]  # container kinds a scope_list may name: project, jql, space, channel
    content_filters: tuple[ContentFilter, ...]
    default_authority: Literal["low", "normal", "high"]
    auth_methods: tuple[Literal["static_token", "oauth"], ...]
    errors: ErrorClassification = field(default_factory=ErrorClassification)
    webhook: WebhookSpec | None = None
    # Whether a full or reconciliation run lists this source in a process of its own unless
    # HARVESTER_SOURCE_PROCESS says otherwise (decision 153; an incremental poll lists in the run's process,
    # decision 154): worth it where the listing itself costs CPU that would share the run's interpreter lock
    # (Confluence: HTML storage and PDF text), not where it is a chain of cheap requests.
    listing_apart: bool = False


# ---------------------------------------------------------------- runtime interface


class RateGate(Protocol):
    """One rate budget per credential, shared by every run and worker using it (issue 12, item 7).

    ``connectors.http.SourceHttp`` calls :meth:`wait` before each request and :meth:`observe` after
    each response; the platform implements it in PostgreSQL (``app.services.rate_budget``)."""

    def wait(self, patience: float) -> None:
        """Block until the budget allows one more request (at most ``patience`` seconds). Raises
        :class:`RunStopped` once the run has stopped: no request, and no retry, goes out after that."""
        ...

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Feed what the source said: 429/503 + Retry-After, X-RateLimit-* headers."""
        ...

    @property
    def stopped(self) -> threading.Event:
        """Set once the run has stopped: a request waiting for its answer gives up, and a retry's backoff
        ends with :class:`RunStopped` (decision 166)."""
        ...


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """What a connector gets from the ``sources`` row (credential already decrypted, in memory only)."""

    source_id: int
    base_url: str
    credential: str | None
    scope_mode: Literal["all", "selected"]
    scope_list: tuple[Any, ...]
    content_filters: Mapping[str, bool]
    # Platform runtime, not columns: how long "slow down" answers are retried, and the shared budget.
    rate_limit_patience: float = 600.0
    rate_gate: RateGate | None = None
    # Attempts per request and seconds per attempt: a run keeps the defaults; a connection test, which a
    # person or an API client waits for, asks for fewer and shorter ones.
    # None: the HTTP client's defaults (connectors/http.py).
    max_attempts: int | None = None
    timeout: float | None = None
    # One answer's bounds (the platform settings response_max_mib and response_max_seconds, decision 162):
    # its decoded body's bytes, and seconds from its request to its last byte. None: the HTTP client's.
    response_max_bytes: int | None = None
    response_max_seconds: float | None = None
    # Requests of one listing page a connector may send at once (connectors.fanout); 1 = one by one.
    fanout: int = DEFAULT_FANOUT
    # Whether a listing's next page may be requested while the items of the one before are handed out
    # (connectors.fanout ``FanOut.ahead``): off when the rate gate shares the run's connection.
    listing_ahead: bool = True
    # Seconds a directory a connector reads whole (Slack's users and channels, ...) read by one run may be
    # used by a later run of the same source in this process that fetches items by id (webhook deliveries,
    # dead-letter retries); 0: every run reads its own (connectors.directories, decision 125).
    directory_ttl: float = DEFAULT_DIRECTORY_TTL
    # Whether the consumer uses ``Preview``s (a run with an embedding stage); off, a connector emits none and
    # spends nothing on them (decision 138).
    previews: bool = True


ANY_CONTAINER = "*"  # CallStats.unread: a unit the connector cannot name by container; deletes nothing
# Distinct notes a run keeps. The run's detail shows about 2,000 characters of them, and some notes are one
# per item (an attachment kept as a link): kept without a bound they grew with the source, and so did the
# scan that kept them unique (252 s of a 1 M-issue sync's 831; decision 110).
MAX_NOTES = 50


@dataclass(slots=True)
class CallStats:
    """Counters the pipeline copies to ``sync_runs`` (seed 003: calls and 429/503 per run), and the
    run's notes: facts a connector degraded on without failing an item (a permission holder it could
    not resolve, a ``/field`` call that failed). The pipeline appends the notes to the run's
    ``error_detail`` so an operator sees why rights or fields are narrower than the source's."""

    api_calls: int = 0
    rate_limited: int = 0
    notes: list[str] = field(default_factory=list)
    # Notes past MAX_NOTES, counted, not kept (a repeat of one of them counts again).
    more_notes: int = 0
    # Scope units (containers) the run could not read (issue 12, bad input: a scope list naming a project,
    # space or channel the credential cannot see): reconciliation keeps their entities as they are.
    # ``ANY_CONTAINER`` when the unit cannot be tied to a container id (a Slack channel named by name).
    unread: set[str] = field(default_factory=set)
    # A connector's fan-out (connectors.fanout) sends requests from several threads at once.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count_call(self) -> None:
        """One request sent."""
        with self._lock:
            self.api_calls += 1

    def count_rate_limited(self) -> None:
        """One 429 or 503 answer."""
        with self._lock:
            self.rate_limited += 1

    def note(self, text: str) -> None:
        """Record one note (repeats are kept once, the first MAX_NOTES distinct ones are kept and the rest
        counted in ``more_notes``; never put secrets or payload bodies here)."""
        with self._lock:
            if text in self.notes:  # at most MAX_NOTES to look through
                return
            if len(self.notes) < MAX_NOTES:
                self.notes.append(text)
            else:
                self.more_notes += 1

    def unreadable(self, container: str, why: str) -> None:
        """A scope unit the run cannot read: named in the run's notes, and nothing of it is deleted."""
        with self._lock:
            self.unread.add(container)
        self.note(why)


@dataclass(frozen=True, slots=True)
class WebhookEvent:
    """A verified webhook reduced to what the pipeline needs: which items to (re)fetch or drop."""

    delivery_id: str | None
    upserts: tuple[tuple[SourceType, str], ...] = ()
    deletes: tuple[tuple[SourceType, str], ...] = ()
    challenge: str | None = None  # Slack url_verification: answer with this, enqueue nothing


class Connector(Protocol):
    manifest: Manifest

    def probe(self) -> ProbeStatus:
        """Cheap connection test; never raises for reachability or auth problems."""
        ...

    def enumerate(self, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
        """Every in-scope item updated at or after ``since`` (None: all), page by page; a page's items may
        be announced ahead of it by a :class:`Preview`.

        Raises :class:`SourceError` when the run cannot go on. Resumes after ``checkpoint`` if given.
        """
        ...

    def fetch(self, ids: list[tuple[SourceType, str]]) -> Iterator[RawItem | ItemError | ItemGone]:
        """The given items by identity (DLQ retry, webhook deltas)."""
        ...

    def has_delta(self, since: datetime) -> bool:
        """Watchdog's cheap check: did anything change since ``since``?"""
        ...

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]:
        """Completeness audit (issue 12): how many in-scope items the source reports per scope unit
        (project, space, channel) for each of ``containers`` plus any unit the connector itself knows;
        None for a unit the source would not count. Called after a reconciliation enumerated everything."""
        ...

    def unseen_scope(self) -> list[str]:
        """The allow-listed scope units (``scope_mode = 'selected'``: projects, spaces, channels) that the
        credential cannot see, because they do not exist or are hidden from it; [] otherwise. The connection
        test (issue 14 §6) reports them before a source is saved. Raises :class:`SourceError` (or
        ``HttpError``) when the source cannot answer."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ConnectorSpec:
    """What a connector package exports as ``CONNECTOR``."""

    manifest: Manifest
    create: Callable[[SourceConfig, CallStats], Connector]
    map_item: Callable[[RawItem], Entity]
    # Headers and raw body of a verified delivery -> what to fetch or drop.
    parse_webhook: Callable[[Mapping[str, str], bytes], WebhookEvent]
    # True when the request's signature (headers, raw body) is valid for the source's webhook secret
    # (the API refuses it otherwise, before parse_webhook sees the body).
    verify_webhook: Callable[[Mapping[str, str], bytes, str], bool]
