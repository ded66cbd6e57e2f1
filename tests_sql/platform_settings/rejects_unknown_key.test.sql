-- platform_settings accepts only known keys (platform_settings_key_known).
begin;
select plan(1);

-- Test
select throws_ok(
    $$insert into platform_settings (key, value) values ('sync_intervall', '900')$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_key_known"',
    'A setting with an unknown key is rejected.');

select * from finish();
rollback;
