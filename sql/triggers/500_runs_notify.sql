-- Re-appliable: applied after the migrations on every `harvester db migrate`.
-- The API caches the encoded responses of its runs endpoints (app/api/runs_cache.py); every change that
-- can alter one of them is announced on channel harvester_runs when it commits, so each API process
-- drops its cached pages. A statement-level trigger: one call per statement however many rows it
-- touches, and PostgreSQL folds identical notifications of one transaction into one, so a worker's page
-- commit costs one notification.

create or replace function tg__notify_runs_changed() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    perform pg_catalog.pg_notify('harvester_runs', '');
    return null;
end;
$$;
comment on function tg__notify_runs_changed() is
    'AFTER statement trigger on sync_runs, run_completeness and sources: NOTIFY harvester_runs (no payload), '
    'so API processes drop their cached runs responses.';

-- Every column of a run can reach a response (GET /runs/{id} shows all the history view's output
-- columns); a statement that changes none of its rows still notifies, which costs one cache miss.
create or replace trigger _900_notify_runs after insert or update or delete or truncate on sync_runs
    for each statement execute function tg__notify_runs_changed();

-- A reconciliation's completeness audit is part of GET /runs/{id}.
create or replace trigger _900_notify_runs after insert or update or delete or truncate on run_completeness
    for each statement execute function tg__notify_runs_changed();

-- Run error details are scrubbed of the source's secrets, and a deleted source's run list is a 404.
create or replace trigger _900_notify_runs after update of credential_enc, webhook_secret_enc or delete
    on sources
    for each statement execute function tg__notify_runs_changed();
