-- Interval settings must be positive whole numbers of seconds (platform_settings_value_valid).
begin;
select plan(5);

-- Test
select throws_ok(
    $$update platform_settings set value = '-900' where key = 'sync_interval'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A negative sync interval is rejected.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'reconcile_interval'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A zero reconcile interval is rejected.');
select throws_ok(
    $$update platform_settings set value = '90.5' where key = 'probe_interval'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fractional probe interval is rejected.');
select throws_ok(
    $$update platform_settings set value = '"900"' where key = 'sync_interval'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A sync interval given as a JSON string is rejected.');
select lives_ok(
    $$update platform_settings set value = '1800' where key = 'sync_interval'$$,
    'A positive whole sync interval is accepted.');

select * from finish();
rollback;
