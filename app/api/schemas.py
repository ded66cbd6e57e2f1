"""Request and response bodies (msgspec Structs): what the OpenAPI document describes.

Request structs forbid unknown fields (422 naming them). Secrets are write-only: a response carries
:class:`SecretMask` only, built from the decrypted value in memory, never the plaintext or ciphertext.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from app.services.settings import (
    MAX_DELIVERIES_LIMIT,
    MAX_DIRECTORY_TTL,
    MAX_FANOUT,
    MAX_LOCK_WAIT,
    MAX_RESPONSE_MIB,
    MAX_RESPONSE_SECONDS,
    MAX_SECONDS,
)

Seconds = Annotated[int, Meta(ge=1, le=MAX_SECONDS, description="seconds")]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
Url = Annotated[str, Meta(max_length=2000, pattern=r"^https?://")]
SecretText = Annotated[str, Meta(min_length=1, max_length=10_000)]
NoteText = Annotated[str, Meta(max_length=20_000)]
ScopeItem = Annotated[str, Meta(min_length=1, max_length=2000)] | dict[str, Any]
AuthAccount = Literal["service", "personal"]
AuthMethod = Literal["static_token", "oauth"]
SourceState = Literal["active", "paused", "disconnected"]
ScopeMode = Literal["all", "selected"]
Tier = Literal["low", "normal", "high"]
Mode = Literal["full", "incremental", "reconciliation"]


class Input(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of request bodies: an unknown field is an error, never silently ignored."""


# ---------------------------------------------------------------- connectors


class ContentFilterOut(msgspec.Struct):
    key: str
    description: str
    default: bool


class ErrorClassesOut(msgspec.Struct):
    transient: list[int]
    permanent: dict[str, str]


class WebhookSpecOut(msgspec.Struct):
    signature_header: str
    scheme: str
    delivery_id_header: str | None


class ConnectorOut(msgspec.Struct):
    connector_type: str
    display_name: str
    source_types: list[str]
    scope_kinds: list[str]
    content_filters: list[ContentFilterOut]
    default_authority: str
    auth_methods: list[str]
    errors: ErrorClassesOut
    webhook: WebhookSpecOut | None


class ConnectorPage(msgspec.Struct):
    items: list[ConnectorOut]
    next_cursor: str | None


# ---------------------------------------------------------------- sources


class WindowIn(Input):
    """The reconciliation window: a weekday and a time in the organisation's time zone (settings and
    sources alike)."""

    day: Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    time: Annotated[str, Meta(pattern=r"^\d{2}:\d{2}$", description="HH:MM, 00:00 .. 23:59")]


class WindowOut(msgspec.Struct):
    day: str
    time: str


class EffectiveSeconds(msgspec.Struct):
    """A schedule setting as the source sees it: ``inherited`` true when it is the platform default."""

    value: int
    inherited: bool


class EffectiveWindow(msgspec.Struct):
    value: WindowOut
    inherited: bool


class ScheduleOut(msgspec.Struct):
    """The source's effective schedule and when the scheduler tick will next start its runs.

    Times come from the predicates the tick itself evaluates (app/schedule.py); ``null`` when the source
    is not active (nothing is scheduled) or, for ``next_reconciliation_at``, before its first full sync.
    A time in the past or now means due at the next tick.
    """

    sync_interval: EffectiveSeconds
    reconcile_interval: EffectiveSeconds
    reconcile_window: EffectiveWindow
    timezone: str
    next_poll_at: datetime | None
    next_poll_mode: Literal["full", "incremental"] | None
    next_reconciliation_at: datetime | None


class SecretMask(msgspec.Struct):
    set: bool
    mask: str | None = None


class LastRunOut(msgspec.Struct):
    id: int
    state: str
    finished_at: datetime | None
    error_count: int | None


