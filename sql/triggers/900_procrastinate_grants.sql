-- Re-appliable. The job queue's tables come from Procrastinate's own schema, applied by
-- `harvester db migrate` before our migrations; both roles defer and run jobs.
do $$
declare
    t record;
begin
    for t in select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
              where n.nspname = 'public' and c.relname like 'procrastinate%' and c.relkind in ('r', 'S', 'v')
    loop
        if t.relkind = 'S' then
            execute format('grant usage, select, update on sequence public.%I to harvester_api, harvester_worker', t.relname);
        else
            execute format('grant select, insert, update, delete on public.%I to harvester_api, harvester_worker', t.relname);
        end if;
    end loop;
    execute 'grant execute on all functions in schema public to harvester_api, harvester_worker';
end
$$;
