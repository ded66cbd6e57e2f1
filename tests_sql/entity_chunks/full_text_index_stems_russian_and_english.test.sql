-- Index entity_chunks_body_fts_idx (issue 5, hybrid search): the chunk text under the `russian`
-- configuration, which stems Cyrillic words as Russian and Latin words as English, so other word forms
-- of either language match, and search can use the index when it repeats the expression.
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'ticket', '1', 'final', 'h', '{group:jira:all}') returning id as entity_id \gset
insert into entity_chunks (entity_id, ordinal, body, content_hash)
values (:entity_id, 0, 'Пользователи не могут войти после обновления', 'c0'),
       (:entity_id, 1, 'Migrations are failing on staging', 'c1');

-- Test
select has_index('public', 'entity_chunks', 'entity_chunks_body_fts_idx', 'Index entity_chunks_body_fts_idx exists.');
select index_is_type('public', 'entity_chunks', 'entity_chunks_body_fts_idx', 'gin',
    'Index entity_chunks_body_fts_idx is a GIN index.');
select is(pg_get_indexdef('public.entity_chunks_body_fts_idx'::regclass),
    'CREATE INDEX entity_chunks_body_fts_idx ON public.entity_chunks USING gin (to_tsvector(''russian''::regconfig, body))',
    'The full-text index covers the chunk body under the russian configuration.');
select is((select ordinal from entity_chunks
           where to_tsvector('russian'::regconfig, body) @@ plainto_tsquery('russian'::regconfig, 'пользователь вошёл обновление')),
    null::integer,
    'All lexemes of a plain query must match: вошёл is not a form of войти.');
select is((select ordinal from entity_chunks
           where to_tsvector('russian'::regconfig, body) @@ plainto_tsquery('russian'::regconfig, 'пользователь обновлением')),
    0, 'Russian word forms match the stems of a Russian chunk.');
select is((select ordinal from entity_chunks
           where to_tsvector('russian'::regconfig, body) @@ plainto_tsquery('russian'::regconfig, 'migration failed')),
    1, 'English word forms match the stems of an English chunk under the same configuration.');

select * from finish();
rollback;
