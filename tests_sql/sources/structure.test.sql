-- Structure of sources: seed 000 §1: columns, types, NULL-ability, defaults, CHECKs; plus the updated_at trigger.
begin;
select plan(63);

-- Test
select has_table('public', 'sources', 'Table sources exists.');
select columns_are('public', 'sources', array['id', 'name', 'connector_type', 'base_url', 'auth_account', 'auth_method', 'credential_enc', 'state', 'scope_mode', 'scope_list', 'content_filters', 'sync_interval', 'reconcile_interval', 'reconcile_window', 'authority_tier', 'webhook_enabled', 'webhook_secret_enc', 'incremental_cursor', 'last_probe_at', 'last_probe_status', 'created_at', 'updated_at'],
    'Table sources has exactly the expected columns.');
select col_type_is('public', 'sources', 'id', 'bigint', 'Column sources.id is bigint.');
select col_not_null('public', 'sources', 'id', 'Column sources.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.sources'::regclass and attname = 'id'), 'a',
    'Column sources.id is an identity generated always.');
select col_type_is('public', 'sources', 'name', 'text', 'Column sources.name is text.');
select col_not_null('public', 'sources', 'name', 'Column sources.name is NOT NULL.');
select col_type_is('public', 'sources', 'connector_type', 'text', 'Column sources.connector_type is text.');
select col_not_null('public', 'sources', 'connector_type', 'Column sources.connector_type is NOT NULL.');
select col_type_is('public', 'sources', 'base_url', 'text', 'Column sources.base_url is text.');
select col_is_null('public', 'sources', 'base_url', 'Column sources.base_url is nullable.');
select col_type_is('public', 'sources', 'auth_account', 'text', 'Column sources.auth_account is text.');
select col_not_null('public', 'sources', 'auth_account', 'Column sources.auth_account is NOT NULL.');
select col_default_is('public', 'sources', 'auth_account', 'service'::text, 'Column sources.auth_account defaults to ''service''.');
select col_type_is('public', 'sources', 'auth_method', 'text', 'Column sources.auth_method is text.');
select col_not_null('public', 'sources', 'auth_method', 'Column sources.auth_method is NOT NULL.');
select col_default_is('public', 'sources', 'auth_method', 'static_token'::text, 'Column sources.auth_method defaults to ''static_token''.');
select col_type_is('public', 'sources', 'credential_enc', 'text', 'Column sources.credential_enc is text.');
select col_is_null('public', 'sources', 'credential_enc', 'Column sources.credential_enc is nullable.');
select col_type_is('public', 'sources', 'state', 'text', 'Column sources.state is text.');
select col_not_null('public', 'sources', 'state', 'Column sources.state is NOT NULL.');
select col_default_is('public', 'sources', 'state', 'active'::text, 'Column sources.state defaults to ''active''.');
select col_type_is('public', 'sources', 'scope_mode', 'text', 'Column sources.scope_mode is text.');
select col_not_null('public', 'sources', 'scope_mode', 'Column sources.scope_mode is NOT NULL.');
select col_default_is('public', 'sources', 'scope_mode', 'all'::text, 'Column sources.scope_mode defaults to ''all''.');
select col_type_is('public', 'sources', 'scope_list', 'jsonb', 'Column sources.scope_list is jsonb.');
select col_not_null('public', 'sources', 'scope_list', 'Column sources.scope_list is NOT NULL.');
select col_default_is('public', 'sources', 'scope_list', '[]'::text, 'Column sources.scope_list defaults to ''[]''.');
select col_type_is('public', 'sources', 'content_filters', 'jsonb', 'Column sources.content_filters is jsonb.');
select col_not_null('public', 'sources', 'content_filters', 'Column sources.content_filters is NOT NULL.');
select col_default_is('public', 'sources', 'content_filters', '{}'::text, 'Column sources.content_filters defaults to ''{}''.');
select col_type_is('public', 'sources', 'sync_interval', 'integer', 'Column sources.sync_interval is integer.');
select col_is_null('public', 'sources', 'sync_interval', 'Column sources.sync_interval is nullable.');
select col_type_is('public', 'sources', 'reconcile_interval', 'integer', 'Column sources.reconcile_interval is integer.');
select col_is_null('public', 'sources', 'reconcile_interval', 'Column sources.reconcile_interval is nullable.');
select col_type_is('public', 'sources', 'reconcile_window', 'integer', 'Column sources.reconcile_window is integer.');
select col_is_null('public', 'sources', 'reconcile_window', 'Column sources.reconcile_window is nullable.');
select col_type_is('public', 'sources', 'authority_tier', 'text', 'Column sources.authority_tier is text.');
select col_is_null('public', 'sources', 'authority_tier', 'Column sources.authority_tier is nullable.');
select col_type_is('public', 'sources', 'webhook_enabled', 'boolean', 'Column sources.webhook_enabled is boolean.');
select col_not_null('public', 'sources', 'webhook_enabled', 'Column sources.webhook_enabled is NOT NULL.');
select col_default_is('public', 'sources', 'webhook_enabled', 'false'::text, 'Column sources.webhook_enabled defaults to false.');
select col_type_is('public', 'sources', 'webhook_secret_enc', 'text', 'Column sources.webhook_secret_enc is text.');
select col_is_null('public', 'sources', 'webhook_secret_enc', 'Column sources.webhook_secret_enc is nullable.');
select col_type_is('public', 'sources', 'incremental_cursor', 'jsonb', 'Column sources.incremental_cursor is jsonb.');
select col_is_null('public', 'sources', 'incremental_cursor', 'Column sources.incremental_cursor is nullable.');
select col_type_is('public', 'sources', 'last_probe_at', 'timestamp with time zone', 'Column sources.last_probe_at is timestamp with time zone.');
select col_is_null('public', 'sources', 'last_probe_at', 'Column sources.last_probe_at is nullable.');
select col_type_is('public', 'sources', 'last_probe_status', 'text', 'Column sources.last_probe_status is text.');
select col_is_null('public', 'sources', 'last_probe_status', 'Column sources.last_probe_status is nullable.');
select col_type_is('public', 'sources', 'created_at', 'timestamp with time zone', 'Column sources.created_at is timestamp with time zone.');
select col_not_null('public', 'sources', 'created_at', 'Column sources.created_at is NOT NULL.');
select col_default_is('public', 'sources', 'created_at', 'now()'::text, 'Column sources.created_at defaults to now().');
select col_type_is('public', 'sources', 'updated_at', 'timestamp with time zone', 'Column sources.updated_at is timestamp with time zone.');
select col_not_null('public', 'sources', 'updated_at', 'Column sources.updated_at is NOT NULL.');
select col_default_is('public', 'sources', 'updated_at', 'now()'::text, 'Column sources.updated_at defaults to now().');
select has_pk('public', 'sources', 'Table sources has a primary key.');
select col_is_pk('public', 'sources', array['id'], 'The primary key of sources is (id).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.sources'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('sources_auth_account_check', 'c'),
        ('sources_auth_method_check', 'c'),
        ('sources_authority_tier_check', 'c'),
        ('sources_content_filters_is_object', 'c'),
        ('sources_disconnected_has_no_credential', 'c'),
        ('sources_last_probe_status_check', 'c'),
        ('sources_reconcile_interval_positive', 'c'),
        ('sources_reconcile_window_range', 'c'),
        ('sources_scope_list_is_array', 'c'),
        ('sources_scope_mode_check', 'c'),
        ('sources_state_check', 'c'),
        ('sources_sync_interval_positive', 'c'),
        ('sources_pkey', 'p'),
        ('sources_name_key', 'u')$$,
    'Table sources has exactly the expected named constraints.');
select indexes_are('public', 'sources', array['sources_name_key', 'sources_pkey'], 'Table sources has exactly the expected indexes.');
select triggers_are('public', 'sources', array['_100_timestamps', '_900_notify_runs'], 'Table sources has exactly the expected triggers.');
select trigger_is('public', 'sources', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on sources runs tg__set_updated_at().');
select col_is_unique('public', 'sources', array['name'], 'Source names are unique.');

select * from finish();
rollback;
