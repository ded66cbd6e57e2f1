-- sources.auth_account takes exactly service | personal (seed 000 §1 "под кем").
begin;
select plan(3);

-- Test
select lives_ok(
    $$insert into sources (name, connector_type, auth_account) values ('Jira service', 'jira', 'service')$$,
    'A source connected under a service account is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, auth_account) values ('Jira personal', 'jira', 'personal')$$,
    'A source connected under a personal account is accepted.');
select throws_ok(
    $$insert into sources (name, connector_type, auth_account) values ('Jira robot', 'jira', 'robot')$$,
    '23514', 'new row for relation "sources" violates check constraint "sources_auth_account_check"',
    'A source with an unknown auth_account is rejected by sources_auth_account_check.');

select * from finish();
rollback;
