-- timezone is a non-empty JSON string (platform_settings_value_valid).
begin;
select plan(4);

-- Test
select throws_ok(
    $$update platform_settings set value = '3' where key = 'timezone'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A numeric time zone is rejected.');
select throws_ok(
    $$update platform_settings set value = '{"name": "UTC"}' where key = 'timezone'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A time zone given as an object is rejected.');
select throws_ok(
    $$update platform_settings set value = '""' where key = 'timezone'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'An empty time zone is rejected.');
select lives_ok(
    $$update platform_settings set value = '"Europe/Berlin"' where key = 'timezone'$$,
    'An IANA time zone name is accepted.');

select * from finish();
rollback;
