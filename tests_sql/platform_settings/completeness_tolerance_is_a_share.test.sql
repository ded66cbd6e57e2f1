-- completeness_tolerance is a share between 0 and 1, seeded at 0.01 (platform_settings_value_valid).
begin;
select plan(4);

-- Test
select is((select value from platform_settings where key = 'completeness_tolerance'), '0.01'::jsonb,
    'The completeness tolerance defaults to 1 %.');
select lives_ok(
    $$update platform_settings set value = '0' where key = 'completeness_tolerance'$$,
    'A zero tolerance (flag every difference) is accepted.');
select throws_ok(
    $$update platform_settings set value = '1.5' where key = 'completeness_tolerance'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A tolerance above 1 is rejected.');
select throws_ok(
    $$update platform_settings set value = '"some"' where key = 'completeness_tolerance'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A tolerance that is not a number is rejected.');

select * from finish();
rollback;
