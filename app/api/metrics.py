"""Prometheus text exposition (format 0.0.4), written by hand: a few gauges read from the database now,
plus this process's webhook counters. Nothing here is stored by Harvester."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

import psycopg

from app.queries import completeness as cq
from app.queries import dead_letters as dq
from app.queries import runs as rq
from app.queries import sources as sq

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ProcessCounter:
    """A labelled counter living in this API process (reset on restart, as Prometheus expects)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: Counter[str] = Counter()

    def count(self, label: str) -> None:
        with self._lock:
            self._values[label] += 1

    def items(self) -> list[tuple[str, int]]:
        with self._lock:
            return sorted(self._values.items())


WEBHOOKS = ProcessCounter()


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _family(name: str, kind: str, help_text: str, samples: Iterable[tuple[dict[str, Any], float | int]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{rendered}}} {value}" if rendered else f"{name} {value}")
    return lines


def render(conn: psycopg.Connection[Any], workers_online: int) -> str:
    runs = rq.count_runs_by_state(conn)
    per_source = sq.summarize_sources_for_metrics(conn)
    dlq = dq.count_dead_letters_by_source_reason(conn)
    lines: list[str] = []
    lines += _family(
        "harvester_runs",
        "gauge",
        "Runs in the journal by source and state.",
        (({"source_id": r.source_id, "state": r.state}, r.runs) for r in runs),
    )
    lines += _family(
        "harvester_items_processed_total",
        "counter",
        "Items processed by all runs of a source (entities_done).",
        (({"source_id": r.source_id}, r.items_processed) for r in per_source),
    )
    lines += _family(
        "harvester_dead_letters",
        "gauge",
        "Live dead-letter queue depth by source and reason.",
        (({"source_id": r.source_id, "reason": r.reason}, r.items) for r in dlq),
    )
    lines += _family(
        "harvester_seconds_since_last_success",
        "gauge",
        "Seconds since the source's last succeeded run.",
        (
            ({"source_id": r.source_id}, round(r.seconds_since_success, 3))
            for r in per_source
            if r.seconds_since_success is not None
        ),
    )
    lines += _family(
        "harvester_source_api_calls_total",
        "counter",
        "HTTP calls made to the source by all its runs.",
        (({"source_id": r.source_id}, r.api_calls) for r in per_source),
    )
    lines += _family(
        "harvester_rate_limited_calls_total",
        "counter",
        "Responses 429/503 received from the source by all its runs.",
        (({"source_id": r.source_id}, r.rate_limited) for r in per_source),
    )
    lines += _family(
        "harvester_webhook_runs_total",
        "counter",
        "Runs started by webhooks, per source.",
        (({"source_id": r.source_id}, r.webhook_runs) for r in per_source),
    )
    lines += _family(
        "harvester_webhook_deliveries_remembered",
        "gauge",
        "Delivery ids inside the dedupe window, per source.",
        (({"source_id": r.source_id}, r.webhook_deliveries) for r in per_source),
    )
    lines += _family(
        "harvester_webhook_requests_total",
        "counter",
        "Webhook requests answered by this API process, by outcome.",
        (({"outcome": label}, n) for label, n in WEBHOOKS.items()),
    )
    audit = cq.latest_completeness(conn)
    lines += _family(
        "harvester_completeness_source_items",
        "gauge",
        "Items the source reports per scope unit at the source's latest audited reconciliation.",
        (
            ({"source_id": r.source_id, "container": r.container}, r.source_count)
            for r in audit
            if r.source_count is not None
        ),
    )
    lines += _family(
        "harvester_completeness_live_entities",
        "gauge",
        "Live entities held per scope unit at the source's latest audited reconciliation.",
        (({"source_id": r.source_id, "container": r.container}, r.live_count) for r in audit),
    )
    lines += _family(
        "harvester_workers_online", "gauge", "Workers with a heartbeat younger than 5 minutes.", [({}, workers_online)]
    )
    return "\n".join(lines) + "\n"
