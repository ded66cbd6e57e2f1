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
-- On entities, an update that only records fetch provenance (TouchFetched: last_fetched_at and
-- last_run_id) is not a change of the record: updated_at stays, so readers keyed on it see nothing new.
-- A row that already carries the transaction time (UpsertEntities sets updated_at = now() itself) is
-- left alone: the function would write the same value, and calling it per row cost the loader about a
-- tenth of an all-changed page (docs/performance.md "Load path"). Any other value is still overwritten.
create or replace trigger _100_timestamps before update on entities
    for each row
    when (((old.last_fetched_at, old.last_run_id) is not distinct from (new.last_fetched_at, new.last_run_id)
           or old.content_hash is distinct from new.content_hash
           or old.deleted_at is distinct from new.deleted_at
           or old.out_of_scope is distinct from new.out_of_scope)
          and new.updated_at is distinct from now())
    execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on entity_notes
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on entity_chunks
    for each row execute function tg__set_updated_at();
create or replace trigger _100_timestamps before update on platform_settings
    for each row execute function tg__set_updated_at();
