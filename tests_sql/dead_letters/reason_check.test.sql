-- dead_letters.reason takes exactly permission | not_found | malformed | rate_limited | unknown (seed 000 §3).
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-1', 'permission')$$, :source_id),
    'A dead letter parked for a permission error is accepted.');
select lives_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-2', 'not_found')$$, :source_id),
    'A dead letter parked for a missing record is accepted.');
select lives_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-3', 'malformed')$$, :source_id),
    'A dead letter parked for a malformed payload is accepted.');
select lives_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-4', 'rate_limited')$$, :source_id),
    'A dead letter parked for exhausted rate-limit retries is accepted.');
select lives_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-5', 'unknown')$$, :source_id),
    'A dead letter parked for an unknown cause is accepted.');
select throws_ok(
    format($$insert into dead_letters (source_id, source_type, source_entity_id, reason) values (%s, 'ticket', 'P-6', 'timeout')$$, :source_id),
    '23514', 'new row for relation "dead_letters" violates check constraint "dead_letters_reason_check"',
    'A dead letter with an unknown reason is rejected by dead_letters_reason_check.');

select * from finish();
rollback;
