-- Re-appliable: applied after the migrations on every `harvester db migrate`.
-- updated_at is the database's job, not the caller's (STYLE.md: invariants in the database).

create or replace function tg__set_updated_at() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    new.updated_at := now();
    return new;
end;
$$;
comment on function tg__set_updated_at() is 'Shared BEFORE UPDATE trigger: stamps updated_at with the transaction time.';

create or replace trigger _100_timestamps before update on sources
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on dead_letters
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on entities
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on entity_notes
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on entity_chunks
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on platform_settings
    for each row execute function tg__set_updated_at();
