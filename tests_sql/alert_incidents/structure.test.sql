-- Structure of alert_incidents: one row per alert incident (issue 10 §4), at most one open per (kind, subject).
begin;
select plan(23);

-- Test
select has_table('public', 'alert_incidents', 'Table alert_incidents exists.');
select columns_are('public', 'alert_incidents',
    array['id', 'kind', 'subject', 'detail', 'opened_at', 'resolved_at', 'last_sent_at', 'send_failures'],
    'Table alert_incidents has exactly the expected columns.');
select col_type_is('public', 'alert_incidents', 'id', 'bigint', 'Column alert_incidents.id is bigint.');
select col_type_is('public', 'alert_incidents', 'kind', 'text', 'Column alert_incidents.kind is text.');
select col_not_null('public', 'alert_incidents', 'kind', 'Column alert_incidents.kind is NOT NULL.');
select col_type_is('public', 'alert_incidents', 'subject', 'text', 'Column alert_incidents.subject is text.');
select col_not_null('public', 'alert_incidents', 'subject', 'Column alert_incidents.subject is NOT NULL.');
select col_is_null('public', 'alert_incidents', 'detail', 'Column alert_incidents.detail is nullable.');
select col_type_is('public', 'alert_incidents', 'opened_at', 'timestamp with time zone', 'Column alert_incidents.opened_at is timestamp with time zone.');
select col_not_null('public', 'alert_incidents', 'opened_at', 'Column alert_incidents.opened_at is NOT NULL.');
select col_default_is('public', 'alert_incidents', 'opened_at', 'now()'::text, 'Column alert_incidents.opened_at defaults to now().');
select col_is_null('public', 'alert_incidents', 'resolved_at', 'Column alert_incidents.resolved_at is nullable (open incident).');
select col_is_null('public', 'alert_incidents', 'last_sent_at', 'Column alert_incidents.last_sent_at is nullable.');
select col_type_is('public', 'alert_incidents', 'send_failures', 'integer', 'Column alert_incidents.send_failures is integer.');
select col_default_is('public', 'alert_incidents', 'send_failures', '0', 'Column alert_incidents.send_failures defaults to 0.');
select col_is_pk('public', 'alert_incidents', array['id'], 'The primary key of alert_incidents is (id).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.alert_incidents'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('alert_incidents_pkey', 'p'), ('alert_incidents_kind_check', 'c'),
        ('alert_incidents_send_failures_not_negative', 'c'), ('alert_incidents_resolved_after_opened', 'c')$$,
    'Table alert_incidents has exactly the expected named constraints.');
select indexes_are('public', 'alert_incidents',
    array['alert_incidents_pkey', 'alert_incidents_one_open', 'alert_incidents_opened_at_idx',
          'alert_incidents_send_failures_idx'],
    'Table alert_incidents has exactly the expected indexes.');
select is(pg_get_indexdef('public.alert_incidents_send_failures_idx'::regclass),
    'CREATE INDEX alert_incidents_send_failures_idx ON public.alert_incidents USING btree (send_failures) WHERE (send_failures > 0)',
    'Index alert_incidents_send_failures_idx holds only the incidents with a failed delivery (the metric''s sum).');

-- Setup
insert into alert_incidents (kind, subject) values ('run_failed', 'source:1');

-- Test
select throws_ok(
    $$insert into alert_incidents (kind, subject) values ('run_failed', 'source:1')$$,
    '23505', null,
    'A second open incident of the same kind and subject is refused by alert_incidents_one_open.');
update alert_incidents set resolved_at = now() where subject = 'source:1';
select lives_ok(
    $$insert into alert_incidents (kind, subject) values ('run_failed', 'source:1')$$,
    'Once the incident is resolved, a new incident of the same kind and subject may open.');
select throws_ok(
    $$insert into alert_incidents (kind, subject) values ('disk_full', 'source:1')$$,
    '23514', 'new row for relation "alert_incidents" violates check constraint "alert_incidents_kind_check"',
    'An unknown alert kind is refused by alert_incidents_kind_check.');
select is(
    (select count(*) from alert_incidents where subject = 'source:1' and resolved_at is null), 1::bigint,
    'Exactly one incident of source:1 is open.');

select * from finish();
rollback;
