-- Structure of entity_chunks: vector projection: vector(384) embeddings under an HNSW index, ACL copied from the entity.
begin;
select plan(46);

-- Test
select has_table('public', 'entity_chunks', 'Table entity_chunks exists.');
select columns_are('public', 'entity_chunks', array['id', 'entity_id', 'ordinal', 'body', 'content_hash', 'embedding', 'embedding_model', 'source_id', 'acl_principals', 'entity_status', 'entity_deleted', 'created_at', 'updated_at'],
    'Table entity_chunks has exactly the expected columns.');
select col_type_is('public', 'entity_chunks', 'id', 'bigint', 'Column entity_chunks.id is bigint.');
select col_not_null('public', 'entity_chunks', 'id', 'Column entity_chunks.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.entity_chunks'::regclass and attname = 'id'), 'a',
    'Column entity_chunks.id is an identity generated always.');
select col_type_is('public', 'entity_chunks', 'entity_id', 'bigint', 'Column entity_chunks.entity_id is bigint.');
select col_not_null('public', 'entity_chunks', 'entity_id', 'Column entity_chunks.entity_id is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'ordinal', 'integer', 'Column entity_chunks.ordinal is integer.');
select col_not_null('public', 'entity_chunks', 'ordinal', 'Column entity_chunks.ordinal is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'body', 'text', 'Column entity_chunks.body is text.');
select col_not_null('public', 'entity_chunks', 'body', 'Column entity_chunks.body is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'content_hash', 'text', 'Column entity_chunks.content_hash is text.');
select col_not_null('public', 'entity_chunks', 'content_hash', 'Column entity_chunks.content_hash is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'embedding', 'vector(384)', 'Column entity_chunks.embedding is vector(384).');
select col_is_null('public', 'entity_chunks', 'embedding', 'Column entity_chunks.embedding is nullable.');
select col_type_is('public', 'entity_chunks', 'embedding_model', 'text', 'Column entity_chunks.embedding_model is text.');
select col_is_null('public', 'entity_chunks', 'embedding_model', 'Column entity_chunks.embedding_model is nullable.');
select col_type_is('public', 'entity_chunks', 'source_id', 'bigint', 'Column entity_chunks.source_id is bigint.');
select col_not_null('public', 'entity_chunks', 'source_id', 'Column entity_chunks.source_id is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'acl_principals', 'text[]', 'Column entity_chunks.acl_principals is text[].');
select col_is_null('public', 'entity_chunks', 'acl_principals', 'Column entity_chunks.acl_principals is nullable.');
select col_type_is('public', 'entity_chunks', 'entity_status', 'text', 'Column entity_chunks.entity_status is text.');
select col_not_null('public', 'entity_chunks', 'entity_status', 'Column entity_chunks.entity_status is NOT NULL.');
select col_type_is('public', 'entity_chunks', 'entity_deleted', 'boolean', 'Column entity_chunks.entity_deleted is boolean.');
select col_not_null('public', 'entity_chunks', 'entity_deleted', 'Column entity_chunks.entity_deleted is NOT NULL.');
select col_default_is('public', 'entity_chunks', 'entity_deleted', 'false'::text, 'Column entity_chunks.entity_deleted defaults to false.');
select col_type_is('public', 'entity_chunks', 'created_at', 'timestamp with time zone', 'Column entity_chunks.created_at is timestamp with time zone.');
select col_not_null('public', 'entity_chunks', 'created_at', 'Column entity_chunks.created_at is NOT NULL.');
select col_default_is('public', 'entity_chunks', 'created_at', 'now()'::text, 'Column entity_chunks.created_at defaults to now().');
select col_type_is('public', 'entity_chunks', 'updated_at', 'timestamp with time zone', 'Column entity_chunks.updated_at is timestamp with time zone.');
select col_not_null('public', 'entity_chunks', 'updated_at', 'Column entity_chunks.updated_at is NOT NULL.');
select col_default_is('public', 'entity_chunks', 'updated_at', 'now()'::text, 'Column entity_chunks.updated_at defaults to now().');
select has_pk('public', 'entity_chunks', 'Table entity_chunks has a primary key.');
select col_is_pk('public', 'entity_chunks', array['id'], 'The primary key of entity_chunks is (id).');
select fk_ok('public', 'entity_chunks', array['entity_id'], 'public', 'entities', array['id'],
    'entity_chunks.(entity_id) references entities.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.entity_chunks'::regclass and conname = 'entity_chunks_entity_id_fkey'), 'c',
    'Foreign key entity_chunks_entity_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_chunks'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_chunks_ordinal_not_negative', 'c'),
        ('entity_chunks_entity_id_fkey', 'f'),
        ('entity_chunks_pkey', 'p'),
        ('entity_chunks_entity_ordinal_key', 'u')$$,
    'Table entity_chunks has exactly the expected named constraints.');
select indexes_are('public', 'entity_chunks', array['entity_chunks_acl_principals_idx', 'entity_chunks_embedding_hnsw_idx', 'entity_chunks_entity_ordinal_key', 'entity_chunks_model_idx', 'entity_chunks_pkey', 'entity_chunks_visibility_idx'], 'Table entity_chunks has exactly the expected indexes.');
select triggers_are('public', 'entity_chunks', array['_100_timestamps', '_300_inherit_acl', '_310_lexemes_insert', '_310_lexemes_update'], 'Table entity_chunks has exactly the expected triggers.');
select trigger_is('public', 'entity_chunks', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on entity_chunks runs tg__set_updated_at().');
select trigger_is('public', 'entity_chunks', '_300_inherit_acl', 'public', 'tg_entity_chunks__inherit_acl', 'Trigger _300_inherit_acl on entity_chunks runs tg_entity_chunks__inherit_acl().');
select trigger_is('public', 'entity_chunks', '_310_lexemes_insert', 'public', 'tg_entity_chunks__lexemes_insert', 'Trigger _310_lexemes_insert on entity_chunks runs tg_entity_chunks__lexemes_insert().');
select trigger_is('public', 'entity_chunks', '_310_lexemes_update', 'public', 'tg_entity_chunks__lexemes_update', 'Trigger _310_lexemes_update on entity_chunks runs tg_entity_chunks__lexemes_update().');
select index_is_type('public', 'entity_chunks', 'entity_chunks_embedding_hnsw_idx', 'hnsw',
    'Index entity_chunks_embedding_hnsw_idx is an HNSW index.');
select is(pg_get_indexdef('public.entity_chunks_embedding_hnsw_idx'::regclass),
    'CREATE INDEX entity_chunks_embedding_hnsw_idx ON public.entity_chunks USING hnsw (embedding vector_cosine_ops) WITH (m=''16'', ef_construction=''128'')',
    'The HNSW index uses cosine distance with m = 16 and ef_construction = 128 (migration 24, decision 68).');
select col_is_unique('public', 'entity_chunks', array['entity_id', 'ordinal'],
    'Chunks are unique per (entity_id, ordinal).');

select * from finish();
rollback;
