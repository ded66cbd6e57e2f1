-- Trigger _100_timestamps owns entities.updated_at: a content change that writes its own updated_at still
-- ends at the transaction time; only a row that already carries now() (UpsertEntities) skips the function.
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, updated_at)
values (:source_id, 'ticket', '1', 'final', 'h1', '2026-01-01T00:00:00Z'),
       (:source_id, 'ticket', '2', 'final', 'h1', '2026-01-01T00:00:00Z'),
       (:source_id, 'ticket', '3', 'final', 'h1', '2026-01-01T00:00:00Z');

-- Test
update entities set content_hash = 'h2', updated_at = '1999-01-01T00:00:00Z'
 where source_id = :source_id and source_entity_id = '1';
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '1'), now(),
    'A content change that sets an older updated_at is stamped with the transaction time.');
update entities set content_hash = 'h2', updated_at = now() + interval '1 day'
 where source_id = :source_id and source_entity_id = '2';
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '2'), now(),
    'A content change that sets a later updated_at is stamped with the transaction time.');
update entities set content_hash = 'h2', updated_at = now()
 where source_id = :source_id and source_entity_id = '3';
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '3'), now(),
    'A content change that already sets the transaction time keeps it.');

select * from finish();
rollback;
