-- Completeness audit of reconciliations (issue 12, item 6): per scope unit, what the source reports
-- vs the live entities held. Written by the worker right after a reconciliation resolves.

-- name: CountLiveByContainer :many
-- Live entities of a source per container (project, space, channel), neighbours outside the scope excluded.
select coalesce(e.container, '') as container, count(*)::integer as live
from entities e
where e.source_id = sqlc.arg(source_id)::bigint and e.deleted_at is null and not e.out_of_scope
group by 1
order by 1;

-- name: InsertRunCompleteness :exec
-- Stores one run's audit rows (one per container); a resumed resolution rewrites them.
insert into run_completeness (run_id, container, source_count, live_count)
select sqlc.arg(run_id)::bigint, r.container, r.source_count, r.live_count
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(container text, source_count integer, live_count integer)
on conflict on constraint run_completeness_pkey do update
set source_count = excluded.source_count, live_count = excluded.live_count;

-- name: ListRunCompleteness :many
-- One run's audit rows, by container.
select container, source_count, live_count
from run_completeness
where run_id = sqlc.arg(run_id)::bigint
order by container;

-- name: LatestCompleteness :many
-- Per source, the audit rows of its latest reconciliation that has any (for metrics).
select r.source_id, c.container, c.source_count, c.live_count
from run_completeness c
join sync_runs r on r.id = c.run_id
where r.id = (select max(c2.run_id) from run_completeness c2 join sync_runs r2 on r2.id = c2.run_id
              where r2.source_id = r.source_id)
order by r.source_id, c.container;
