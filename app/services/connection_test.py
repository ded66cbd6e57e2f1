"""Testing a draft source's connection before it is saved (issue 14 §6), shared by ``harvester sources add``
and ``POST /api/v1/sources/test``: nothing is written, the credential only travels to the source.

The answer names one reason a person can act on: ``auth_failed`` (the source refused the credential),
``unreachable`` (no answer, or not the API we expected at that URL) or ``scope_not_visible`` (an
allow-listed project, space or channel the credential cannot see). The detail never carries the
credential: it names scope units and URLs only, and the credential is registered with the log redactor
before any request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.redact import register_secret
from app.registry import get_spec
from connectors.base import CallStats, SourceConfig, SourceError
from connectors.http import HttpError

Reason = Literal["ok", "auth_failed", "unreachable", "scope_not_visible"]

TIMEOUT = 10.0  # seconds per request of a connection test

# How each reason reads in a sentence (the CLI prints these; the API returns the codes).
REASON_TEXT: dict[str, str] = {
    "ok": "ok",
    "auth_failed": "auth failed",
    "unreachable": "unreachable",
    "scope_not_visible": "scope not visible",
}


@dataclass(frozen=True, slots=True)
class DraftSource:
    """The connection-relevant fields of a source that is not saved (yet)."""

    connector_type: str
    base_url: str
    credential: str | None
    scope_mode: str = "all"
    scope_list: Sequence[Any] = ()
    content_filters: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConnectionResult:
    reason: Reason
    detail: str
    unseen_scope: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reason == "ok"


def check_connection(draft: DraftSource) -> ConnectionResult:
    """Probe ``draft``'s source with its credential, then check its allow-listed scope is visible.

    The caller has validated the draft (connector type, base URL, credential, scope shape); an unknown
    connector type raises KeyError.
    """
    spec = get_spec(draft.connector_type)
    register_secret(draft.credential)  # this process now holds it: keep it out of its log lines
    config = SourceConfig(
        source_id=0,  # not saved: no id yet
        base_url=draft.base_url,
        credential=draft.credential,
        scope_mode="selected" if draft.scope_mode == "selected" else "all",
        scope_list=tuple(draft.scope_list),
        content_filters=dict(draft.content_filters),
        # Someone waits for the answer: two attempts of at most TIMEOUT seconds, and a source that says
        # "slow down" is not waited out for minutes.
        rate_limit_patience=TIMEOUT,
        max_attempts=2,
        timeout=TIMEOUT,
        response_max_seconds=TIMEOUT,  # a source trickling its answer is not waited for longer either
    )
    where = draft.base_url
    try:
        connector = spec.create(config, CallStats())
    except SourceError as exc:  # e.g. a credential no header can carry: nothing to send
        return ConnectionResult("unreachable", f"{where}: {exc}")
    try:
        status = connector.probe()
        if status == "auth_failed":
            return ConnectionResult("auth_failed", f"{where} refused the credential")
        if status != "ok":
            return ConnectionResult("unreachable", f"{where} did not answer, or not as a {draft.connector_type} API")
        try:
            unseen = connector.unseen_scope()
        except (SourceError, HttpError):
            return ConnectionResult("unreachable", f"{where} did not answer the scope look-up")
    finally:
        connector.close()
    if unseen:
        return ConnectionResult(
            "scope_not_visible",
            f"the credential cannot see {', '.join(unseen)} (it does not exist or is hidden from this account)",
            tuple(unseen),
        )
    return ConnectionResult("ok", f"{where} accepted the credential; the scope is visible")