class SourceOut(msgspec.Struct):
    id: int
    name: str
    connector_type: str
    base_url: str | None
    auth_account: str
    auth_method: str
    credential: SecretMask
    state: str
    health: str
    scope_mode: str
    scope_list: list[Any]
    content_filters: dict[str, bool]
    # The source's own overrides (null: inherits the platform setting); ``schedule`` has the effective ones.
    sync_interval: int | None
    reconcile_interval: int | None
    reconcile_window: WindowOut | None
    # Resolved: the stored tier, or the connector manifest's default_authority when the column is NULL
    # (seed 000); authority_tier_inherited says which.
    authority_tier: str | None
    authority_tier_inherited: bool
    webhook_enabled: bool
    webhook_secret: SecretMask
    incremental_cursor: dict[str, Any] | None
    last_probe_at: datetime | None
    last_probe_status: str | None
    created_at: datetime
    updated_at: datetime
    entity_count: int
    dlq_depth: int
    last_run: LastRunOut | None
    schedule: ScheduleOut


class SourcePage(msgspec.Struct):
    items: list[SourceOut]
    next_cursor: str | None


class SourceCreate(Input):
    name: Name
    connector_type: Annotated[str, Meta(min_length=1, max_length=50)]
    base_url: Url | None = None
    credential: SecretText | None = None
    webhook_secret: SecretText | None = None
    auth_account: AuthAccount = "service"
    auth_method: AuthMethod = "static_token"
    state: SourceState = "active"
    scope_mode: ScopeMode = "all"
    scope_list: Annotated[list[ScopeItem], Meta(max_length=1000)] = msgspec.field(default_factory=list)
    content_filters: dict[str, bool] = msgspec.field(default_factory=dict)
    sync_interval: Seconds | None = None
    reconcile_interval: Seconds | None = None
    reconcile_window: WindowIn | None = None
    authority_tier: Tier | None = None
    webhook_enabled: bool = False


class SourcePatch(Input):
    """Absent fields stay; ``null`` clears a nullable one (an override then inherits the platform default)."""

    name: Name | UnsetType = UNSET
    base_url: Url | UnsetType | None = UNSET
    credential: SecretText | UnsetType | None = UNSET
    webhook_secret: SecretText | UnsetType | None = UNSET
    auth_account: AuthAccount | UnsetType = UNSET
    auth_method: AuthMethod | UnsetType = UNSET
    state: SourceState | UnsetType = UNSET
    scope_mode: ScopeMode | UnsetType = UNSET
    scope_list: Annotated[list[ScopeItem], Meta(max_length=1000)] | UnsetType = UNSET
    content_filters: dict[str, bool] | UnsetType = UNSET
    sync_interval: Seconds | UnsetType | None = UNSET
    reconcile_interval: Seconds | UnsetType | None = UNSET
    reconcile_window: WindowIn | UnsetType | None = UNSET
    authority_tier: Tier | UnsetType | None = UNSET
    webhook_enabled: bool | UnsetType = UNSET


# ---------------------------------------------------------------- runs


class ItemRef(Input):
    source_type: Annotated[str, Meta(min_length=1, max_length=50)]
    source_entity_id: Annotated[str, Meta(min_length=1, max_length=500)]


class WindowScope(Input, tag="window", tag_field="kind"):
    since: Annotated[datetime, Meta(tz=True)]


class ItemsScope(Input, tag="items", tag_field="kind"):
    items: Annotated[list[ItemRef], Meta(min_length=1, max_length=10_000)]


class ContainersScope(Input, tag="containers", tag_field="kind"):
    containers: Annotated[list[Annotated[str, Meta(min_length=1, max_length=500)]], Meta(min_length=1, max_length=1000)]


class RunCreate(Input):
    mode: Mode = "incremental"
    scope: WindowScope | ItemsScope | ContainersScope | None = None
    confirm_mass_delete: bool = False


class ProgressOut(msgspec.Struct):
    done: int
    total: int | None
    percent: float | None
    elapsed_seconds: float | None
    rate_per_second: float | None
    eta_seconds: float | None


class CompletenessOut(msgspec.Struct):
    """One scope unit of a reconciliation's completeness audit (issue 12)."""

    container: str
    source_count: int | None
    live_count: int
    difference: int | None


class RunOut(msgspec.Struct):
    id: int
    source_id: int
    mode: str
    trigger: str
    state: str
    run_type: str
    scope: dict[str, Any] | None
    entities_done: int | None
    entities_total: int | None
    error_count: int
    error_detail: str | None
    api_calls: int
    rate_limited: int
    deliveries: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    duration_seconds: float | None
    progress: ProgressOut
    # Reconciliations only, in GET /runs/{id}: per unit, the source's count vs the live entities held.
    completeness: list[CompletenessOut] | None = None


