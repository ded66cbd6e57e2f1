-- migrate:up
-- Database roles: only loading writes the mirror (seed 003 "Зеркало задачи": the HTTP API must not
-- write it). The API connects as (or SET ROLE to) harvester_api, the worker as harvester_worker.
set lock_timeout = '5s';
set statement_timeout = '60s';

do $$
begin
    if not exists (select 1 from pg_roles where rolname = 'harvester_api') then
        create role harvester_api nologin;
    end if;
    if not exists (select 1 from pg_roles where rolname = 'harvester_worker') then
        create role harvester_worker nologin;
    end if;
end
$$;

grant usage on schema public to harvester_api, harvester_worker;

-- Reads: both roles read everything Harvester owns.
grant select on all tables in schema public to harvester_api, harvester_worker;

-- The API changes the control layer and admin notes only.
grant insert, update, delete on sources, sync_runs, platform_settings, api_tokens, entity_notes,
    webhook_deliveries to harvester_api;
grant update on platform_settings_version to harvester_api;
grant delete on dead_letters to harvester_api;

-- The worker loads content and keeps the journal and the queue.
grant insert, update, delete on entities, entity_chunks, entity_edges, entity_refs, run_seen_items,
    dead_letters, sync_runs, webhook_deliveries, entity_notes to harvester_worker;
grant update on sources, platform_settings_version to harvester_worker;

grant usage, select on all sequences in schema public to harvester_api, harvester_worker;

-- Tables added by later migrations are readable by both roles; writes are granted per migration.
alter default privileges in schema public grant select on tables to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
