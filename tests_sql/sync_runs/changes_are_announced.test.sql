-- Any change to sync_runs or run_completeness, and a change of a source's secrets or its deletion, fires
-- _900_notify_runs, which NOTIFYs harvester_runs so API processes drop their cached runs responses.
-- (Delivery happens at commit, which a rolled-back test cannot see: tests/api/test_runs_cache.py does.)
begin;
select plan(9);

-- Test
select has_trigger('sync_runs', '_900_notify_runs', 'sync_runs has the _900_notify_runs trigger.');
select trigger_is('sync_runs', '_900_notify_runs', 'tg__notify_runs_changed',
    'The sync_runs trigger runs tg__notify_runs_changed.');
select has_trigger('run_completeness', '_900_notify_runs', 'run_completeness has the _900_notify_runs trigger.');
select has_trigger('sources', '_900_notify_runs', 'sources has the _900_notify_runs trigger.');
-- tgtype bits: 1 row-level, 4 insert, 8 delete, 16 update, 32 truncate.
select is(
    (select tgtype::integer & (1 | 4 | 8 | 16 | 32) from pg_trigger
     where tgrelid = 'sync_runs'::regclass and tgname = '_900_notify_runs'),
    (4 | 8 | 16 | 32),
    'It fires once per statement on insert, update, delete and truncate of sync_runs.');
select is(
    (select tgtype::integer & (1 | 4 | 8 | 16 | 32) from pg_trigger
     where tgrelid = 'run_completeness'::regclass and tgname = '_900_notify_runs'),
    (4 | 8 | 16 | 32),
    'It fires once per statement on every change of run_completeness.');
select is(
    (select array(select a.attname::text from pg_trigger t, unnest(t.tgattr) as k(attnum)
                  join pg_attribute a on a.attrelid = 'sources'::regclass and a.attnum = k.attnum
                  where t.tgrelid = 'sources'::regclass and t.tgname = '_900_notify_runs' order by 1)),
    array['credential_enc', 'webhook_secret_enc'],
    'On sources only a change of the secrets the run details are scrubbed of announces (and deletion).');
select is(
    (select proconfig from pg_proc where proname = 'tg__notify_runs_changed'),
    array['search_path=""'],
    'The trigger function pins an empty search_path.');
select lives_ok(
    $$update public.sync_runs set state = state where false$$,
    'A statement on sync_runs runs its notify trigger without error, even when it touches no row.');

select * from finish();
rollback;
