-- Structure of sync_runs: seed 000 §2 plus the run counters of seed 003; the one-active-run partial unique index.
begin;
select plan(67);

-- Test
select has_table('public', 'sync_runs', 'Table sync_runs exists.');
select columns_are('public', 'sync_runs', array['id', 'source_id', 'mode', 'trigger', 'state', 'scope', 'entities_done', 'entities_total', 'checkpoint', 'error_count', 'error_detail', 'started_at', 'finished_at', 'heartbeat_at', 'created_at', 'api_calls', 'rate_limited', 'deliveries', 'claimed_at', 'worker_id', 'options'],
    'Table sync_runs has exactly the expected columns.');
select col_type_is('public', 'sync_runs', 'id', 'bigint', 'Column sync_runs.id is bigint.');
select col_not_null('public', 'sync_runs', 'id', 'Column sync_runs.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.sync_runs'::regclass and attname = 'id'), 'a',
    'Column sync_runs.id is an identity generated always.');
select col_type_is('public', 'sync_runs', 'source_id', 'bigint', 'Column sync_runs.source_id is bigint.');
select col_not_null('public', 'sync_runs', 'source_id', 'Column sync_runs.source_id is NOT NULL.');
select col_type_is('public', 'sync_runs', 'mode', 'text', 'Column sync_runs.mode is text.');
select col_not_null('public', 'sync_runs', 'mode', 'Column sync_runs.mode is NOT NULL.');
select col_type_is('public', 'sync_runs', 'trigger', 'text', 'Column sync_runs.trigger is text.');
select col_not_null('public', 'sync_runs', 'trigger', 'Column sync_runs.trigger is NOT NULL.');
select col_type_is('public', 'sync_runs', 'state', 'text', 'Column sync_runs.state is text.');
select col_not_null('public', 'sync_runs', 'state', 'Column sync_runs.state is NOT NULL.');
select col_default_is('public', 'sync_runs', 'state', 'queued'::text, 'Column sync_runs.state defaults to ''queued''.');
select col_type_is('public', 'sync_runs', 'scope', 'jsonb', 'Column sync_runs.scope is jsonb.');
select col_is_null('public', 'sync_runs', 'scope', 'Column sync_runs.scope is nullable.');
select col_type_is('public', 'sync_runs', 'entities_done', 'integer', 'Column sync_runs.entities_done is integer.');
select col_is_null('public', 'sync_runs', 'entities_done', 'Column sync_runs.entities_done is nullable.');
select col_type_is('public', 'sync_runs', 'entities_total', 'integer', 'Column sync_runs.entities_total is integer.');
select col_is_null('public', 'sync_runs', 'entities_total', 'Column sync_runs.entities_total is nullable.');
select col_type_is('public', 'sync_runs', 'checkpoint', 'jsonb', 'Column sync_runs.checkpoint is jsonb.');
select col_is_null('public', 'sync_runs', 'checkpoint', 'Column sync_runs.checkpoint is nullable.');
select col_type_is('public', 'sync_runs', 'error_count', 'integer', 'Column sync_runs.error_count is integer.');
select col_not_null('public', 'sync_runs', 'error_count', 'Column sync_runs.error_count is NOT NULL.');
select col_default_is('public', 'sync_runs', 'error_count', '0'::text, 'Column sync_runs.error_count defaults to 0.');
select col_type_is('public', 'sync_runs', 'error_detail', 'text', 'Column sync_runs.error_detail is text.');
select col_is_null('public', 'sync_runs', 'error_detail', 'Column sync_runs.error_detail is nullable.');
select col_type_is('public', 'sync_runs', 'started_at', 'timestamp with time zone', 'Column sync_runs.started_at is timestamp with time zone.');
select col_is_null('public', 'sync_runs', 'started_at', 'Column sync_runs.started_at is nullable.');
select col_type_is('public', 'sync_runs', 'finished_at', 'timestamp with time zone', 'Column sync_runs.finished_at is timestamp with time zone.');
select col_is_null('public', 'sync_runs', 'finished_at', 'Column sync_runs.finished_at is nullable.');
select col_type_is('public', 'sync_runs', 'heartbeat_at', 'timestamp with time zone', 'Column sync_runs.heartbeat_at is timestamp with time zone.');
select col_is_null('public', 'sync_runs', 'heartbeat_at', 'Column sync_runs.heartbeat_at is nullable.');
select col_type_is('public', 'sync_runs', 'created_at', 'timestamp with time zone', 'Column sync_runs.created_at is timestamp with time zone.');
select col_not_null('public', 'sync_runs', 'created_at', 'Column sync_runs.created_at is NOT NULL.');
select col_default_is('public', 'sync_runs', 'created_at', 'now()'::text, 'Column sync_runs.created_at defaults to now().');
select col_type_is('public', 'sync_runs', 'api_calls', 'integer', 'Column sync_runs.api_calls is integer.');
select col_not_null('public', 'sync_runs', 'api_calls', 'Column sync_runs.api_calls is NOT NULL.');
select col_default_is('public', 'sync_runs', 'api_calls', '0'::text, 'Column sync_runs.api_calls defaults to 0.');
select col_type_is('public', 'sync_runs', 'rate_limited', 'integer', 'Column sync_runs.rate_limited is integer.');
select col_not_null('public', 'sync_runs', 'rate_limited', 'Column sync_runs.rate_limited is NOT NULL.');
select col_default_is('public', 'sync_runs', 'rate_limited', '0'::text, 'Column sync_runs.rate_limited defaults to 0.');
select col_type_is('public', 'sync_runs', 'deliveries', 'integer', 'Column sync_runs.deliveries is integer.');
select col_not_null('public', 'sync_runs', 'deliveries', 'Column sync_runs.deliveries is NOT NULL.');
select col_default_is('public', 'sync_runs', 'deliveries', '0'::text, 'Column sync_runs.deliveries defaults to 0.');
select col_type_is('public', 'sync_runs', 'claimed_at', 'timestamp with time zone', 'Column sync_runs.claimed_at is timestamp with time zone.');
select col_is_null('public', 'sync_runs', 'claimed_at', 'Column sync_runs.claimed_at is nullable.');
select col_type_is('public', 'sync_runs', 'worker_id', 'text', 'Column sync_runs.worker_id is text.');
select col_is_null('public', 'sync_runs', 'worker_id', 'Column sync_runs.worker_id is nullable.');
select col_type_is('public', 'sync_runs', 'options', 'jsonb', 'Column sync_runs.options is jsonb.');
select col_not_null('public', 'sync_runs', 'options', 'Column sync_runs.options is NOT NULL.');
select col_default_is('public', 'sync_runs', 'options', '{}'::text, 'Column sync_runs.options defaults to ''{}''.');
select has_pk('public', 'sync_runs', 'Table sync_runs has a primary key.');
select col_is_pk('public', 'sync_runs', array['id'], 'The primary key of sync_runs is (id).');
select fk_ok('public', 'sync_runs', array['source_id'], 'public', 'sources', array['id'],
    'sync_runs.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.sync_runs'::regclass and conname = 'sync_runs_source_id_fkey'), 'c',
    'Foreign key sync_runs_source_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.sync_runs'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('sync_runs_counters_not_negative', 'c'),
        ('sync_runs_finished_iff_terminal', 'c'),
        ('sync_runs_mode_check', 'c'),
        ('sync_runs_state_check', 'c'),
        ('sync_runs_trigger_check', 'c'),
        ('sync_runs_source_id_fkey', 'f'),
        ('sync_runs_pkey', 'p')$$,
    'Table sync_runs has exactly the expected named constraints.');
