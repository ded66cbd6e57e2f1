-- reconcile_window is a whole minute of the week, 0 .. 10079 (platform_settings_value_valid).
begin;
select plan(5);

-- Test
select throws_ok(
    $$update platform_settings set value = '10080' where key = 'reconcile_window'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A reconcile window one minute past the end of the week is rejected.');
select throws_ok(
    $$update platform_settings set value = '-1' where key = 'reconcile_window'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A negative reconcile window is rejected.');
select throws_ok(
    $$update platform_settings set value = '180.5' where key = 'reconcile_window'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fractional reconcile window is rejected.');
select lives_ok(
    $$update platform_settings set value = '0' where key = 'reconcile_window'$$,
    'Monday 00:00 (minute 0) is accepted.');
select lives_ok(
    $$update platform_settings set value = '10079' where key = 'reconcile_window'$$,
    'Sunday 23:59 (minute 10079) is accepted.');

select * from finish();
rollback;
