-- directory_ttl (decision 125) is a known key, seeded at 300, and holds a whole number of seconds from 0 to 3600.
begin;
select plan(7);

-- Test
select is((select value from platform_settings where key = 'directory_ttl'), '300'::jsonb,
    'A directory read whole serves later runs that fetch by id for five minutes by default.');
select throws_ok(
    $$update platform_settings set value = '-1' where key = 'directory_ttl'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A negative time to live is rejected.');
select throws_ok(
    $$update platform_settings set value = '3601' where key = 'directory_ttl'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A time to live above an hour is rejected.');
select throws_ok(
    $$update platform_settings set value = '2.5' where key = 'directory_ttl'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fractional number of seconds is rejected.');
select throws_ok(
    $$update platform_settings set value = '"300"' where key = 'directory_ttl'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A string is rejected even when it reads as a number.');
select lives_ok(
    $$update platform_settings set value = '0' where key = 'directory_ttl'$$,
    'Zero, every run reading its own directories, is accepted.');
select lives_ok(
    $$update platform_settings set value = '3600' where key = 'directory_ttl'$$,
    'The cap of an hour itself is accepted.');

select * from finish();
rollback;
