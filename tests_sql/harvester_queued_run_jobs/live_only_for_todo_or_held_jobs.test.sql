-- harvester_queued_run_jobs() tells, for each queued run, whether a run_sync job will still run it: a todo
-- job, or a doing job on a live worker. A failed or cancelled job, a doing job whose worker was pruned, or no
-- job at all leaves the run orphaned (the tick reaps it). Runs past the queue are not listed.
begin;
select plan(7);

-- Setup
insert into sources (name, connector_type, base_url, state) values ('q', 'jira', 'http://127.0.0.1:1', 'disconnected');
insert into sources (name, connector_type, base_url, state)
select 'q' || i, 'jira', 'http://127.0.0.1:1', 'disconnected' from generate_series(1, 5) i;
insert into sync_runs (source_id, mode, trigger)
select id, 'full', 'manual' from sources where name in ('q', 'q1', 'q2', 'q3', 'q4');
insert into sync_runs (source_id, mode, trigger, state, started_at, finished_at)
select id, 'full', 'manual', 'succeeded', now(), now() from sources where name = 'q5';
insert into procrastinate_workers (last_heartbeat) values (now());
insert into procrastinate_jobs (queue_name, task_name, args, status, worker_id)
select 'sync', 'harvester:run_sync', jsonb_build_object('run_id', r.id),
       (case s.name when 'q' then 'todo' when 'q1' then 'doing' when 'q2' then 'doing' else 'failed' end)::procrastinate_job_status,
       case s.name when 'q1' then (select max(id) from procrastinate_workers) end
from sync_runs r join sources s on s.id = r.source_id
where s.name in ('q', 'q1', 'q2', 'q3');

-- Test
select is((select live from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q'), true,
    'A queued run with a todo job will be run.');
select is((select live from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q1'), true,
    'A queued run whose job a live worker is doing will be run.');
select is((select live from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q2'), false,
    'A queued run whose job was being done by a worker that is gone is orphaned.');
select is((select (live, last_status) from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q3'), (false, 'failed'::text),
    'A queued run whose job failed is orphaned, and the job''s status is given.');
select is((select (live, last_status) from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q4'), (false, null::text),
    'A queued run without any job is orphaned.');
select is((select count(*)::int from harvester_queued_run_jobs() j join sync_runs r on r.id = j.run_id
            join sources s on s.id = r.source_id where s.name = 'q5'), 0,
    'Finished runs are not listed.');
set local role harvester_worker;
select lives_ok('select * from harvester_queued_run_jobs()',
    'The worker role can read it.');

select * from finish();
rollback;
