-- entity_load_stage is only the shape of the load path's per-session temporary stage: the shared table
-- refuses every row (entity_load_stage_template_only), while the temporary copy CreateEntityLoadStage
-- makes accepts rows and shadows the shared one for unqualified names.
begin;
select plan(3);

-- Setup
create temp table entity_load_stage (like public.entity_load_stage);

-- Test
select throws_ok(
    $$insert into public.entity_load_stage (source_type, source_entity_id, status, title, body, metadata, aliases,
        out_of_scope, content_hash) values ('ticket', '1', 'final', 't', 'b', '{}', '{}', false, 'h')$$,
    '23514', 'new row for relation "entity_load_stage" violates check constraint "entity_load_stage_template_only"',
    'The shared template refuses a staged row.');
select lives_ok(
    $$insert into entity_load_stage (source_type, source_entity_id, status, title, body, metadata, aliases,
        out_of_scope, content_hash) values ('ticket', '1', 'final', 't', 'b', '{}', '{}', false, 'h')$$,
    'An unqualified insert lands in the session''s temporary stage.');
select is((select count(*) from pg_temp.entity_load_stage), 1::bigint,
    'The temporary stage holds the row; the template holds none.');

select * from finish();
rollback;
