-- Structure of entities: relational projection of seed 000 with the identity key, soft-delete marker and ACL.
begin;
select plan(70);

-- Test
select has_table('public', 'entities', 'Table entities exists.');
select columns_are('public', 'entities', array['id', 'source_id', 'source_type', 'source_entity_id', 'natural_key', 'container', 'status', 'deleted_at', 'title', 'body', 'url', 'author', 'source_created_at', 'source_updated_at', 'metadata', 'acl_principals', 'aliases', 'out_of_scope', 'content_hash', 'created_at', 'updated_at', 'last_fetched_at', 'last_run_id', 'deleted_by_run_id', 'deleted_reason'],
    'Table entities has exactly the expected columns.');
select col_type_is('public', 'entities', 'last_fetched_at', 'timestamp with time zone', 'Column entities.last_fetched_at is timestamptz.');
select col_type_is('public', 'entities', 'last_run_id', 'bigint', 'Column entities.last_run_id is bigint.');
select col_type_is('public', 'entities', 'deleted_by_run_id', 'bigint', 'Column entities.deleted_by_run_id is bigint.');
select col_type_is('public', 'entities', 'deleted_reason', 'text', 'Column entities.deleted_reason is text.');
select col_type_is('public', 'entities', 'id', 'bigint', 'Column entities.id is bigint.');
select col_not_null('public', 'entities', 'id', 'Column entities.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.entities'::regclass and attname = 'id'), 'a',
    'Column entities.id is an identity generated always.');
select col_type_is('public', 'entities', 'source_id', 'bigint', 'Column entities.source_id is bigint.');
select col_not_null('public', 'entities', 'source_id', 'Column entities.source_id is NOT NULL.');
select col_type_is('public', 'entities', 'source_type', 'text', 'Column entities.source_type is text.');
select col_not_null('public', 'entities', 'source_type', 'Column entities.source_type is NOT NULL.');
select col_type_is('public', 'entities', 'source_entity_id', 'text', 'Column entities.source_entity_id is text.');
select col_not_null('public', 'entities', 'source_entity_id', 'Column entities.source_entity_id is NOT NULL.');
select col_type_is('public', 'entities', 'natural_key', 'text', 'Column entities.natural_key is text.');
select col_is_null('public', 'entities', 'natural_key', 'Column entities.natural_key is nullable.');
select col_type_is('public', 'entities', 'container', 'text', 'Column entities.container is text.');
select col_is_null('public', 'entities', 'container', 'Column entities.container is nullable.');
select col_type_is('public', 'entities', 'status', 'text', 'Column entities.status is text.');
select col_not_null('public', 'entities', 'status', 'Column entities.status is NOT NULL.');
select col_type_is('public', 'entities', 'deleted_at', 'timestamp with time zone', 'Column entities.deleted_at is timestamp with time zone.');
select col_is_null('public', 'entities', 'deleted_at', 'Column entities.deleted_at is nullable.');
select col_type_is('public', 'entities', 'title', 'text', 'Column entities.title is text.');
select col_not_null('public', 'entities', 'title', 'Column entities.title is NOT NULL.');
select col_default_is('public', 'entities', 'title', ''::text, 'Column entities.title defaults to ''''.');
select col_type_is('public', 'entities', 'body', 'text', 'Column entities.body is text.');
select col_not_null('public', 'entities', 'body', 'Column entities.body is NOT NULL.');
select col_default_is('public', 'entities', 'body', ''::text, 'Column entities.body defaults to ''''.');
select col_type_is('public', 'entities', 'url', 'text', 'Column entities.url is text.');
select col_is_null('public', 'entities', 'url', 'Column entities.url is nullable.');
select col_type_is('public', 'entities', 'author', 'text', 'Column entities.author is text.');
select col_is_null('public', 'entities', 'author', 'Column entities.author is nullable.');
select col_type_is('public', 'entities', 'source_created_at', 'timestamp with time zone', 'Column entities.source_created_at is timestamp with time zone.');
select col_is_null('public', 'entities', 'source_created_at', 'Column entities.source_created_at is nullable.');
select col_type_is('public', 'entities', 'source_updated_at', 'timestamp with time zone', 'Column entities.source_updated_at is timestamp with time zone.');
select col_is_null('public', 'entities', 'source_updated_at', 'Column entities.source_updated_at is nullable.');
select col_type_is('public', 'entities', 'metadata', 'jsonb', 'Column entities.metadata is jsonb.');
select col_not_null('public', 'entities', 'metadata', 'Column entities.metadata is NOT NULL.');
select col_default_is('public', 'entities', 'metadata', '{}'::text, 'Column entities.metadata defaults to ''{}''.');
select col_type_is('public', 'entities', 'acl_principals', 'text[]', 'Column entities.acl_principals is text[].');
select col_is_null('public', 'entities', 'acl_principals', 'Column entities.acl_principals is nullable.');
select col_type_is('public', 'entities', 'aliases', 'text[]', 'Column entities.aliases is text[].');
select col_not_null('public', 'entities', 'aliases', 'Column entities.aliases is NOT NULL.');
select col_default_is('public', 'entities', 'aliases', '{}'::text, 'Column entities.aliases defaults to ''{}''.');
select col_type_is('public', 'entities', 'out_of_scope', 'boolean', 'Column entities.out_of_scope is boolean.');
select col_not_null('public', 'entities', 'out_of_scope', 'Column entities.out_of_scope is NOT NULL.');
select col_default_is('public', 'entities', 'out_of_scope', 'false'::text, 'Column entities.out_of_scope defaults to false.');
select col_type_is('public', 'entities', 'content_hash', 'text', 'Column entities.content_hash is text.');
select col_not_null('public', 'entities', 'content_hash', 'Column entities.content_hash is NOT NULL.');
select col_type_is('public', 'entities', 'created_at', 'timestamp with time zone', 'Column entities.created_at is timestamp with time zone.');
select col_not_null('public', 'entities', 'created_at', 'Column entities.created_at is NOT NULL.');
select col_default_is('public', 'entities', 'created_at', 'now()'::text, 'Column entities.created_at defaults to now().');
select col_type_is('public', 'entities', 'updated_at', 'timestamp with time zone', 'Column entities.updated_at is timestamp with time zone.');
select col_not_null('public', 'entities', 'updated_at', 'Column entities.updated_at is NOT NULL.');
select col_default_is('public', 'entities', 'updated_at', 'now()'::text, 'Column entities.updated_at defaults to now().');
select has_pk('public', 'entities', 'Table entities has a primary key.');
select col_is_pk('public', 'entities', array['id'], 'The primary key of entities is (id).');
select fk_ok('public', 'entities', array['source_id'], 'public', 'sources', array['id'],
    'entities.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.entities'::regclass and conname = 'entities_source_id_fkey'), 'c',
    'Foreign key entities_source_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entities'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entities_metadata_is_object', 'c'),
        ('entities_status_check', 'c'),
        ('entities_deleted_reason_known', 'c'),
        ('entities_source_id_fkey', 'f'),
        ('entities_pkey', 'p'),
        ('entities_identity_key', 'u')$$,
    'Table entities has exactly the expected named constraints.');
