-- Role harvester_api manages the control layer: sources, runs, settings and admin notes.
begin;
select plan(5);

-- Setup
set local role harvester_api;

-- Test
select lives_ok(
    $$insert into sources (name, connector_type) values ('Added by the API', 'jira')$$,
    'The API role creates a source.');
select lives_ok(
    $$update sources set state = 'paused' where name = 'Added by the API'$$,
    'The API role pauses a source.');
select lives_ok(
    $$insert into sync_runs (source_id, mode, trigger) select id, 'full', 'manual' from sources where name = 'Added by the API'
      on conflict (source_id) where state in ('queued', 'running') do nothing$$,
    'The API role starts a run.');
select lives_ok(
    $$update platform_settings set value = '1800' where key = 'sync_interval'$$,
    'The API role changes a setting, and its trigger raises the version.');
select lives_ok(
    $$insert into entity_notes (source_id, source_type, source_entity_id, owner_note, updated_by)
      select id, 'ticket', 'PROJ-1', 'check with Anna', 'admin' from sources where name = 'Added by the API'$$,
    'The API role writes an admin note.');

select * from finish();
rollback;
