-- sources.state, the admin's intent, takes exactly active | paused | disconnected (seed 000 §1).
begin;
select plan(4);

-- Test
select lives_ok(
    $$insert into sources (name, connector_type, state) values ('Active source', 'jira', 'active')$$,
    'An active source is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, state) values ('Paused source', 'jira', 'paused')$$,
    'A paused source is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, state) values ('Disconnected source', 'jira', 'disconnected')$$,
    'A disconnected source without a credential is accepted.');
select throws_ok(
    $$insert into sources (name, connector_type, state) values ('Broken source', 'jira', 'error')$$,
    '23514', 'new row for relation "sources" violates check constraint "sources_state_check"',
    'A stored health value such as error is rejected as a state by sources_state_check.');

select * from finish();
rollback;
