-- UpsertDeadLetters (sql/queries/dead_letters.sql) keeps one row per failed item across repeated failures
-- (seed 000 "Одна строка на сбойный item").
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_2 \gset

-- Test
-- The UpsertDeadLetters statement with its parameters replaced by literals, one item a call.
select tap_queries.upsert_dead_letter(:source_id::bigint, :run_1::bigint, 'ticket'::text, 'PROJ-1'::text, 'malformed'::text, 'bad json'::text);
select is((select count(*) from dead_letters where source_id = :source_id), 1::bigint,
    'The first failure of an item parks one row.');

select tap_queries.upsert_dead_letter(:source_id::bigint, :run_2::bigint, 'ticket'::text, 'PROJ-1'::text, 'malformed'::text, 'bad json'::text);
select is((select count(*) from dead_letters where source_id = :source_id), 1::bigint,
    'The same item failing again in the next run updates its row instead of adding one.');

select tap_queries.upsert_dead_letter(:source_id::bigint, :run_2::bigint, 'page'::text, 'PROJ-1'::text, 'malformed'::text, 'bad json'::text);
select is((select count(*) from dead_letters where source_id = :source_id), 2::bigint,
    'A different source_type with the same id is a different item with its own row.');

select * from finish();
rollback;
