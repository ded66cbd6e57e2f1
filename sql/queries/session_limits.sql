-- What a run's session may hold, and for how long (decisions 159 and 160): how long a statement waits for a
-- lock another session holds, how long its page's transaction may sit idle; who holds a lock when a wait ran out.

-- name: SetRunSessionLimits :exec
-- For the rest of the session: a statement that waits longer than lock_timeout for another session's lock
-- fails with lock_not_available instead of waiting without end; a transaction left idle longer than
-- idle_timeout (its client paused or frozen mid-page) is ended by the server, which lets go of its locks.
select set_config('lock_timeout', sqlc.arg(lock_timeout)::text, false),
       set_config('idle_in_transaction_session_timeout', sqlc.arg(idle_timeout)::text, false);

-- name: SetLockWait :exec
-- lock_timeout alone, for the rest of the session: a run's other connections (its read-ahead's rate gate and
-- look-ups, its source process's) and the API pool's (decision 161), none of which a run's page holds open.
select set_config('lock_timeout', sqlc.arg(lock_timeout)::text, false);

-- name: ResetRunSessionLimits :exec
-- Back to the session's own values (what RESET would give: the login's, the role's or the server's).
select set_config('lock_timeout', (select reset_val from pg_catalog.pg_settings where name = 'lock_timeout'), false),
       set_config('idle_in_transaction_session_timeout',
                  (select reset_val from pg_catalog.pg_settings where name = 'idle_in_transaction_session_timeout'),
                  false);

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
