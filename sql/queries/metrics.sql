-- Prometheus metrics read at scrape time (app/api/metrics.py); nothing here is stored for metrics.

-- name: ListSourceLastSuccess :many
-- Every source with its name, connector and the end of its last succeeded run (NULL: never succeeded).
select s.id, s.name, s.connector_type,
       (select max(r.finished_at) from sync_runs r where r.source_id = s.id and r.state = 'succeeded')::timestamptz as last_success
from sources s order by s.id;

-- name: ListRunDurations :many
-- Finished runs' durations in seconds by source, mode and state (the run-duration histogram).
select r.source_id, r.mode, r.state,
       array_agg(extract(epoch from r.finished_at - coalesce(r.started_at, r.created_at))::float8)::float8[] as durations
from sync_runs r
where r.finished_at is not null
group by r.source_id, r.mode, r.state
order by r.source_id, r.mode, r.state;
