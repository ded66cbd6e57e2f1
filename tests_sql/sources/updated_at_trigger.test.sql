-- Trigger _100_timestamps stamps sources.updated_at with now() on every update; callers cannot set it.
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type, created_at, updated_at)
values ('Stale', 'jira', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z') returning id as source_id \gset

-- Test
update sources set state = 'paused' where id = :source_id;
select is((select updated_at from sources where id = :source_id), now(),
    'Updating a source moves its updated_at to the transaction time.');
select is((select created_at from sources where id = :source_id), '2000-01-01T00:00:00Z'::timestamptz,
    'Updating a source leaves its created_at untouched.');
update sources set state = 'active', updated_at = '2001-01-01T00:00:00Z' where id = :source_id;
select is((select updated_at from sources where id = :source_id), now(),
    'An explicit updated_at in an UPDATE is overridden by the trigger.');

select * from finish();
rollback;
