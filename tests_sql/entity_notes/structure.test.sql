-- Structure of entity_notes: admin notes keyed by entity identity.
begin;
select plan(34);

-- Test
select has_table('public', 'entity_notes', 'Table entity_notes exists.');
select columns_are('public', 'entity_notes', array['source_id', 'source_type', 'source_entity_id', 'fact_status', 'work_kind', 'done_text', 'rest_text', 'owner_note', 'updated_by', 'created_at', 'updated_at'],
    'Table entity_notes has exactly the expected columns.');
select col_type_is('public', 'entity_notes', 'source_id', 'bigint', 'Column entity_notes.source_id is bigint.');
select col_not_null('public', 'entity_notes', 'source_id', 'Column entity_notes.source_id is NOT NULL.');
select col_type_is('public', 'entity_notes', 'source_type', 'text', 'Column entity_notes.source_type is text.');
select col_not_null('public', 'entity_notes', 'source_type', 'Column entity_notes.source_type is NOT NULL.');
select col_type_is('public', 'entity_notes', 'source_entity_id', 'text', 'Column entity_notes.source_entity_id is text.');
select col_not_null('public', 'entity_notes', 'source_entity_id', 'Column entity_notes.source_entity_id is NOT NULL.');
select col_type_is('public', 'entity_notes', 'fact_status', 'text', 'Column entity_notes.fact_status is text.');
select col_is_null('public', 'entity_notes', 'fact_status', 'Column entity_notes.fact_status is nullable.');
select col_type_is('public', 'entity_notes', 'work_kind', 'text', 'Column entity_notes.work_kind is text.');
select col_is_null('public', 'entity_notes', 'work_kind', 'Column entity_notes.work_kind is nullable.');
select col_type_is('public', 'entity_notes', 'done_text', 'text', 'Column entity_notes.done_text is text.');
select col_is_null('public', 'entity_notes', 'done_text', 'Column entity_notes.done_text is nullable.');
select col_type_is('public', 'entity_notes', 'rest_text', 'text', 'Column entity_notes.rest_text is text.');
select col_is_null('public', 'entity_notes', 'rest_text', 'Column entity_notes.rest_text is nullable.');
select col_type_is('public', 'entity_notes', 'owner_note', 'text', 'Column entity_notes.owner_note is text.');
select col_is_null('public', 'entity_notes', 'owner_note', 'Column entity_notes.owner_note is nullable.');
select col_type_is('public', 'entity_notes', 'updated_by', 'text', 'Column entity_notes.updated_by is text.');
select col_is_null('public', 'entity_notes', 'updated_by', 'Column entity_notes.updated_by is nullable.');
select col_type_is('public', 'entity_notes', 'created_at', 'timestamp with time zone', 'Column entity_notes.created_at is timestamp with time zone.');
select col_not_null('public', 'entity_notes', 'created_at', 'Column entity_notes.created_at is NOT NULL.');
select col_default_is('public', 'entity_notes', 'created_at', 'now()'::text, 'Column entity_notes.created_at defaults to now().');
select col_type_is('public', 'entity_notes', 'updated_at', 'timestamp with time zone', 'Column entity_notes.updated_at is timestamp with time zone.');
select col_not_null('public', 'entity_notes', 'updated_at', 'Column entity_notes.updated_at is NOT NULL.');
select col_default_is('public', 'entity_notes', 'updated_at', 'now()'::text, 'Column entity_notes.updated_at defaults to now().');
select has_pk('public', 'entity_notes', 'Table entity_notes has a primary key.');
select col_is_pk('public', 'entity_notes', array['source_id', 'source_type', 'source_entity_id'], 'The primary key of entity_notes is (source_id, source_type, source_entity_id).');
select fk_ok('public', 'entity_notes', array['source_id'], 'public', 'sources', array['id'],
    'entity_notes.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.entity_notes'::regclass and conname = 'entity_notes_source_id_fkey'), 'c',
    'Foreign key entity_notes_source_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_notes'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_notes_source_id_fkey', 'f'),
        ('entity_notes_pkey', 'p')$$,
    'Table entity_notes has exactly the expected named constraints.');
select indexes_are('public', 'entity_notes', array['entity_notes_pkey'], 'Table entity_notes has exactly the expected indexes.');
select triggers_are('public', 'entity_notes', array['_100_timestamps'], 'Table entity_notes has exactly the expected triggers.');
select trigger_is('public', 'entity_notes', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on entity_notes runs tg__set_updated_at().');

select * from finish();
rollback;
