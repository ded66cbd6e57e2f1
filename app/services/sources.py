"""Source registration and run starting, shared by the API and the CLI (one code path)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from app.errors import HarvesterError
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec, known_types
from app.secrets import Keyring
from connectors.http import base_url_problem, header_value_problem


class InvalidField(HarvesterError):
    """A request field is invalid; ``field`` names it (the API answers 422 with it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NameTaken(InvalidField):
    """The name belongs to another source (its unique index said so); the API answers 409."""


class RunConflict(HarvesterError):
    """The source already has a queued or running run (the partial unique index said so)."""

    def __init__(self, active_run_id: int | None) -> None:
        super().__init__(f"source already has an active run ({active_run_id})")
        self.active_run_id = active_run_id


@dataclass(frozen=True, slots=True)
class NewSource:
    name: str
    connector_type: str
    base_url: str | None = None
    credential: str | None = None
    webhook_secret: str | None = None
    scope_mode: str = "all"
    scope_list: Sequence[Any] = ()
    content_filters: Mapping[str, bool] = field(default_factory=dict)
    auth_account: str = "service"
    auth_method: str = "static_token"
    state: str = "active"
    sync_interval: int | None = None
    reconcile_interval: int | None = None
    reconcile_window: int | None = None
    authority_tier: str | None = None
    webhook_enabled: bool = False


def validate_against_manifest(
    connector_type: str, scope_list: Sequence[Any], filters: Mapping[str, Any], auth_method: str | None = None
) -> None:
    try:
        spec = get_spec(connector_type)
    except KeyError:
        raise InvalidField("connector_type", f"unknown connector; known: {', '.join(known_types())}") from None
    if auth_method is not None and auth_method not in spec.manifest.auth_methods:
        # Seed 000 allows static_token and oauth in general; a connector supports only what its manifest says.
        supported = list(spec.manifest.auth_methods)
        raise InvalidField("auth_method", f"{connector_type} does not support {auth_method!r}; it supports {supported}")
    allowed = {f.key for f in spec.manifest.content_filters}
    for key, value in filters.items():
        if key not in allowed:
            raise InvalidField(f"content_filters.{key}", f"unknown filter; {connector_type} declares {sorted(allowed)}")
        if not isinstance(value, bool):
            raise InvalidField(f"content_filters.{key}", "must be true or false")
    for i, item in enumerate(scope_list):
        if isinstance(item, Mapping):
            kind = item.get("kind")
            if kind not in spec.manifest.scope_kinds:
                raise InvalidField(
                    f"scope_list[{i}].kind",
                    f"unknown scope kind {kind!r}; {connector_type} declares {list(spec.manifest.scope_kinds)}",
                )
        elif not isinstance(item, str) or not item.strip():
            raise InvalidField(f"scope_list[{i}]", "must be a container id string or an object with a kind")


def credential_problem(credential: str | None) -> str | None:
    """Why ``credential`` can never be sent (it travels as an HTTP header), or None; never quotes it."""
    if not credential:
        return None
    problem = header_value_problem(credential)
    return f"cannot be sent as an HTTP header: it {problem}" if problem else None


def check_credential(credential: str | None) -> None:
    """Refuse at input a credential no request could carry (issue 11: not a traceback mid-run)."""
    problem = credential_problem(credential)
    if problem is not None:
        raise InvalidField("credential", problem)


def check_base_url(url: str | None) -> None:
    """Refuse at input a base URL no client could open (else every run would fail on it)."""
    problem = base_url_problem(url) if url else None
    if problem is not None:
        raise InvalidField("base_url", problem)


def create_source(conn: psycopg.Connection[Any], keyring: Keyring, new: NewSource) -> int:
    """Insert a source with its secrets encrypted.

    Runs as one ``conn.transaction()`` block: a savepoint inside the caller's transaction, which the
    caller commits (on an autocommit connection the block is the transaction). A refused name or
    check rolls back only the savepoint, so the caller's transaction stays usable.
    """
    check_credential(new.credential)
    check_base_url(new.base_url)
    validate_against_manifest(new.connector_type, new.scope_list, new.content_filters, new.auth_method)
    defaults = {f.key: f.default for f in get_spec(new.connector_type).manifest.content_filters}
    with conn.transaction():
        try:
            source_id = sq.create_source(
                conn,
                name=new.name,
                connector_type=new.connector_type,
                base_url=new.base_url,
                auth_account=new.auth_account,
                auth_method=new.auth_method,
                credential_enc=None,
                state=new.state,
                scope_mode=new.scope_mode,
                scope_list=list(new.scope_list),
                content_filters={**defaults, **dict(new.content_filters)},
                sync_interval=new.sync_interval,
                reconcile_interval=new.reconcile_interval,
                reconcile_window=new.reconcile_window,
                authority_tier=new.authority_tier,
                webhook_enabled=new.webhook_enabled,
                webhook_secret_enc=None,
            )
        except psycopg.errors.UniqueViolation:
            raise NameTaken("name", f"a source named {new.name!r} already exists") from None
        except psycopg.errors.CheckViolation as exc:
            raise _check_failed(exc) from None
        assert source_id is not None
        context = f"source:{source_id}"
        sq.set_source_secrets(
            conn,
            id=source_id,
            credential_enc=keyring.encrypt(new.credential, context=context) if new.credential else None,
            webhook_secret_enc=keyring.encrypt(new.webhook_secret, context=context) if new.webhook_secret else None,
        )
    return source_id


def _check_failed(exc: psycopg.errors.CheckViolation) -> InvalidField:
    constraint = exc.diag.constraint_name or "a check"
    return InvalidField(constraint.removeprefix("sources_").split("_check")[0], f"violates {constraint}")


def resolve_source(conn: psycopg.Connection[Any], name_or_id: str) -> int:
    found = sq.get_source_id_by_name(conn, name=name_or_id)
    if found is not None:
        return found
    # Digits beyond bigint are no id (the query would fail on them): such a source does not exist.
    if name_or_id.isdigit() and int(name_or_id) < 2**63 and sq.get_source(conn, id=int(name_or_id)) is not None:
        return int(name_or_id)
    raise HarvesterError(f"no source named or numbered {name_or_id!r}; see `harvester sources list`")


def start_run(
    conn: psycopg.Connection[Any],
    source_id: int,
    *,
    mode: str,
    trigger: str,
    scope: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Queue a run; raises RunConflict naming the active run if the source already has one."""
    if mode not in ("full", "incremental", "reconciliation"):
        raise InvalidField("mode", "must be full, incremental or reconciliation")
    run_id = rq.start_run(
        conn,
        source_id=source_id,
        mode=mode,
        trigger=trigger,
        scope=dict(scope) if scope is not None else None,
        options=dict(options) if options else None,
    )
    if run_id is None:
        active = rq.get_active_run(conn, source_id=source_id)
        raise RunConflict(active)
    return run_id


# Columns a PATCH may change (connector_type is fixed: a different connector is a different source).
PATCHABLE = (
    "name",
    "base_url",
    "auth_account",
    "auth_method",
    "credential",
    "webhook_secret",
    "state",
    "scope_mode",
    "scope_list",
    "content_filters",
    "sync_interval",
    "reconcile_interval",
    "reconcile_window",
    "authority_tier",
    "webhook_enabled",
)


def update_source(conn: psycopg.Connection[Any], keyring: Keyring, source_id: int, patch: Mapping[str, Any]) -> bool:
    """Apply a partial update in the caller's transaction; False when the source does not exist.

    Secrets are encrypted here (``None`` clears one); moving to ``disconnected`` clears the credential
    (seed 000). Scope and filters are checked against the manifest; filters merge over the stored ones.
    """
    unknown = sorted(set(patch) - set(PATCHABLE))
    if unknown:
        raise InvalidField(unknown[0], "cannot be changed")
    check_credential(patch.get("credential"))
    check_base_url(patch.get("base_url"))
    row = sq.lock_source(conn, id=source_id)
    if row is None:
        return False
    context = f"source:{source_id}"
    state = patch.get("state", row.state)
    scope_list = list(patch["scope_list"]) if "scope_list" in patch else list(row.scope_list or [])
    filters = {**dict(row.content_filters or {}), **dict(patch.get("content_filters") or {})}
    validate_against_manifest(
        row.connector_type, scope_list, dict(patch.get("content_filters") or {}), patch.get("auth_method")
    )
    credential_enc = row.credential_enc
    if "credential" in patch:
        credential = patch["credential"]
        credential_enc = keyring.encrypt(credential, context=context) if credential else None
    if state == "disconnected":
        if patch.get("credential"):
            raise InvalidField("credential", "a disconnected source holds no credential")
        credential_enc = None
    webhook_secret_enc = row.webhook_secret_enc
    if "webhook_secret" in patch:
        secret = patch["webhook_secret"]
        webhook_secret_enc = keyring.encrypt(secret, context=context) if secret else None
    try:
        # A savepoint: a refused name or check undoes only this statement, not the caller's transaction.
        with conn.transaction():
            sq.update_source(
                conn,
                id=source_id,
                name=patch.get("name", row.name),
                base_url=patch.get("base_url", row.base_url),
                auth_account=patch.get("auth_account", row.auth_account),
                auth_method=patch.get("auth_method", row.auth_method),
                credential_enc=credential_enc,
                state=state,
                scope_mode=patch.get("scope_mode", row.scope_mode),
                scope_list=scope_list,
                content_filters=filters,
                sync_interval=patch.get("sync_interval", row.sync_interval),
                reconcile_interval=patch.get("reconcile_interval", row.reconcile_interval),
                reconcile_window=patch.get("reconcile_window", row.reconcile_window),
                authority_tier=patch.get("authority_tier", row.authority_tier),
                webhook_enabled=patch.get("webhook_enabled", row.webhook_enabled),
                webhook_secret_enc=webhook_secret_enc,
            )
    except psycopg.errors.UniqueViolation:
        raise NameTaken("name", f"a source named {patch.get('name')!r} already exists") from None
    except psycopg.errors.CheckViolation as exc:
        raise _check_failed(exc) from None
    return True
