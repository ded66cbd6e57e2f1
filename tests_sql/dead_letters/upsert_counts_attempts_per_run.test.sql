-- UpsertDeadLetters adds one attempt per new run and none for a repeat within the same run
-- (seed 000 "растёт при повторном попадании").
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_2 \gset
-- UpsertDeadLetters itself (tap_queries, built from the generated module); the run id is filled in below.
\set upsert_dead_letter 'select tap_queries.upsert_dead_letter(:source_id::bigint, :run::bigint, ''ticket'', ''PROJ-7'', ''unknown'', null)'

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
