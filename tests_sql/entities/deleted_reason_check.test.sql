-- entities.deleted_reason takes exactly gone_at_source | collapsed_duplicate (issue 12 provenance).
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash, deleted_at, deleted_reason) values (%s, 'page', 'g', 'final', 'h', now(), 'gone_at_source')$$, :source_id),
    'A record gone at the source is accepted.');
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash, deleted_at, deleted_reason) values (%s, 'page', 'c', 'final', 'h', now(), 'collapsed_duplicate')$$, :source_id),
    'A record collapsed into a duplicate is accepted.');
select throws_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash, deleted_at, deleted_reason) values (%s, 'page', 'x', 'final', 'h', now(), 'forgotten')$$, :source_id),
    '23514', 'new row for relation "entities" violates check constraint "entities_deleted_reason_known"',
    'An unknown deletion reason is rejected by entities_deleted_reason_known.');

select * from finish();
rollback;
