-- migrate:up
-- One rate budget per credential (issue 12, item 7), shared by every worker and run using it: a token
-- bucket fed by what the source says (Retry-After, X-RateLimit-*), and a pause that stops every run of
-- the credential during a 429 storm instead of each retrying on its own. The key is a SHA-256 of
-- connector type, base URL and credential: the credential itself is never stored here.
set lock_timeout = '5s';
set statement_timeout = '60s';

create table rate_budgets (
    credential_key    text             not null,
    capacity          double precision not null default 0,
    refill_per_second double precision not null default 0,
    tokens            double precision not null default 0,
    paused_until      timestamptz,
    updated_at        timestamptz      not null default now(),
    constraint rate_budgets_pkey primary key (credential_key),
    constraint rate_budgets_key_is_sha256 check (credential_key ~ '^[0-9a-f]{64}$'),
    constraint rate_budgets_nonnegative check (capacity >= 0 and refill_per_second >= 0 and tokens >= 0)
);
comment on table rate_budgets is 'Per-credential rate budget shared by every run (issue 12): token bucket + pause, fed by the source''s rate-limit headers.';
comment on column rate_budgets.credential_key is 'sha256 hex of connector type, base URL and credential; never the credential.';
comment on column rate_budgets.capacity is 'Bucket size (X-RateLimit-Limit); 0 = the source has not said: no bucket, pauses only.';
comment on column rate_budgets.refill_per_second is 'Tokens added per second (X-RateLimit-FillRate / interval, or limit / window); 0 = unknown.';
comment on column rate_budgets.tokens is 'Tokens left at updated_at.';
comment on column rate_budgets.paused_until is 'No request with this credential before this time (Retry-After of a 429/503, X-RateLimit-Reset at Remaining 0).';

grant insert, update, delete on rate_budgets to harvester_worker;

-- Take one token: 0 when the request may go now, else the seconds to wait (the caller sleeps and asks
-- again). A credential the source never described has no row: always 0, no write.
create function harvester_take_rate_token(p_key text) returns double precision
    language plpgsql
    set search_path to ''
as $$
declare
    b public.rate_budgets%rowtype;
    available double precision;
begin
    select * into b from public.rate_budgets where credential_key = p_key for update;
    if not found then
        return 0;
    end if;
    if b.paused_until is not null and b.paused_until > now() then
        return extract(epoch from (b.paused_until - now()));
    end if;
    if b.refill_per_second <= 0 or b.capacity <= 0 then
        return 0;
    end if;
    available := least(b.capacity, b.tokens + extract(epoch from (now() - b.updated_at)) * b.refill_per_second);
    if available >= 1 then
        update public.rate_budgets set tokens = available - 1, updated_at = now() where credential_key = p_key;
        return 0;
    end if;
    update public.rate_budgets set tokens = available, updated_at = now() where credential_key = p_key;
    return (1 - available) / b.refill_per_second;
end;
$$;
comment on function harvester_take_rate_token(text) is
    'Takes one request token of a credential''s rate budget: 0 = go now, else seconds to wait.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
