-- Procrastinate's workers as the API reports them (seed 003: online if seen in the last 5 minutes).

-- name: ListJobWorkers :many
-- Procrastinate's workers and their heartbeats (function harvester_job_workers, migration 8).
select w.id::bigint as id, w.last_heartbeat::timestamptz as last_heartbeat from harvester_job_workers() as w;