class RunPage(msgspec.Struct):
    items: list[RunOut]
    next_cursor: str | None


GroupStatus = Literal["queued", "running", "succeeded", "partially_failed", "failed", "cancelled"]


class RunGroupOut(msgspec.Struct):
    """A group's status, computed from its runs now (see docs/api.md "Group status")."""

    status: GroupStatus
    counts: dict[str, int]
    # Runs that succeeded with error_count > 0 (items in dead letters): partial success per run (brief §3).
    succeeded_with_errors: int
    # Requested ids that are not runs (never silently dropped).
    missing: list[int]
    runs: list[RunOut]


class SkippedSource(msgspec.Struct):
    source_id: int
    active_run_id: int | None


class SyncAllCreate(Input):
    mode: Mode = "incremental"


class SyncAllOut(msgspec.Struct):
    run_ids: list[int]
    status_url: str | None
    runs: list[RunOut]
    skipped: list[SkippedSource]


class ConnectOut(msgspec.Struct):
    probe_status: str
    run: RunOut | None


# ---------------------------------------------------------------- dead letters


class DeadLetterOut(msgspec.Struct):
    id: int
    source_id: int
    run_id: int | None
    source_type: str
    source_entity_id: str
    reason: str
    error_detail: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime


class DeadLetterPage(msgspec.Struct):
    items: list[DeadLetterOut]
    next_cursor: str | None


class DeadLetterSummaryOut(msgspec.Struct):
    source_id: int
    total: int
    by_reason: dict[str, int]


# ---------------------------------------------------------------- settings


AlertEvent = Literal[
    "run_failed", "source_health_error", "mass_delete_held", "dead_letters_over_threshold", "worker_gone"
]


class AlertChannelIn(Input):
    """A notification channel: a generic JSON webhook (HMAC-signed when ``secret`` is set) or a Slack
    incoming webhook. ``events`` limits it to some alert kinds (default: all)."""

    kind: Literal["webhook", "slack"]
    url: Annotated[str, Meta(min_length=1, max_length=2048)]
    secret: Annotated[str, Meta(min_length=16, max_length=256)] | None = None
    events: list[AlertEvent] | None = None


class AlertChannelOut(msgspec.Struct):
    kind: str
    url: str  # a Slack URL's path is its secret: shown masked
    secret: str | None  # mask only
    events: list[str] | None


class SettingsValues(msgspec.Struct):
    sync_interval: int
    reconcile_interval: int
    reconcile_window: WindowOut
    probe_interval: int
    watchdog_silence: int
    timezone: str
    mass_delete_share: float
    incremental_lookback: int
    max_deliveries: int
    stale_run_after: int
    lane_wait_max: int
    takeover_grace: int
    webhook_dedupe_ttl: int
    search_include_drafts: bool
    completeness_tolerance: float
    rate_limit_patience: int
    fetch_fanout: int
    directory_ttl: int
    lock_wait_max: int
    response_max_mib: int
    response_max_seconds: int
    alert_channels: list[AlertChannelOut] = msgspec.field(default_factory=list)
    alert_dlq_threshold: int = 100


class SettingsOut(msgspec.Struct):
    version: int
    values: SettingsValues