select indexes_are('public', 'sync_runs', array['sync_runs_anchor_idx', 'sync_runs_one_active_per_source', 'sync_runs_pkey', 'sync_runs_reconciliation_idx', 'sync_runs_source_id_created_at_idx', 'sync_runs_source_id_id_idx', 'sync_runs_succeeded_idx', 'sync_runs_terminal_idx', 'sync_runs_watchdog_idx'], 'Table sync_runs has exactly the expected indexes.');
select is(pg_get_indexdef('public.sync_runs_terminal_idx'::regclass),
    'CREATE INDEX sync_runs_terminal_idx ON public.sync_runs USING btree (source_id, finished_at DESC, id DESC) WHERE (state = ANY (ARRAY[''succeeded''::text, ''failed''::text, ''cancelled''::text]))',
    'Index sync_runs_terminal_idx orders each source''s finished runs by finish time (the latest run, the last success).');
select is(pg_get_indexdef('public.sync_runs_source_id_id_idx'::regclass),
    'CREATE INDEX sync_runs_source_id_id_idx ON public.sync_runs USING btree (source_id, id DESC)',
    'Index sync_runs_source_id_id_idx orders each source''s runs by id, newest first (its run-history pages).');
select is(pg_get_indexdef('public.sync_runs_succeeded_idx'::regclass),
    'CREATE INDEX sync_runs_succeeded_idx ON public.sync_runs USING btree (source_id, finished_at DESC) WHERE (state = ''succeeded''::text)',
    'Index sync_runs_succeeded_idx orders each source''s succeeded runs by finish time (the last success, past any failures).');
select is(pg_get_indexdef('public.sync_runs_anchor_idx'::regclass),
    'CREATE INDEX sync_runs_anchor_idx ON public.sync_runs USING btree (source_id, created_at) WHERE ((mode = ANY (ARRAY[''full''::text, ''reconciliation''::text])) AND (state = ANY (ARRAY[''queued''::text, ''running''::text, ''succeeded''::text])))',
    'Index sync_runs_anchor_idx holds each source''s full and reconciliation runs that anchor the schedule (the first full sync).');
select is(pg_get_indexdef('public.sync_runs_reconciliation_idx'::regclass),
    'CREATE INDEX sync_runs_reconciliation_idx ON public.sync_runs USING btree (source_id, created_at DESC) WHERE (mode = ''reconciliation''::text)',
    'Index sync_runs_reconciliation_idx holds each source''s reconciliation runs, newest first.');
select is(pg_get_indexdef('public.sync_runs_watchdog_idx'::regclass),
    'CREATE INDEX sync_runs_watchdog_idx ON public.sync_runs USING btree (source_id, created_at DESC) WHERE (trigger = ''watchdog''::text)',
    'Index sync_runs_watchdog_idx holds each source''s watchdog runs.');
select index_is_unique('public', 'sync_runs', 'sync_runs_one_active_per_source',
    'Index sync_runs_one_active_per_source is unique.');
select is(pg_get_indexdef('public.sync_runs_one_active_per_source'::regclass),
    'CREATE UNIQUE INDEX sync_runs_one_active_per_source ON public.sync_runs USING btree (source_id) WHERE (state = ANY (ARRAY[''queued''::text, ''running''::text]))',
    'The one-active-run lock covers source_id only for queued or running runs.');
select is_indexed('public', 'sync_runs', array['source_id', 'created_at'],
    'Runs of a source are indexed newest first by (source_id, created_at).');

select * from finish();
rollback;
