-- fetch_fanout (issue 15 §1) is a known key, seeded at 4, and holds a whole number from 1 to 16.
begin;
select plan(6);

-- Test
select is((select value from platform_settings where key = 'fetch_fanout'), '4'::jsonb,
    'A connector sends four requests of a listing page at once by default.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'fetch_fanout'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fan-out of zero is rejected.');
select throws_ok(
    $$update platform_settings set value = '17' where key = 'fetch_fanout'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fan-out above 16 is rejected.');
select throws_ok(
    $$update platform_settings set value = '2.5' where key = 'fetch_fanout'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A fractional fan-out is rejected.');
select lives_ok(
    $$update platform_settings set value = '1' where key = 'fetch_fanout'$$,
    'One request at a time is accepted.');
select lives_ok(
    $$update platform_settings set value = '16' where key = 'fetch_fanout'$$,
    'The cap itself is accepted.');

select * from finish();
rollback;
