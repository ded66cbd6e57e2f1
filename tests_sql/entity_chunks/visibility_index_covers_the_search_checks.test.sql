-- Index entity_chunks_visibility_idx (decision 117): keyed by id, it carries every column full-text search
-- checks of a matching chunk (entity, source, ACL, status, deletion), so those checks read no heap page.
-- That the planner answers SearchEntitiesText's checks from it alone needs a set visibility map, which no
-- VACUUM can set inside this file's transaction: tests/vector/test_text_ranking.py asserts that plan.
begin;
select plan(3);

-- Test
select has_index('public', 'entity_chunks', 'entity_chunks_visibility_idx', 'Index entity_chunks_visibility_idx exists.');
select is(pg_get_indexdef('public.entity_chunks_visibility_idx'::regclass),
    'CREATE INDEX entity_chunks_visibility_idx ON public.entity_chunks USING btree (id) INCLUDE (entity_id, source_id, acl_principals, entity_status, entity_deleted)',
    'The visibility index is keyed by id and includes entity, source, ACL, status and deletion.');
select is((select indisvalid and indisready from pg_index where indexrelid = 'public.entity_chunks_visibility_idx'::regclass), true,
    'The visibility index, built concurrently, is valid and ready.');

select * from finish();
rollback;
