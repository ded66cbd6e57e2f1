-- sources.last_probe_status takes ok | unreachable | auth_failed, or NULL before the first probe (seed 000 §1).
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Probed', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$update sources set last_probe_at = now(), last_probe_status = 'ok' where id = %s$$, :source_id),
    'A successful probe result is accepted.');
select lives_ok(
    format($$update sources set last_probe_at = now(), last_probe_status = 'unreachable' where id = %s$$, :source_id),
    'An unreachable probe result is accepted.');
select lives_ok(
    format($$update sources set last_probe_at = now(), last_probe_status = 'auth_failed' where id = %s$$, :source_id),
    'A failed-authentication probe result is accepted.');
select lives_ok(
    format($$update sources set last_probe_at = null, last_probe_status = null where id = %s$$, :source_id),
    'A source that was never probed has no probe status.');
select throws_ok(
    format($$update sources set last_probe_at = now(), last_probe_status = 'timeout' where id = %s$$, :source_id),
    '23514', 'new row for relation "sources" violates check constraint "sources_last_probe_status_check"',
    'An unknown probe result is rejected by sources_last_probe_status_check.');

select * from finish();
rollback;
