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
-- Per source, the audit rows of its latest reconciliation that has any (for metrics). Only
-- reconciliations are audited (app/pipeline/run.py), so each source's look-up reads its reconciliations
-- through sync_runs_reconciliation_idx, a few a month, and not every run it ever made (decisions 83, 89).
select s.id as source_id, c.container, c.source_count, c.live_count
from sources s
cross join lateral (
    select max(r.id) as run_id from sync_runs r
    where r.source_id = s.id and r.mode = 'reconciliation'
      and exists (select 1 from run_completeness x where x.run_id = r.id)) as latest
join run_completeness c on c.run_id = latest.run_id
order by s.id, c.container;
