-- lock_wait_max (decision 159) is a known key, seeded at 60, and holds a whole number of seconds from 1 to 3600.
begin;
select plan(7);

-- Test
select is((select value from platform_settings where key = 'lock_wait_max'), '60'::jsonb,
    'A run waits a minute for a lock another session holds by default, under stale_run_after''s two.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'lock_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'Zero is rejected: PostgreSQL reads a lock_timeout of 0 as waiting without end.');
select throws_ok(
    $$update platform_settings set value = '3601' where key = 'lock_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A wait above an hour is rejected.');
select throws_ok(
    $$update platform_settings set value = '1.5' where key = 'lock_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fractional number of seconds is rejected.');
select throws_ok(
    $$update platform_settings set value = '"60"' where key = 'lock_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A string is rejected even when it reads as a number.');
select lives_ok(
    $$update platform_settings set value = '1' where key = 'lock_wait_max'$$,
    'One second, the shortest wait, is accepted.');
select lives_ok(
    $$update platform_settings set value = '3600' where key = 'lock_wait_max'$$,
    'The cap of an hour itself is accepted.');

select * from finish();
rollback;
