-- lane_wait_max (issue 10) is a known key, seeded at 6 h, and holds only a positive whole number of seconds.
begin;
select plan(4);

-- Test
select is((select value from platform_settings where key = 'lane_wait_max'), '21600'::jsonb,
    'A run waits at most 6 hours for a held lane by default.');
select throws_ok(
    $$update platform_settings set value = '0' where key = 'lane_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A zero lane wait is rejected.');
select throws_ok(
    $$update platform_settings set value = '"6h"' where key = 'lane_wait_max'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A lane wait given as a string is rejected.');
select lives_ok(
    $$update platform_settings set value = '600' where key = 'lane_wait_max'$$,
    'A positive whole lane wait is accepted.');

select * from finish();
rollback;
