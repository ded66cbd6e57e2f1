-- The _800_dead_letter_totals_* triggers keep dead_letter_totals equal to what the queue holds through
-- every kind of change: the pipeline's UpsertDeadLetters (a new item, the same failure again, a new reason)
-- and DeleteDeadLetters, statements of many rows, a move between sources, a source's deletion and a
-- truncate (decision 85). The expectation is counted straight from dead_letters.
begin;
select plan(17);

-- Setup
create temp view expected as
select source_id, reason, count(*)::bigint as items from dead_letters group by source_id, reason;
create temp view kept as select source_id, reason, items from dead_letter_totals;

insert into sources (name, connector_type) values ('Jira', 'jira') returning id as jira \gset
insert into sources (name, connector_type) values ('Slack', 'slack') returning id as slack \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:jira, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:jira, 'incremental', 'schedule', 'succeeded', now()) returning id as run_2 \gset

-- Test
select trigger_is('dead_letters', '_800_dead_letter_totals_insert', 'tg_dead_letters__totals',
    'Inserts of dead letters run tg_dead_letters__totals.');
select trigger_is('dead_letters', '_800_dead_letter_totals_update', 'tg_dead_letters__totals',
    'Updates of dead letters run tg_dead_letters__totals.');
select trigger_is('dead_letters', '_800_dead_letter_totals_delete', 'tg_dead_letters__totals',
    'Deletes of dead letters run tg_dead_letters__totals.');
select trigger_is('dead_letters', '_800_dead_letter_totals_truncate', 'tg_dead_letters__totals_truncate',
    'A truncate of dead letters runs tg_dead_letters__totals_truncate.');

select tap_queries.upsert_dead_letter(:jira::bigint, :run_1::bigint, 'issue', 'P-1', 'malformed', 'no fields');
select tap_queries.upsert_dead_letter(:jira::bigint, :run_1::bigint, 'issue', 'P-2', 'malformed', 'no fields');
select tap_queries.upsert_dead_letter(:jira::bigint, :run_1::bigint, 'issue', 'P-3', 'permission', '403');
select set_eq('select * from kept', 'select * from expected', 'Parked items are counted in, per source and reason.');
select is((select items from dead_letter_totals where source_id = :jira and reason = 'malformed'), 2::bigint,
    'Two malformed items.');

create temp table before_refail as select ctid::text as at, * from dead_letter_totals;
select tap_queries.upsert_dead_letter(:jira::bigint, :run_2::bigint, 'issue', 'P-1', 'malformed', 'still no fields');
select is((select attempts from dead_letters where source_entity_id = 'P-1'), 2, 'The item failed again (a second attempt) ...');
select set_eq($$select ctid::text as at, * from dead_letter_totals$$, $$select * from before_refail$$,
    '... for the same reason: the totals are not written at all.');

select tap_queries.upsert_dead_letter(:jira::bigint, :run_2::bigint, 'issue', 'P-2', 'permission', '403 now');
select set_eq('select * from kept', 'select * from expected',
    'An item failing for another reason moves from the old reason to the new one.');

select tap_queries.delete_dead_letters(:jira::bigint,
    '[{"source_type": "issue", "source_entity_id": "P-1"}, {"source_type": "issue", "source_entity_id": "P-404"}]'::jsonb);
select set_eq('select * from kept', 'select * from expected', 'A loaded item is counted out; an unknown one changes nothing.');
select is((select count(*)::integer from dead_letter_totals where source_id = :jira and reason = 'malformed'), 0,
    'The last malformed item gone, its reason has no row (never a zero).');

insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason)
select (array[:jira, :slack])[1 + g % 2], :run_1, 'message', 'm' || g,
       (array['permission', 'not_found', 'malformed', 'rate_limited', 'unknown'])[1 + g % 5]
from generate_series(1, 500) g;
update dead_letters set reason = case reason when 'unknown' then 'not_found' else 'unknown' end
where source_entity_id like 'm1%';
select set_eq('select * from kept', 'select * from expected',
    'Statements of hundreds of rows, inserting and re-reasoning at once, are summed.');

update dead_letters set source_id = :slack where source_id = :jira and source_entity_id = 'P-3';
select set_eq('select * from kept', 'select * from expected', 'An item moved to another source is counted there.');

delete from sync_runs where id = :run_1;
select set_eq('select * from kept', 'select * from expected', 'A deleted run (run_id set to NULL) changes nothing.');

delete from sources where id = :slack;
select is((select count(*)::integer from dead_letter_totals where source_id = :slack), 0, 'A deleted source leaves no totals.');
select set_eq('select * from kept', 'select * from expected', 'The other source''s are untouched.');

truncate dead_letters;
select is((select count(*)::integer from dead_letter_totals), 0, 'A truncate leaves no totals.');

select * from finish();
rollback;
