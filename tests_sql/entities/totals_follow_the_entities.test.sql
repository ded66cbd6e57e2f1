-- The _700_entity_totals_* triggers keep source_entity_totals and acl_principal_totals equal to what the
-- live entities say through every kind of change: the pipeline's upsert (new, rewritten, restored rows),
-- a soft deletion, a changed ACL (with repeats and NULL elements), a move between sources, a hard delete,
-- a statement of many rows, a source's deletion and a truncate (decision 84). The expectation is computed
-- straight from entities, counting distinct entity ids per principal.
begin;
select plan(22);

-- Setup
create temp view expected_live as
select source_id, count(*)::bigint as live from entities where deleted_at is null group by source_id;
create temp view kept_live as select source_id, live from source_entity_totals where live > 0;
create temp view expected_principals as
select u.p::text as principal, e.source_id, count(distinct e.id)::bigint as entities
from entities e, unnest(e.acl_principals) as u(p)
where e.deleted_at is null and u.p is not null
group by 1, 2;
create temp view kept_principals as select principal::text, source_id, entities from acl_principal_totals;

insert into sources (name, connector_type) values ('Jira', 'jira') returning id as jira \gset
insert into sources (name, connector_type) values ('Slack', 'slack') returning id as slack \gset

-- Test
select trigger_is('entities', '_700_entity_totals_insert', 'tg_entities__totals', 'Inserts of entities run tg_entities__totals.');
select trigger_is('entities', '_700_entity_totals_update', 'tg_entities__totals', 'Updates of entities run tg_entities__totals.');
select trigger_is('entities', '_700_entity_totals_delete', 'tg_entities__totals', 'Deletes of entities run tg_entities__totals.');
select trigger_is('entities', '_700_entity_totals_truncate', 'tg_entities__totals_truncate',
    'A truncate of entities runs tg_entities__totals_truncate.');

\set page '[{"source_type": "issue", "source_entity_id": "1", "status": "final", "title": "One", "body": "b", "metadata": {}, "out_of_scope": false, "content_hash": "h1", "acl_principals": ["group:jira:all", "user:jira:ann"]}, {"source_type": "issue", "source_entity_id": "2", "status": "final", "title": "Two", "body": "b", "metadata": {}, "out_of_scope": false, "content_hash": "h2", "acl_principals": ["group:jira:all"]}, {"source_type": "issue", "source_entity_id": "3", "status": "final", "title": "Three", "body": "b", "metadata": {}, "out_of_scope": false, "content_hash": "h3", "acl_principals": null}]'
select lives_ok(format('select * from tap_queries.upsert_entities(%s, %L)', :jira, :'page'), 'The pipeline''s upsert loads a page.');
select set_eq('select * from kept_live', 'select * from expected_live', 'A page of new entities is counted in.');
select set_eq('select * from kept_principals', 'select * from expected_principals',
    'Each principal of their ACLs is counted in; an entity without an ACL names none.');
select is((select entities from acl_principal_totals where principal = 'group:jira:all' and source_id = :jira), 2::bigint,
    'group:jira:all is named by two entities.');

\set rewritten '[{"source_type": "issue", "source_entity_id": "1", "status": "final", "title": "One, edited", "body": "b", "metadata": {}, "out_of_scope": false, "content_hash": "h1b", "acl_principals": ["group:jira:all", "user:jira:bob"]}, {"source_type": "issue", "source_entity_id": "2", "status": "final", "title": "Two", "body": "b", "metadata": {}, "out_of_scope": false, "content_hash": "h2", "acl_principals": ["group:jira:all"]}]'
select lives_ok(format('select * from tap_queries.upsert_entities(%s, %L)', :jira, :'rewritten'), 'The upsert rewrites one, leaves one.');
select set_eq('select * from kept_principals', 'select * from expected_principals',
    'A rewritten ACL moves the entity from ann to bob; no row is left at zero.');

update entities set deleted_at = now() where source_id = :jira and source_entity_id in ('1', '3');
select set_eq('select * from kept_live', 'select * from expected_live', 'Soft-deleted entities are counted out of their source.');
select set_eq('select * from kept_principals', 'select * from expected_principals', '... and out of their principals.');

select lives_ok(format('select * from tap_queries.upsert_entities(%s, %L)', :jira, :'rewritten'), 'The upsert restores a soft-deleted one.');
select set_eq('select * from kept_live', 'select * from expected_live', 'A restored entity is counted in again.');

update entities set acl_principals = array['user:jira:cid', null, 'user:jira:cid', 'group:jira:all']
where source_id = :jira and source_entity_id = '2';
update entities set acl_principals = array['user:jira:dan'] where source_id = :jira and source_entity_id = '3';
select set_eq('select * from kept_principals', 'select * from expected_principals',
    'A repeated principal counts its entity once, a NULL element none, and a soft-deleted entity''s ACL not at all.');

update entities set last_fetched_at = now(), title = title || '!';
select set_eq('select * from kept_principals', 'select * from expected_principals', 'An update of other columns changes nothing.');

update entities set source_id = :slack where source_id = :jira and source_entity_id = '2';
select set_eq('select * from kept_live', 'select * from expected_live', 'An entity moved to another source is counted there.');

insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals, deleted_at)
select (array[:jira, :slack])[1 + g % 2], 'message', 'm' || g, 'final', 'h' || g,
       array['group:all', 'user:u' || (g % 7)], case when g % 5 = 0 then now() end
from generate_series(1, 500) g;
update entities set deleted_at = case when deleted_at is null then now() end where source_entity_id like 'm%' and source_entity_id::text < 'm3';
select set_eq('select * from kept_principals', 'select * from expected_principals',
    'Statements of hundreds of rows, soft-deleting and restoring at once, are summed.');

delete from entities where source_id = :slack and source_entity_id like 'm1%';
select set_eq('select * from kept_live union all select -1, count(*) from kept_principals',
    'select * from expected_live union all select -1, count(*) from expected_principals',
    'Deleted entities are counted out, live or not.');

delete from sources where id = :slack;
select is((select count(*)::integer from acl_principal_totals where source_id = :slack)
          + (select count(*)::integer from source_entity_totals where source_id = :slack), 0,
    'A deleted source leaves no totals.');
select set_eq('select * from kept_principals', 'select * from expected_principals', 'The other source''s are untouched.');

truncate entities cascade;
select is((select count(*)::integer from acl_principal_totals) + (select count(*)::integer from source_entity_totals), 0,
    'A truncate leaves no totals.');

select * from finish();
rollback;
