-- Re-appliable. Seed 003 "Настройки": the settings version rises on every edit; a no-op write leaves it.

create or replace function tg_platform_settings__bump_version() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    if tg_op = 'UPDATE' and old.value is not distinct from new.value then
        return null;
    end if;
    update public.platform_settings_version set version = version + 1 where singleton;
    return null;
end;
$$;
comment on function tg_platform_settings__bump_version() is 'Raises platform_settings_version.version once per changed setting row.';

create or replace trigger _200_bump_version after insert or update or delete on platform_settings
    for each row execute function tg_platform_settings__bump_version();
