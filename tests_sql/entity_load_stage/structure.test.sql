-- Structure of entity_load_stage: the shape of the load path's temporary stage (issue 15 §2).
begin;
select plan(5);

-- Test
select has_table('public', 'entity_load_stage', 'Table entity_load_stage exists.');
select columns_are('public', 'entity_load_stage', array['source_type', 'source_entity_id', 'natural_key', 'container',
    'status', 'title', 'body', 'url', 'author', 'source_created_at', 'source_updated_at', 'metadata', 'acl_principals',
    'aliases', 'out_of_scope', 'content_hash'],
    'Table entity_load_stage has exactly the columns CopyEntityLoadStage writes.');
select is((select relpersistence::text from pg_class where oid = 'public.entity_load_stage'::regclass), 'u',
    'The template is unlogged (it never holds a row).');
select col_type_is('public', 'entity_load_stage', 'metadata', 'jsonb', 'Column entity_load_stage.metadata is jsonb.');
select col_not_null('public', 'entity_load_stage', 'content_hash', 'Column entity_load_stage.content_hash is NOT NULL.');

select * from finish();
rollback;
