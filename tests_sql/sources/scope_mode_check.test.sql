-- sources.scope_mode takes exactly all | selected (seed 000 §1 "всё / только выбранное").
begin;
select plan(3);

-- Test
select lives_ok(
    $$insert into sources (name, connector_type, scope_mode) values ('Whole source', 'jira', 'all')$$,
    'A source scoped to everything (with a deny-list) is accepted.');
select lives_ok(
    $$insert into sources (name, connector_type, scope_mode, scope_list) values ('Some projects', 'jira', 'selected', '["PROJ"]')$$,
    'A source scoped to selected containers (an allow-list) is accepted.');
select throws_ok(
    $$insert into sources (name, connector_type, scope_mode) values ('Odd scope', 'jira', 'none')$$,
    '23514', 'new row for relation "sources" violates check constraint "sources_scope_mode_check"',
    'A source with an unknown scope_mode is rejected by sources_scope_mode_check.');

select * from finish();
rollback;
