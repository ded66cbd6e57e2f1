-- Structure of entity_refs: cross-source mentions kept as claims (seed 000 "Формат refs").
begin;
select plan(18);

-- Test
select has_table('public', 'entity_refs', 'Table entity_refs exists.');
select columns_are('public', 'entity_refs', array['entity_id', 'relation', 'target_kind', 'target_ref', 'source_hint'],
    'Table entity_refs has exactly the expected columns.');
select col_type_is('public', 'entity_refs', 'entity_id', 'bigint', 'Column entity_refs.entity_id is bigint.');
select col_not_null('public', 'entity_refs', 'entity_id', 'Column entity_refs.entity_id is NOT NULL.');
select col_type_is('public', 'entity_refs', 'relation', 'text', 'Column entity_refs.relation is text.');
select col_not_null('public', 'entity_refs', 'relation', 'Column entity_refs.relation is NOT NULL.');
select col_type_is('public', 'entity_refs', 'target_kind', 'text', 'Column entity_refs.target_kind is text.');
select col_not_null('public', 'entity_refs', 'target_kind', 'Column entity_refs.target_kind is NOT NULL.');
select col_type_is('public', 'entity_refs', 'target_ref', 'text', 'Column entity_refs.target_ref is text.');
select col_not_null('public', 'entity_refs', 'target_ref', 'Column entity_refs.target_ref is NOT NULL.');
select col_type_is('public', 'entity_refs', 'source_hint', 'text', 'Column entity_refs.source_hint is text.');
select col_is_null('public', 'entity_refs', 'source_hint', 'Column entity_refs.source_hint is nullable.');
select has_pk('public', 'entity_refs', 'Table entity_refs has a primary key.');
select col_is_pk('public', 'entity_refs', array['entity_id', 'relation', 'target_kind', 'target_ref'], 'The primary key of entity_refs is (entity_id, relation, target_kind, target_ref).');
select fk_ok('public', 'entity_refs', array['entity_id'], 'public', 'entities', array['id'],
    'entity_refs.(entity_id) references entities.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.entity_refs'::regclass and conname = 'entity_refs_entity_id_fkey'), 'c',
    'Foreign key entity_refs_entity_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_refs'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_refs_entity_id_fkey', 'f'),
        ('entity_refs_pkey', 'p')$$,
    'Table entity_refs has exactly the expected named constraints.');
select indexes_are('public', 'entity_refs', array['entity_refs_pkey', 'entity_refs_target_idx'], 'Table entity_refs has exactly the expected indexes.');

select * from finish();
rollback;
