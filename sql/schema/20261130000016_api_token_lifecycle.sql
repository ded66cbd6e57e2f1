-- migrate:up transaction:false
-- Token management by id (issue 14 item 5): an optional expiry, one live token per name, no nameless
-- token. transaction:false: the unique index is built CONCURRENTLY (the runner sends each statement on
-- its own), so authentication keeps reading api_tokens meanwhile.
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Abort loudly rather than guess which of two live tokens with one name an operator meant to keep.
do $$
begin
    if exists (select 1 from public.api_tokens where revoked_at is null group by name having count(*) > 1) then
        raise exception 'api_tokens: several live tokens share a name; revoke the extras by id (harvester token list, harvester token revoke ID) and migrate again'
            using errcode = 'unique_violation';
    end if;
    if exists (select 1 from public.api_tokens where btrim(name) = '') then
        raise exception 'api_tokens: a token has an empty name; revoke it by id and delete the row, then migrate again'
            using errcode = 'check_violation';
    end if;
end
$$;

alter table api_tokens add column expires_at timestamptz;
comment on column api_tokens.expires_at is 'When the token stops authenticating; NULL: never expires (revoke it to end it).';
comment on column api_tokens.last_used_at is 'Last time the token authenticated a request, kept to the minute.';

alter table api_tokens add constraint api_tokens_name_present check (btrim(name) <> '') not valid;
comment on constraint api_tokens_name_present on api_tokens is 'Every token has a name: audit events name the actor by it.';
-- Checked above (no blank names), so validating only re-reads a small table. transaction:false: this
-- runs in a transaction of its own, after the NOT VALID one committed.
-- squawk-ignore constraint-missing-not-valid
alter table api_tokens validate constraint api_tokens_name_present;

-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create unique index concurrently api_tokens_live_name_key on api_tokens (name) where revoked_at is null;
comment on index api_tokens_live_name_key is 'One live (unrevoked) token per name, so revoke by name names exactly one token; a revoked name may be reused.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
