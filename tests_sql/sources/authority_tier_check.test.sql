-- sources.authority_tier takes low | normal | high, or NULL for the manifest default (seed 000 §1).
begin;
select plan(5);

-- Test
select lives_ok(
    $$insert into sources (name, connector_type, authority_tier) values ('Low trust', 'jira', 'low')$$,
    'A source with authority tier low is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, authority_tier) values ('Normal trust', 'jira', 'normal')$$,
    'A source with authority tier normal is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, authority_tier) values ('High trust', 'jira', 'high')$$,
    'A source with authority tier high is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, authority_tier) values ('Default trust', 'jira', null)$$,
    'A source without an authority tier inherits the manifest default and is accepted.');
select throws_ok(
    $$insert into sources (name, connector_type, authority_tier) values ('Total trust', 'jira', 'absolute')$$,
    '23514', 'new row for relation "sources" violates check constraint "sources_authority_tier_check"',
    'A source with an unknown authority tier is rejected by sources_authority_tier_check.');

select * from finish();
rollback;
