-- UpsertDeadLetter adds one attempt per new run and none for a repeat within the same run
-- (seed 000 "растёт при повторном попадании").
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_2 \gset
-- The UpsertDeadLetter statement with its parameters replaced by literals (run id filled in below).
\set upsert_dead_letter 'insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason, error_detail) values (:source_id::bigint, :run::bigint, ''ticket''::text, ''PROJ-7''::text, ''unknown''::text, null::text) on conflict on constraint dead_letters_item_key do update set attempts = dead_letters.attempts + case when dead_letters.run_id is not distinct from excluded.run_id then 0 else 1 end, reason = excluded.reason, error_detail = excluded.error_detail, run_id = excluded.run_id'

-- Test
\set run :run_1
:upsert_dead_letter;
select is((select attempts from dead_letters where source_entity_id = 'PROJ-7'), 1,
    'A first failure counts one attempt.');
:upsert_dead_letter;
select is((select attempts from dead_letters where source_entity_id = 'PROJ-7'), 1,
    'A repeat within the same run (a redelivered page) does not count another attempt.');
\set run :run_2
:upsert_dead_letter;
select is((select attempts from dead_letters where source_entity_id = 'PROJ-7'), 2,
    'A failure in a new run counts one more attempt.');
select is((select run_id from dead_letters where source_entity_id = 'PROJ-7'), :run_2::bigint,
    'The row points at the run of the latest failure.');

select * from finish();
rollback;
