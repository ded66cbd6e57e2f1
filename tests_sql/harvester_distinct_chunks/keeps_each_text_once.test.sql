-- harvester_distinct_chunks (migration 42, decision 130): chunks stored before decision 128 that repeat a
-- text of the same entity are removed and the first place of each text is kept, not rewritten; other
-- entities, and the same text in another entity, are left alone.
begin;
select plan(10);

-- Setup
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', 'log', 'final', 'h', '{user:a@x}') returning id as log_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', 'twice', 'final', 'h', '{user:a@x}') returning id as twice_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', 'plain', 'final', 'h', '{user:a@x}') returning id as plain_id \gset
-- log: a b a c b a (three copies); twice: a a (one); plain: a x (none, and shares 'a' with the others).
insert into entity_chunks (entity_id, ordinal, body, content_hash, embedding, embedding_model)
select e, o, t, md5(t), array_fill(o::real / 10, array[384])::vector, 'm'
from (values (:log_id, 0, 'a'), (:log_id, 1, 'b'), (:log_id, 2, 'a'), (:log_id, 3, 'c'), (:log_id, 4, 'b'),
             (:log_id, 5, 'a'), (:twice_id, 0, 'a'), (:twice_id, 1, 'a'),
             (:plain_id, 0, 'a'), (:plain_id, 1, 'x')) as v(e, o, t);
create temp table before as select id, entity_id, ordinal, body, ctid::text as x from entity_chunks
where entity_id in (:log_id, :twice_id, :plain_id);

-- Test
select is((select count(*)::int from entity_chunk_lexemes l join before b on b.id = l.chunk_id), 10,
    'Precondition: every chunk has its lexemes row (trigger _310_lexemes_insert).');
select is(harvester_distinct_chunks(), 4::bigint,
    'Every copy after a text''s first place is removed and counted (three of one entity, one of another).');
select results_eq(
    format($$select ordinal, body from entity_chunks where entity_id = %s order by ordinal$$, :log_id),
    $$values (0, 'a'::text), (1, 'b'::text), (3, 'c'::text)$$,
    'Each text stays once, at its first place.');
select results_eq(
    format($$select c.id from entity_chunks c where c.entity_id = %s order by c.ordinal$$, :log_id),
    format($$select b.id from before b where b.entity_id = %s and b.ordinal in (0, 1, 3) order by b.ordinal$$, :log_id),
    'The rows kept are the first places themselves (ids, and so their vectors and lexemes).');
select is(
    (select count(*)::int from entity_chunks c join before b using (id)
      where c.entity_id = :log_id and c.ordinal = b.ordinal and c.ctid::text = b.x), 3,
    'The rows kept are not rewritten (no new row version, so no second HNSW insert).');
select results_eq(
    format($$select ordinal, body from entity_chunks where entity_id = %s order by ordinal$$, :twice_id),
    $$values (0, 'a'::text)$$,
    'An entity holding one text twice keeps it once.');
select is(
    (select count(*)::int from entity_chunks c join before b using (id)
      where c.entity_id = :plain_id and c.ordinal = b.ordinal and c.ctid::text = b.x), 2,
    'An entity without copies is not rewritten, though it shares a text with the others.');
select is((select count(*)::int from entity_chunk_lexemes l join before b on b.id = l.chunk_id), 6,
    'A removed copy takes its lexemes with it; the rows kept keep theirs.');
select is((select count(*)::int from entity_chunks where entity_id = :log_id and acl_principals = '{user:a@x}'), 3,
    'The chunks kept still carry their entity''s rights.');
select is(harvester_distinct_chunks(), 0::bigint,
    'A second call finds nothing left to remove.');

select * from finish();
rollback;
