-- UpsertDeadLetters parks a page's failures in one statement: an item the page lists twice is parked once
-- with its last failure (ON CONFLICT cannot touch one row twice in a statement, so the page would fail
-- whole), and new items take their ids in page order, the order the queue is reviewed in.
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset

-- Test
select lives_ok(format($$select tap_queries.upsert_dead_letters(%s, %s, %L)$$, :source_id, :run_1,
    '[{"source_type": "issue", "source_entity_id": "Z-9", "reason": "malformed", "error_detail": "first"},
      {"source_type": "issue", "source_entity_id": "A-1", "reason": "permission", "error_detail": "403"},
      {"source_type": "issue", "source_entity_id": "Z-9", "reason": "not_found", "error_detail": "second"},
      {"source_type": "issue", "source_entity_id": "M-5", "reason": "unknown", "error_detail": null}]'),
    'A page that lists an item twice is parked in one statement.');
select is((select count(*)::integer from dead_letters where source_id = :source_id), 3, 'Three items, three rows.');
select is((select reason || '/' || error_detail || '/' || attempts from dead_letters where source_entity_id = 'Z-9'),
    'not_found/second/1', 'The repeated item keeps its last failure, counted as one attempt.');
select is((select array_agg(source_entity_id order by id) from dead_letters where source_id = :source_id),
    array['A-1', 'Z-9', 'M-5'], 'New items take their ids in page order (a repeated one at its last listing).');
select is((select items from dead_letter_totals where source_id = :source_id and reason = 'not_found'), 1::bigint,
    'The totals count the repeated item once, under its last reason.');

select * from finish();
rollback;
