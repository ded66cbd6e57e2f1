-- Re-appliable: applied after the migrations on every `harvester db migrate`.
-- The API caches token look-ups in process (app/api/token_cache.py); a token that is revoked, re-scoped,
-- given another expiry or deleted must stop authenticating at once in every API process, so each such
-- change is announced on channel harvester_api_tokens (payload: the token's id) when it commits.

create or replace function tg_api_tokens__notify_change() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    perform pg_catalog.pg_notify('harvester_api_tokens', coalesce(new.id, old.id)::text);
    return null;
end;
$$;
comment on function tg_api_tokens__notify_change() is
    'AFTER UPDATE/DELETE trigger on api_tokens: NOTIFY harvester_api_tokens with the token id, so API '
    'processes drop cached look-ups (revocation takes effect on the next request).';

-- last_used_at (touched by every look-up) is left out: it changes no answer the cache gives.
create or replace trigger _900_notify after update of revoked_at, expires_at, scope, token_hash, name
    or delete on api_tokens
    for each row execute function tg_api_tokens__notify_change();
