-- platform_settings refuses alert channels that are not http(s), unknown kinds and clear-text secrets (issue 10 §4).
begin;
select plan(5);

-- Test
select is((select value from platform_settings where key = 'alert_channels'), '[]'::jsonb,
    'No alert channel is configured by default.');
select is((select value from platform_settings where key = 'alert_dlq_threshold'), '100'::jsonb,
    'The DLQ alert threshold defaults to 100.');
select throws_ok(
    $$update platform_settings set value = '[{"kind": "webhook", "url": "ftp://example.com/x"}]' where key = 'alert_channels'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A channel URL that is not http(s) is refused.');
select throws_ok(
    $$update platform_settings set value = '[{"kind": "webhook", "url": "https://example.com/x", "secret": "clear"}]' where key = 'alert_channels'$$,
    '23514', 'new row for relation "platform_settings" violates check constraint "platform_settings_value_valid"',
    'A channel with a clear-text secret is refused: only secret_enc is stored.');
select lives_ok(
    $$update platform_settings set value = '[{"kind": "slack", "url": "https://hooks.example.com/T/B/X", "events": ["run_failed"]}]' where key = 'alert_channels'$$,
    'A Slack channel with an events filter is accepted.');

select * from finish();
rollback;
