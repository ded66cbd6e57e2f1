-- UpsertChunks (sql/queries/chunks.sql): an unchanged chunk (same hash, same model) is not rewritten,
-- a changed one is, and DeleteChunksFrom drops chunks past the new end (seed 000 content hash per chunk).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'ticket', '1', 'final', 'h', '{user:a@x}') returning id as entity_id \gset
select jsonb_build_array(
    jsonb_build_object('entity_id', :entity_id, 'ordinal', 0, 'body', 'a', 'content_hash', 'c0',
                       'embedding', array_fill(0.1, array[384])::vector::text, 'embedding_model', 'm'),
    jsonb_build_object('entity_id', :entity_id, 'ordinal', 1, 'body', 'b', 'content_hash', 'c1',
                       'embedding', array_fill(0.2, array[384])::vector::text, 'embedding_model', 'm'))::text as batch1 \gset
select tap_queries.upsert_chunks(:'batch1'::jsonb);
create temp table before as select ordinal, xmin::text as x from entity_chunks where entity_id = :entity_id;

-- Test
select tap_queries.upsert_chunks(:'batch1'::jsonb);
select is((select count(*)::int from entity_chunks c join before b using (ordinal)
            where c.entity_id = :entity_id and c.xmin::text = b.x), 2,
    'Upserting chunks with equal hashes and model rewrites no row.');

select tap_queries.upsert_chunks(jsonb_build_array(jsonb_build_object('entity_id', :entity_id, 'ordinal', 1, 'body', 'b2',
    'content_hash', 'c1x', 'embedding', array_fill(0.3, array[384])::vector::text, 'embedding_model', 'm'))::jsonb);
select is((select body from entity_chunks where entity_id = :entity_id and ordinal = 1), 'b2',
    'A chunk whose hash changed is rewritten with the new text.');
select is((select acl_principals from entity_chunks where entity_id = :entity_id and ordinal = 1), '{user:a@x}'::text[],
    'A rewritten chunk still carries its entity''s ACL.');

delete from entity_chunks where entity_id = :entity_id and ordinal >= 1;
select is((select count(*)::int from entity_chunks where entity_id = :entity_id), 1,
    'Chunks past the new last ordinal are removed.');

select * from finish();
rollback;
