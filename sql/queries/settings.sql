-- Platform settings (seed 001 "Расписание", seed 003 "Настройки").

-- name: ListSettings :many
-- Every setting as key -> JSON.
select key, value from platform_settings order by key;

-- name: GetSettingsVersion :one
-- The version raised by every changed value.
select version from platform_settings_version where singleton;

-- name: PutSetting :exec
-- Writes one setting; an equal value is a no-op for the version trigger.
insert into platform_settings (key, value) values (sqlc.arg(key)::text, sqlc.arg(value)::jsonb)
on conflict (key) do update set value = excluded.value
where platform_settings.value is distinct from excluded.value;
