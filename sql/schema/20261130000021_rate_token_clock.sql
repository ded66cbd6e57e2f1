-- migrate:up
-- harvester_take_rate_token never counts time backwards (issue 12 §7 tuning). now() is the start of
-- the caller's transaction; a caller that waited on the row lock while another run refilled or
-- observed the budget sees an updated_at later than its own now(), and (now() - updated_at) * refill
-- went negative: the bucket lost tokens and, with a small bucket, broke rate_budgets_nonnegative.
-- Elapsed time is floored at 0 and a token count is never below 0.
set lock_timeout = '5s';
set statement_timeout = '60s';

create or replace function harvester_take_rate_token(p_key text) returns double precision
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
    available := least(
        b.capacity,
        greatest(b.tokens, 0) + greatest(extract(epoch from (now() - b.updated_at)), 0) * b.refill_per_second
    );
    if available >= 1 then
        update public.rate_budgets set tokens = available - 1, updated_at = greatest(now(), b.updated_at)
        where credential_key = p_key;
        return 0;
    end if;
    update public.rate_budgets set tokens = available, updated_at = greatest(now(), b.updated_at)
    where credential_key = p_key;
    return (1 - available) / b.refill_per_second;
end;
$$;
comment on function harvester_take_rate_token(text) is
    'Takes one request token of a credential''s rate budget: 0 = go now, else seconds to wait.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
