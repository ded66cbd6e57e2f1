-- harvester_job_workers() is the typed view of Procrastinate's workers for the API (seed 003: a worker
-- is online if seen < 5 minutes): it lists every worker with its heartbeat, and the API role may call it.
begin;
select plan(3);

-- Setup
delete from procrastinate_workers;
insert into procrastinate_workers (last_heartbeat) values (now() - interval '10 minutes'), (now());

-- Test
select is((select count(*)::int from harvester_job_workers()), 2,
    'Every Procrastinate worker is listed.');
select is((select count(*)::int from harvester_job_workers() where last_heartbeat > now() - interval '5 minutes'), 1,
    'Each worker carries its last heartbeat, so liveness can be computed from it.');
set local role harvester_api;
select lives_ok('select * from harvester_job_workers()',
    'The API role can list the workers.');

select * from finish();
rollback;
