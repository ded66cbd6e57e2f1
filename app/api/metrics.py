"""Prometheus exposition with ``prometheus_client`` (issue 10 §4): gauges and a histogram read from the
database at scrape time by a custom collector, plus this process's own counters. Nothing here is stored
by Harvester.

- ``harvester_source_last_success_timestamp_seconds{source,connector}``: end of the last succeeded run,
  present for every source; **0 when the source never succeeded** (so ``time() - x`` is huge and any
  staleness rule fires, and a rule can tell "never" apart with ``== 0``).
- ``harvester_run_duration_seconds{source,connector,mode,state}``: histogram of finished runs' durations,
  read from ``sync_run_totals`` at scrape time (triggers keep it equal to the journal, so it survives
  restarts; decision 83: a scrape reads a few rows per source, never the whole journal).
- ``harvester_dlq_depth{source,connector}``, ``harvester_alert_delivery_failures_total`` (from the
  database), ``harvester_audit_sink_failures_total`` and ``harvester_webhook_requests_total`` (this API
  process), ``harvester_api_runs_cache_lookups_total{outcome}`` (this API process's runs cache). The
  older ``source_id``-labelled families are kept unchanged for existing dashboards.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from prometheus_client import REGISTRY, CollectorRegistry, Counter, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from app.queries import alerts as alq
from app.queries import completeness as cq
from app.queries import dead_letters as dq
from app.queries import runs as rq
from app.queries import sources as sq

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# "_created" samples double every counter's lines and no rule of ours reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]


class ProcessCounter:
    """A labelled counter living in this API process (reset on restart, as Prometheus expects)."""

    def __init__(self, name: str, documentation: str, label: str) -> None:
        self._counter = Counter(name, documentation, [label])

    def count(self, value: str) -> None:
        self._counter.labels(value).inc()


WEBHOOKS = ProcessCounter(
    "harvester_webhook_requests", "Webhook requests answered by this API process, by outcome.", "outcome"
)
# app/api/runs_cache.py: how the runs GETs of this process were answered. A high share of "built" under
# steady traffic means the pages change (or the listener is down: the cache is then off).
RUNS_CACHE = ProcessCounter(
    "harvester_api_runs_cache_lookups",
    "Runs GETs of this API process by how they were answered: hit (kept bytes), waited (kept bytes, after "
    "waiting for the request building the same page), built (read from the database).",
    "outcome",
)


def _cumulative(bounds: Sequence[float], buckets: Sequence[int], runs: Sequence[int]) -> list[tuple[str, float]]:
    """Prometheus buckets ("le" bound, runs at most that long) from the runs of the buckets that hold any:
    bucket i (1-based) counts durations above bound i-1 and at most bound i, bucket len(bounds) + 1 the
    longer ones (harvester_run_duration_bucket(); the SQL side owns the bounds)."""
    counts = [0] * (len(bounds) + 1)
    for bucket, n in zip(buckets, runs, strict=True):
        if not 1 <= bucket <= len(counts):
            raise ValueError(f"run-duration histogram: bucket {bucket} outside 1..{len(counts)}")
        counts[bucket - 1] += n
    running = list(itertools.accumulate(counts))
    return [(str(float(b)), float(n)) for b, n in zip(bounds, running, strict=False)] + [("+Inf", float(running[-1]))]


class DatabaseCollector(Collector):
    """Families read from the database on one connection, at scrape time."""

    def __init__(self, conn: psycopg.Connection[Any], workers_online: int) -> None:
        self.conn = conn
        self.workers_online = workers_online

    def collect(self) -> Iterator[Metric]:
        conn = self.conn
        sources = sq.list_source_last_success(conn)
        names = {s.id: (s.name, s.connector_type) for s in sources}

        last = GaugeMetricFamily(
            "harvester_source_last_success_timestamp_seconds",
            "End of the source's last succeeded run (Unix time); 0 when it never succeeded.",
            labels=["source", "connector"],
        )
        for s in sources:
            last.add_metric([s.name, s.connector_type], s.last_success.timestamp() if s.last_success else 0.0)
        yield last

        hist = HistogramMetricFamily(
            "harvester_run_duration_seconds",
            "Durations of finished runs (from the run journal).",
            labels=["source", "connector", "mode", "state"],
        )
        for d_row in rq.list_run_duration_histograms(conn):
            name, connector = names.get(d_row.source_id, (str(d_row.source_id), ""))
            buckets = _cumulative(d_row.bounds, d_row.buckets, d_row.bucket_runs)
            hist.add_metric([name, connector, d_row.mode, d_row.state], buckets, d_row.duration_sum)
        yield hist

        dlq_rows = dq.count_dead_letters_by_source_reason(conn)
        depth: dict[int, int] = {s.id: 0 for s in sources}
        for d in dlq_rows:
            depth[d.source_id] = depth.get(d.source_id, 0) + int(d.items)
        dlq = GaugeMetricFamily("harvester_dlq_depth", "Live dead-letter queue depth.", labels=["source", "connector"])
        for sid, n in depth.items():
            name, connector = names.get(sid, (str(sid), ""))
            dlq.add_metric([name, connector], n)
        yield dlq

        yield CounterMetricFamily(
            "harvester_alert_delivery_failures",
            "Failed alert delivery attempts (all incidents, all channels).",
            value=float(alq.sum_alert_send_failures(conn) or 0),
        )

        runs = GaugeMetricFamily(
            "harvester_runs", "Runs in the journal by source and state.", labels=["source_id", "state"]
        )
        for c_row in rq.count_runs_by_state(conn):
            runs.add_metric([str(c_row.source_id), c_row.state], c_row.runs)
        yield runs
        per_source = sq.summarize_sources_for_metrics(conn)
        legacy: list[tuple[str, str, str, Any]] = [
            (
                "harvester_items_processed",
                "counter",
                "Items processed by all runs of a source (entities_done).",
                "items_processed",
            ),
            ("harvester_source_api_calls", "counter", "HTTP calls made to the source by all its runs.", "api_calls"),
            (
                "harvester_rate_limited_calls",
                "counter",
                "Responses 429/503 received from the source by all its runs.",
                "rate_limited",
            ),
            ("harvester_webhook_runs", "counter", "Runs started by webhooks, per source.", "webhook_runs"),
        ]
        for name, _, doc, attr in legacy:
            fam = CounterMetricFamily(name, doc, labels=["source_id"])
            for r in per_source:
                fam.add_metric([str(r.source_id)], float(getattr(r, attr)))
            yield fam
        remembered = GaugeMetricFamily(
            "harvester_webhook_deliveries_remembered",
            "Delivery ids inside the dedupe window, per source.",
            labels=["source_id"],
        )
        since = GaugeMetricFamily(
            "harvester_seconds_since_last_success",
            "Seconds since the source's last succeeded run.",
            labels=["source_id"],
        )
        for r in per_source:
            remembered.add_metric([str(r.source_id)], r.webhook_deliveries)
            if r.seconds_since_success is not None:
                since.add_metric([str(r.source_id)], round(r.seconds_since_success, 3))
        yield remembered
        yield since
        dead = GaugeMetricFamily(
            "harvester_dead_letters",
            "Live dead-letter queue depth by source and reason.",
            labels=["source_id", "reason"],
        )
        for d in dlq_rows:
            dead.add_metric([str(d.source_id), d.reason], d.items)
        yield dead
        audit = cq.latest_completeness(conn)
        source_items = GaugeMetricFamily(
            "harvester_completeness_source_items",
            "Items the source reports per scope unit at the source's latest audited reconciliation.",
            labels=["source_id", "container"],
        )
        live_items = GaugeMetricFamily(
            "harvester_completeness_live_entities",
            "Live entities held per scope unit at the source's latest audited reconciliation.",
            labels=["source_id", "container"],
        )
        for unit in audit:
            if unit.source_count is not None:
                source_items.add_metric([str(unit.source_id), unit.container], unit.source_count)
            live_items.add_metric([str(unit.source_id), unit.container], unit.live_count)
        yield source_items
        yield live_items
        yield GaugeMetricFamily(
            "harvester_workers_online", "Workers with a heartbeat younger than 5 minutes.", value=self.workers_online
        )


def render(conn: psycopg.Connection[Any], workers_online: int) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(conn, workers_online))
    return (generate_latest(registry) + generate_latest(REGISTRY)).decode()
