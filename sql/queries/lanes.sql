-- Lane coordination with Knowledge Store (seed 001 "Координация полос").
-- Knowledge Store holds pg_advisory_lock(lane_class, source_id) (exclusive, two-int form) around
-- destructive steps (merge, retention); a sync run holds the shared form for its whole duration.

-- name: TryLaneShared :one
-- Takes the source's lane in shared mode without waiting; false while an exclusive holder exists.
select pg_try_advisory_lock_shared(sqlc.arg(lane_class)::integer, sqlc.arg(source_id)::integer)::boolean as acquired;

-- name: ReleaseLaneShared :exec
-- Releases the shared lane lock taken by TryLaneShared.
select pg_advisory_unlock_shared(sqlc.arg(lane_class)::integer, sqlc.arg(source_id)::integer);
