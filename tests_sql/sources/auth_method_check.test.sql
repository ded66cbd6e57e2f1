-- sources.auth_method takes exactly static_token | oauth (seed 000 §1 "чем").
begin;
select plan(3);

-- Test
select lives_ok(
    $$insert into sources (name, connector_type, auth_method) values ('Jira token', 'jira', 'static_token')$$,
    'A source authenticated by a static token is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, auth_method) values ('Jira oauth', 'jira', 'oauth')$$,
    'A source authenticated by OAuth is accepted.');
select throws_ok(
    $$insert into sources (name, connector_type, auth_method) values ('Jira basic', 'jira', 'basic')$$,
    '23514', 'new row for relation "sources" violates check constraint "sources_auth_method_check"',
    'A source with an unknown auth_method is rejected by sources_auth_method_check.');

select * from finish();
rollback;