class SettingsUpdate(Input):
    """Only the given keys change. ``version``, if given, must equal the stored one (else 409)."""

    version: Annotated[int, Meta(ge=0)] | UnsetType = UNSET
    sync_interval: Seconds | UnsetType = UNSET
    reconcile_interval: Seconds | UnsetType = UNSET
    reconcile_window: WindowIn | UnsetType = UNSET
    probe_interval: Seconds | UnsetType = UNSET
    watchdog_silence: Seconds | UnsetType = UNSET
    timezone: Annotated[str, Meta(min_length=1, max_length=64)] | UnsetType = UNSET
    mass_delete_share: Annotated[float, Meta(gt=0, le=1)] | UnsetType = UNSET
    incremental_lookback: Seconds | UnsetType = UNSET
    max_deliveries: Annotated[int, Meta(ge=1, le=MAX_DELIVERIES_LIMIT)] | UnsetType = UNSET
    stale_run_after: Seconds | UnsetType = UNSET
    lane_wait_max: Seconds | UnsetType = UNSET
    takeover_grace: Seconds | UnsetType = UNSET
    webhook_dedupe_ttl: Seconds | UnsetType = UNSET
    search_include_drafts: bool | UnsetType = UNSET
    alert_channels: Annotated[list[AlertChannelIn], Meta(max_length=20)] | UnsetType = UNSET
    alert_dlq_threshold: Annotated[int, Meta(ge=1, le=10_000_000)] | UnsetType = UNSET
    completeness_tolerance: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    rate_limit_patience: Seconds | UnsetType = UNSET
    fetch_fanout: Annotated[int, Meta(ge=1, le=MAX_FANOUT)] | UnsetType = UNSET
    directory_ttl: Annotated[int, Meta(ge=0, le=MAX_DIRECTORY_TTL)] | UnsetType = UNSET
    lock_wait_max: Annotated[int, Meta(ge=1, le=MAX_LOCK_WAIT)] | UnsetType = UNSET
    response_max_mib: Annotated[int, Meta(ge=1, le=MAX_RESPONSE_MIB)] | UnsetType = UNSET
    response_max_seconds: Annotated[int, Meta(ge=1, le=MAX_RESPONSE_SECONDS)] | UnsetType = UNSET


# ---------------------------------------------------------------- workers, notes, webhooks, health


class WorkerOut(msgspec.Struct):
    id: int
    last_heartbeat: datetime
    seconds_since_heartbeat: float
    online: bool


class RedeliveredRunOut(msgspec.Struct):
    id: int
    source_id: int
    deliveries: int
    claimed_at: datetime | None
    worker_id: str | None
    run_type: str  # derived by sync_run_history (full, incremental, partial_resync, dlq_retry, reconciliation)


class WorkersOut(msgspec.Struct):
    online: int
    workers: list[WorkerOut]
    redelivered_runs: list[RedeliveredRunOut]


class NotesOut(msgspec.Struct):
    entity_id: int
    source_id: int
    source_type: str
    source_entity_id: str
    fact_status: str | None
    work_kind: str | None
    done_text: str | None
    rest_text: str | None
    owner_note: str | None
    updated_by: str | None
    updated_at: datetime | None


class NotesIn(Input):
    fact_status: Annotated[str, Meta(max_length=200)] | None = None
    work_kind: Annotated[str, Meta(max_length=200)] | None = None
    done_text: NoteText | None = None
    rest_text: NoteText | None = None
    owner_note: NoteText | None = None


class WebhookOut(msgspec.Struct):
    status: str
    delivery_id: str | None = None
    items: int = 0
    challenge: str | None = None


class MigrationsOut(msgspec.Struct):
    current: bool
    applied: int
    pending: list[str]
    changed: list[str]


class HealthOut(msgspec.Struct):
    status: str
    database: bool
    migrations: MigrationsOut | None
    workers_online: int | None


# ---------------------------------------------------------------- tokens


class TokenCreate(Input):
    """A new bearer token: a unique name (among live tokens), a scope and an optional expiry."""

    name: Annotated[str, Meta(min_length=1, max_length=200, examples=["admin-panel"])]
    scope: Annotated[
        Literal["admin", "read", "search"],
        Meta(
            examples=["read"],
            description="admin: everything, search as anyone; read: GET only, no search; "
            "search: POST /search only, as `principals`",
        ),
    ]
    expires_at: Annotated[datetime | None, Meta(description="with a time zone; null: never expires")] = None
    principals: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=330)]],
        Meta(
            max_length=500,
            examples=[["user:anna@example.com", "group:jira:alpha-team"]],
            description="search scope only (required there): the ACL tokens it may search as, "
            "at most one user:<id> and any group:<connector>:<id>",
        ),
    ] = msgspec.field(default_factory=list)


class TokenOut(msgspec.Struct):
    """A token as listed: never its value or hash."""

    id: int
    name: str
    scope: str
    state: Literal["active", "expired", "revoked"]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    principals: Annotated[list[str] | None, Meta(description="whom a search token may search as; null otherwise")]


class TokenPage(msgspec.Struct):
    items: list[TokenOut]
    next_cursor: str | None


class TokenCreated(TokenOut):
    """The created token; ``token`` is shown this once (only its SHA-256 is stored)."""

    token: str
