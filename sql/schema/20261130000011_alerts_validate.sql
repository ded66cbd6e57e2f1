-- migrate:up
-- Validates the platform_settings CHECKs that migration 9 re-added NOT VALID (new rows were checked from
-- then on; this proves the existing rows too), in a transaction of its own.
set lock_timeout = '5s';
set statement_timeout = '60s';

alter table platform_settings validate constraint platform_settings_key_known;
alter table platform_settings validate constraint platform_settings_value_valid;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
