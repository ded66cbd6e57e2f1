-- A principal row exists only while some live entity names it (acl_principal_totals_entities_positive):
-- the triggers delete a row that falls to zero rather than keep it.
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(format($$insert into acl_principal_totals values ('group:jira:all', %s, 1)$$, :source_id),
    'A principal named by one entity is accepted.');
select throws_ok(format($$insert into acl_principal_totals values ('user:jira:u1', %s, 0)$$, :source_id),
    '23514', 'new row for relation "acl_principal_totals" violates check constraint "acl_principal_totals_entities_positive"',
    'A row at zero is rejected by acl_principal_totals_entities_positive.');

select * from finish();
rollback;
