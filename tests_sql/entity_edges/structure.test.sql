-- Structure of entity_edges: graph projection: intra-source links by the target's natural key.
begin;
select plan(23);

-- Test
select has_table('public', 'entity_edges', 'Table entity_edges exists.');
select columns_are('public', 'entity_edges', array['from_entity_id', 'source_id', 'relation', 'direction', 'target_type', 'target_source_entity_id', 'target_key'],
    'Table entity_edges has exactly the expected columns.');
select col_type_is('public', 'entity_edges', 'from_entity_id', 'bigint', 'Column entity_edges.from_entity_id is bigint.');
select col_not_null('public', 'entity_edges', 'from_entity_id', 'Column entity_edges.from_entity_id is NOT NULL.');
select col_type_is('public', 'entity_edges', 'source_id', 'bigint', 'Column entity_edges.source_id is bigint.');
select col_not_null('public', 'entity_edges', 'source_id', 'Column entity_edges.source_id is NOT NULL.');
select col_type_is('public', 'entity_edges', 'relation', 'text', 'Column entity_edges.relation is text.');
select col_not_null('public', 'entity_edges', 'relation', 'Column entity_edges.relation is NOT NULL.');
select col_type_is('public', 'entity_edges', 'direction', 'text', 'Column entity_edges.direction is text.');
select col_not_null('public', 'entity_edges', 'direction', 'Column entity_edges.direction is NOT NULL.');
select col_default_is('public', 'entity_edges', 'direction', 'outward'::text, 'Column entity_edges.direction defaults to ''outward''.');
select col_type_is('public', 'entity_edges', 'target_type', 'text', 'Column entity_edges.target_type is text.');
select col_not_null('public', 'entity_edges', 'target_type', 'Column entity_edges.target_type is NOT NULL.');
select col_type_is('public', 'entity_edges', 'target_source_entity_id', 'text', 'Column entity_edges.target_source_entity_id is text.');
select col_not_null('public', 'entity_edges', 'target_source_entity_id', 'Column entity_edges.target_source_entity_id is NOT NULL.');
select col_type_is('public', 'entity_edges', 'target_key', 'text', 'Column entity_edges.target_key is text.');
select col_is_null('public', 'entity_edges', 'target_key', 'Column entity_edges.target_key is nullable.');
select has_pk('public', 'entity_edges', 'Table entity_edges has a primary key.');
select col_is_pk('public', 'entity_edges', array['from_entity_id', 'relation', 'target_type', 'target_source_entity_id'], 'The primary key of entity_edges is (from_entity_id, relation, target_type, target_source_entity_id).');
select fk_ok('public', 'entity_edges', array['from_entity_id'], 'public', 'entities', array['id'],
    'entity_edges.(from_entity_id) references entities.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.entity_edges'::regclass and conname = 'entity_edges_from_entity_id_fkey'), 'c',
    'Foreign key entity_edges_from_entity_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_edges'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_edges_direction_check', 'c'),
        ('entity_edges_from_entity_id_fkey', 'f'),
        ('entity_edges_pkey', 'p')$$,
    'Table entity_edges has exactly the expected named constraints.');
select indexes_are('public', 'entity_edges', array['entity_edges_pkey', 'entity_edges_target_idx'], 'Table entity_edges has exactly the expected indexes.');

select * from finish();
rollback;
