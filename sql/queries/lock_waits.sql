-- How long a run waits for locks other sessions hold, and who holds them when a wait runs out (decision 159).

-- name: SetLockWait :exec
-- lock_timeout for the rest of the session: every statement of the run that waits longer than this for a
-- lock another session holds fails with lock_not_available instead of waiting without end.
select set_config('lock_timeout', sqlc.arg(timeout)::text, false);

-- name: ResetLockWait :exec
-- Back to the session's own lock_timeout (what RESET would give: the login's, the role's or the server's).
select set_config('lock_timeout', (select reset_val from pg_catalog.pg_settings where name = 'lock_timeout'), false);

-- name: WriteLockHolders :many
-- Sessions that hold a table lock in this database a run's writes wait for: SHARE (CREATE INDEX without
-- CONCURRENTLY, LOCK TABLE ... IN SHARE MODE) and every stronger mode (ALTER TABLE, VACUUM FULL, CLUSTER).
-- Read after a wait ran out, so a row lock, or a table lock let go since, leaves no row. Names, modes and
-- ages only: the holder's statement text is never read (it may carry anything).
select coalesce(l.pid, 0)::integer as pid, coalesce(a.usename::text, '')::text as usename,
       coalesce(a.application_name, '')::text as application_name, l.mode::text as mode, c.relname::text as relation,
       coalesce(extract(epoch from clock_timestamp() - a.xact_start), 0)::bigint as held_seconds
from pg_catalog.pg_locks l
join pg_catalog.pg_class c on c.oid = l.relation
left join pg_catalog.pg_stat_activity a on a.pid = l.pid
where l.locktype = 'relation' and l.granted
  and l.database = (select d.oid from pg_catalog.pg_database d where d.datname = current_database())
  and l.mode in ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
  and l.pid is distinct from pg_backend_pid()
order by a.xact_start nulls last, l.pid, c.relname
limit sqlc.arg(lim)::integer;
