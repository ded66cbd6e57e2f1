-- Structure of dead_letters: seed 000 §3; the dedupe key (source_id, source_type, source_entity_id); FK actions CASCADE / SET NULL.
begin;
select plan(39);

-- Test
select has_table('public', 'dead_letters', 'Table dead_letters exists.');
select columns_are('public', 'dead_letters', array['id', 'source_id', 'run_id', 'source_type', 'source_entity_id', 'reason', 'error_detail', 'attempts', 'created_at', 'updated_at'],
    'Table dead_letters has exactly the expected columns.');
select col_type_is('public', 'dead_letters', 'id', 'bigint', 'Column dead_letters.id is bigint.');
select col_not_null('public', 'dead_letters', 'id', 'Column dead_letters.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.dead_letters'::regclass and attname = 'id'), 'a',
    'Column dead_letters.id is an identity generated always.');
select col_type_is('public', 'dead_letters', 'source_id', 'bigint', 'Column dead_letters.source_id is bigint.');
select col_not_null('public', 'dead_letters', 'source_id', 'Column dead_letters.source_id is NOT NULL.');
select col_type_is('public', 'dead_letters', 'run_id', 'bigint', 'Column dead_letters.run_id is bigint.');
select col_is_null('public', 'dead_letters', 'run_id', 'Column dead_letters.run_id is nullable.');
select col_type_is('public', 'dead_letters', 'source_type', 'text', 'Column dead_letters.source_type is text.');
select col_not_null('public', 'dead_letters', 'source_type', 'Column dead_letters.source_type is NOT NULL.');
select col_type_is('public', 'dead_letters', 'source_entity_id', 'text', 'Column dead_letters.source_entity_id is text.');
select col_not_null('public', 'dead_letters', 'source_entity_id', 'Column dead_letters.source_entity_id is NOT NULL.');
select col_type_is('public', 'dead_letters', 'reason', 'text', 'Column dead_letters.reason is text.');
select col_not_null('public', 'dead_letters', 'reason', 'Column dead_letters.reason is NOT NULL.');
select col_type_is('public', 'dead_letters', 'error_detail', 'text', 'Column dead_letters.error_detail is text.');
select col_is_null('public', 'dead_letters', 'error_detail', 'Column dead_letters.error_detail is nullable.');
select col_type_is('public', 'dead_letters', 'attempts', 'integer', 'Column dead_letters.attempts is integer.');
select col_not_null('public', 'dead_letters', 'attempts', 'Column dead_letters.attempts is NOT NULL.');
select col_default_is('public', 'dead_letters', 'attempts', '1'::text, 'Column dead_letters.attempts defaults to 1.');
select col_type_is('public', 'dead_letters', 'created_at', 'timestamp with time zone', 'Column dead_letters.created_at is timestamp with time zone.');
select col_not_null('public', 'dead_letters', 'created_at', 'Column dead_letters.created_at is NOT NULL.');
select col_default_is('public', 'dead_letters', 'created_at', 'now()'::text, 'Column dead_letters.created_at defaults to now().');
select col_type_is('public', 'dead_letters', 'updated_at', 'timestamp with time zone', 'Column dead_letters.updated_at is timestamp with time zone.');
select col_not_null('public', 'dead_letters', 'updated_at', 'Column dead_letters.updated_at is NOT NULL.');
select col_default_is('public', 'dead_letters', 'updated_at', 'now()'::text, 'Column dead_letters.updated_at defaults to now().');
select has_pk('public', 'dead_letters', 'Table dead_letters has a primary key.');
select col_is_pk('public', 'dead_letters', array['id'], 'The primary key of dead_letters is (id).');
select fk_ok('public', 'dead_letters', array['run_id'], 'public', 'sync_runs', array['id'],
    'dead_letters.(run_id) references sync_runs.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.dead_letters'::regclass and conname = 'dead_letters_run_id_fkey'), 'n',
    'Foreign key dead_letters_run_id_fkey is ON DELETE SET NULL.');
select fk_ok('public', 'dead_letters', array['source_id'], 'public', 'sources', array['id'],
    'dead_letters.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.dead_letters'::regclass and conname = 'dead_letters_source_id_fkey'), 'c',
    'Foreign key dead_letters_source_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.dead_letters'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('dead_letters_attempts_positive', 'c'),
        ('dead_letters_reason_check', 'c'),
        ('dead_letters_run_id_fkey', 'f'),
        ('dead_letters_source_id_fkey', 'f'),
        ('dead_letters_pkey', 'p'),
        ('dead_letters_item_key', 'u')$$,
    'Table dead_letters has exactly the expected named constraints.');
select indexes_are('public', 'dead_letters', array['dead_letters_item_key', 'dead_letters_pkey', 'dead_letters_reason_source_idx', 'dead_letters_run_id_idx'], 'Table dead_letters has exactly the expected indexes.');
select is(pg_get_indexdef('public.dead_letters_reason_source_idx'::regclass),
    'CREATE INDEX dead_letters_reason_source_idx ON public.dead_letters USING btree (reason, source_id, id)',
    'Index dead_letters_reason_source_idx orders each reason''s items per source by id (the queue''s pages by reason); reason first, so the item probe keeps the item key.');
select triggers_are('public', 'dead_letters',
    array['_100_timestamps', '_800_dead_letter_totals_insert', '_800_dead_letter_totals_update',
          '_800_dead_letter_totals_delete', '_800_dead_letter_totals_truncate'],
    'Table dead_letters has exactly the expected triggers.');
select trigger_is('public', 'dead_letters', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on dead_letters runs tg__set_updated_at().');
select col_is_unique('public', 'dead_letters', array['source_id', 'source_type', 'source_entity_id'],
    'Dead letters are unique per (source_id, source_type, source_entity_id): one row per failed item.');
select is_indexed('public', 'dead_letters', array['run_id'],
    'dead_letters.run_id is indexed so deleting a run can set it to NULL without a scan.');

select * from finish();
rollback;
