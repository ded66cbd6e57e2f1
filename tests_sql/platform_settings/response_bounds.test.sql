-- response_max_mib and response_max_seconds (decision 162) are known keys, seeded at 128 MiB and 300 s, and each
-- holds a whole number within its bounds: 1-4096 MiB, 1-3600 s.
begin;
select plan(12);

-- Test
select is((select value from platform_settings where key = 'response_max_mib'), '128'::jsonb,
    'One source answer may inflate to 128 MiB by default.');
select is((select value from platform_settings where key = 'response_max_seconds'), '300'::jsonb,
    'One source answer may take 300 s from its request to its last byte by default.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'response_max_mib'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_mib: zero is rejected (no answer could be read at all).');
select throws_ok(
    $$update platform_settings set value = '4097' where key = 'response_max_mib'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_mib: above 4 GiB is rejected.');
select throws_ok(
    $$update platform_settings set value = '1.5' where key = 'response_max_mib'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_mib: a fraction is rejected.');
select throws_ok(
    $$update platform_settings set value = '"128"' where key = 'response_max_mib'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_mib: a string is rejected even when it reads as a number.');
select lives_ok(
    $$update platform_settings set value = '4096' where key = 'response_max_mib'$$,
    'response_max_mib: the cap itself, 4 GiB, is accepted.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'response_max_seconds'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_seconds: zero is rejected (no answer could be read at all).');
select throws_ok(
    $$update platform_settings set value = '3601' where key = 'response_max_seconds'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_seconds: above an hour is rejected.');
select throws_ok(
    $$update platform_settings set value = '1.5' where key = 'response_max_seconds'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_seconds: a fraction is rejected.');
select throws_ok(
    $$update platform_settings set value = '"128"' where key = 'response_max_seconds'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'response_max_seconds: a string is rejected even when it reads as a number.');
select lives_ok(
    $$update platform_settings set value = '3600' where key = 'response_max_seconds'$$,
    'response_max_seconds: the cap itself, an hour, is accepted.');

select * from finish();
rollback;
