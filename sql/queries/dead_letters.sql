-- Dead-letter queue: one row per unresolved failed item (seed 000 §3).

-- name: UpsertDeadLetters :exec
-- Parks a page's failed items in one statement (one call of the totals triggers, decision 85); a repeat
-- keeps one row, takes the fresh reason and counts the attempt once per run. An item listed twice in the
-- page is parked once, with its last failure (an upsert cannot touch one row twice); new items take their
-- ids in page order (of that last listing).
insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason, error_detail)
select sqlc.arg(source_id)::bigint, sqlc.narg(run_id)::bigint, r.source_type, r.source_entity_id, r.reason, r.error_detail
from (select distinct on (x.item ->> 'source_type', x.item ->> 'source_entity_id')
             x.item ->> 'source_type' as source_type, x.item ->> 'source_entity_id' as source_entity_id,
             x.item ->> 'reason' as reason, x.item ->> 'error_detail' as error_detail, x.n
      from jsonb_array_elements(sqlc.arg(rows)::jsonb) with ordinality as x(item, n)
      order by x.item ->> 'source_type', x.item ->> 'source_entity_id', x.n desc) as r
order by r.n
on conflict on constraint dead_letters_item_key do update
set attempts = dead_letters.attempts
               + case when dead_letters.run_id is not distinct from excluded.run_id then 0 else 1 end,
    reason = excluded.reason,
    error_detail = excluded.error_detail,
    run_id = excluded.run_id;

-- name: DeleteDeadLetters :execrows
-- Items that loaded or are gone at the source leave the queue.
-- One look-up per identity through the item key (decision 82): a source's queue can hold thousands of
-- rows while the statistics say it is empty, and a join would read all of them for every page.
delete from dead_letters d
using jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(source_type text, source_entity_id text)
cross join lateral (
    select x.id from dead_letters x
    where x.source_id = sqlc.arg(source_id)::bigint
      and x.source_type = r.source_type and x.source_entity_id = r.source_entity_id
    offset 0) as k
where d.id = k.id;

-- name: ListDeadLetterIdentities :many
-- Every unresolved identity of a source: the scope of a DLQ-retry run.
select source_type, source_entity_id from dead_letters
where source_id = sqlc.arg(source_id)::bigint order by id;

-- name: ListDeadLetters :many
-- Failed-items review, oldest first: one keyset page of a source's queue (ids above the cursor's; 0 before
-- the first page), optionally of one reason or source type. Read one reason at a time (decision 88): the
-- reasons the source has are its rows of dead_letter_totals, each reason's next `lim` items come from
-- dead_letters_reason_source_idx, and the page is the first `lim` of those by id. So no page reads
-- another source's or reason's items, however many were parked before them (a storm: decision 87).
-- The read is a range of that index's key, not equalities: with `reason = t.reason` both columns are
-- constants inside the lateral read, `order by id` is then the primary key's order too, and the generic
-- plan walked the primary key through the storm. No other index has the three columns' order.
select d.id, d.source_id, d.run_id, d.source_type, d.source_entity_id, d.reason, d.error_detail, d.attempts,
       d.created_at, d.updated_at
from dead_letter_totals t
cross join lateral (
    select x.id, x.source_id, x.run_id, x.source_type, x.source_entity_id, x.reason, x.error_detail, x.attempts,
           x.created_at, x.updated_at
    from dead_letters x
    where (x.reason, x.source_id, x.id) > (t.reason, t.source_id, coalesce(sqlc.narg(after_id)::bigint, 0))
      and (x.reason, x.source_id, x.id) <= (t.reason, t.source_id, 9223372036854775807)
      and (sqlc.narg(source_type)::text is null or x.source_type = sqlc.narg(source_type)::text)
    order by x.reason, x.source_id, x.id
    limit sqlc.arg(lim)::integer) d
where t.source_id = sqlc.arg(source_id)::bigint
  and (sqlc.narg(reason)::text is null or t.reason = sqlc.narg(reason)::text)
order by d.id
limit sqlc.arg(lim)::integer;

-- name: SummarizeDeadLetters :many
-- Live DLQ depth by reason (not sync_runs.error_count, which is a snapshot), from dead_letter_totals
-- (kept by triggers on dead_letters, decision 85), not a count of the queue per call.
select reason, items from dead_letter_totals
where source_id = sqlc.arg(source_id)::bigint order by reason;

-- name: SourceHasDeadLetters :one
-- Whether the source has any queued item (a run with an empty queue skips the per-page clean-up).
select exists (select 1 from dead_letters where source_id = sqlc.arg(source_id)::bigint)::boolean as has_any;

-- name: CountDeadLettersBySourceReason :many
-- Live DLQ depth per source and reason, with the source's name (metrics, the demo's summary), from
-- dead_letter_totals (decision 85).
select t.source_id, s.name, t.reason, t.items
from dead_letter_totals t join sources s on s.id = t.source_id
order by s.name, t.reason;
