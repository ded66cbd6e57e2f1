-- One rate budget per credential (issue 12, item 7): every run of a credential takes a token before a
-- request and feeds the budget what the source answered.

-- name: TakeRateToken :one
-- 0 when a request may go now, else the seconds to wait (pause or empty bucket); metered: the credential
-- has a bucket whose tokens each request spends (false: nothing to spend until a source describes a limit).
select harvester_take_rate_token(sqlc.arg(credential_key)::text)::float8 as wait_seconds,
       exists (select 1 from rate_budgets
               where credential_key = sqlc.arg(credential_key)::text and capacity > 0 and refill_per_second > 0) as metered;

-- name: ObserveRateLimit :exec
-- Records what the source said: a pause until now + pause_seconds (never shortening a longer one) after
-- which the bucket holds resume_tokens (NULL: 0, it refills from the pause's end, so runs resume at the
-- refill rate instead of all bursting into a token-bucket source; a fixed window's quota: the window that
-- opens at the pause's end admits that many), and/or the bucket's capacity and refill rate.
insert into rate_budgets as b (credential_key, capacity, refill_per_second, tokens, paused_until, updated_at)
values (sqlc.arg(credential_key)::text,
        coalesce(sqlc.narg(capacity)::float8, 0),
        coalesce(sqlc.narg(refill_per_second)::float8, 0),
        case when sqlc.narg(pause_seconds)::float8 is null then coalesce(sqlc.narg(capacity)::float8, 0)
             else coalesce(sqlc.narg(resume_tokens)::float8, 0) end,
        now() + make_interval(secs => sqlc.narg(pause_seconds)::float8),
        coalesce(now() + make_interval(secs => sqlc.narg(pause_seconds)::float8), now()))
on conflict on constraint rate_budgets_pkey do update
set capacity = coalesce(sqlc.narg(capacity)::float8, b.capacity),
    refill_per_second = coalesce(sqlc.narg(refill_per_second)::float8, b.refill_per_second),
    tokens = case when sqlc.narg(pause_seconds)::float8 is null then least(b.tokens, coalesce(sqlc.narg(capacity)::float8, b.capacity))
                  else coalesce(sqlc.narg(resume_tokens)::float8, 0) end,
    paused_until = greatest(b.paused_until, now() + make_interval(secs => sqlc.narg(pause_seconds)::float8)),
    updated_at = greatest(now(), b.paused_until, now() + make_interval(secs => sqlc.narg(pause_seconds)::float8));