select indexes_are('public', 'entities', array['entities_acl_principals_idx', 'entities_alias_holders_idx', 'entities_aliases_idx', 'entities_identity_key', 'entities_metadata_idx', 'entities_natural_key_present_idx', 'entities_pkey', 'entities_source_live_idx'], 'Table entities has exactly the expected indexes.');
select triggers_are('public', 'entities', array['_100_timestamps', '_300_propagate_acl', '_700_entity_totals_insert',
    '_700_entity_totals_update', '_700_entity_totals_delete', '_700_entity_totals_truncate'],
    'Table entities has exactly the expected triggers.');
select trigger_is('public', 'entities', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on entities runs tg__set_updated_at().');
select trigger_is('public', 'entities', '_300_propagate_acl', 'public', 'tg_entities__propagate_acl', 'Trigger _300_propagate_acl on entities runs tg_entities__propagate_acl().');
select col_is_unique('public', 'entities', array['source_id', 'source_type', 'source_entity_id'],
    'Entities are unique per identity (source_id, source_type, source_entity_id).');
select is(pg_get_indexdef('public.entities_source_live_idx'::regclass),
    'CREATE INDEX entities_source_live_idx ON public.entities USING btree (source_id, source_type) WHERE (deleted_at IS NULL)',
    'Index entities_source_live_idx covers live entities only.');
select is(pg_get_indexdef('public.entities_alias_holders_idx'::regclass),
    'CREATE INDEX entities_alias_holders_idx ON public.entities USING btree (source_id) WHERE ((aliases <> ''{}''::text[]) AND (deleted_at IS NULL))',
    'Index entities_alias_holders_idx holds the live entities that list aliases, by source (reconciliation''s collapse step).');
select is(pg_get_indexdef('public.entities_natural_key_present_idx'::regclass),
    'CREATE INDEX entities_natural_key_present_idx ON public.entities USING btree (source_id, natural_key) WHERE (natural_key IS NOT NULL)',
    'Index entities_natural_key_present_idx holds present natural keys only: a condition on source_id alone cannot use it (decision 82).');
select index_is_type('public', 'entities', 'entities_acl_principals_idx', 'gin',
    'Index entities_acl_principals_idx is a GIN index for principal containment filters.');

select * from finish();
rollback;
