-- entities.status, the content lifecycle, takes exactly draft | final | archived; deletion is not a status
-- (seed 000 "статус").
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'page', 'd', 'draft', 'h')$$, :source_id),
    'A draft entity is accepted.');
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'page', 'f', 'final', 'h')$$, :source_id),
    'A final entity is accepted.');
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'page', 'a', 'archived', 'h')$$, :source_id),
    'An archived entity is accepted.');
select throws_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'page', 'x', 'deleted', 'h')$$, :source_id),
    '23514', 'new row for relation "entities" violates check constraint "entities_status_check"',
    'Deleted is rejected as a status by entities_status_check: deletion is the separate deleted_at axis.');

select * from finish();
rollback;
