-- migrate:up
-- Provenance (seeds 000 "RawItem: метаданные сбора" and 003) and the completeness audit (issue 12).
-- Every entity records when it was last fetched and by which run; a soft delete records the run and
-- why (gone at the source vs collapsed into a duplicate). Run ids are plain bigints, not foreign keys:
-- provenance must outlive a pruned run journal (like dead_letters.run_id, it is a pointer for audit).
-- run_completeness holds, per reconciliation and scope unit, the count the source reports next to the
-- live entities we hold: sync_runs' columns are fixed by seed 000, so it is a child table.
set lock_timeout = '5s';
set statement_timeout = '60s';

alter table entities
    add column last_fetched_at timestamptz,
    add column last_run_id bigint,
    add column deleted_by_run_id bigint,
    add column deleted_reason text
        constraint entities_deleted_reason_known check (deleted_reason in ('gone_at_source', 'collapsed_duplicate'));

comment on column entities.last_fetched_at is 'When a run last took this record from the source (changed or not). NULL: not fetched since provenance was recorded.';
comment on column entities.last_run_id is 'The run (sync_runs.id) that last fetched this record; not a foreign key so it outlives journal pruning.';
comment on column entities.deleted_by_run_id is 'The run that soft-deleted this record (NULL while live, or for deletions made before provenance was recorded).';
comment on column entities.deleted_reason is 'Why it was soft-deleted: gone_at_source (reconciliation did not see it, or the source said it is gone) | collapsed_duplicate (folded into the entity that lists it as an alias). NULL while live.';

create table run_completeness (
    run_id       bigint not null,
    container    text   not null,
    source_count integer,
    live_count   integer not null,
    constraint run_completeness_pkey primary key (run_id, container),
    constraint run_completeness_run_id_fkey foreign key (run_id) references sync_runs (id) on delete cascade,
    constraint run_completeness_counts_nonnegative check (coalesce(source_count, 0) >= 0 and live_count >= 0)
);
comment on table run_completeness is 'Completeness audit of a reconciliation (issue 12): per scope unit, the count the source reports vs the live entities held after the run.';
comment on column run_completeness.container is 'Scope unit: Jira project key, Confluence space key, Slack channel id.';
comment on column run_completeness.source_count is 'Items the source reports in that unit (Jira search total, Confluence CQL totalSize, Slack messages enumerated); NULL when the source would not say.';
comment on column run_completeness.live_count is 'Live (not soft-deleted) entities of the source in that unit right after the run resolved.';

grant insert, update, delete on run_completeness to harvester_worker;

-- The audit's tolerance and the rate-limit patience (issue 12, item 7) are platform settings: the share of a unit's source count by which the live
-- count may differ before the run's error_detail flags it. platform_settings holds a dozen rows, so
-- its two checks are replaced in place (validating them scans nothing worth a NOT VALID step).
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max',
    'completeness_tolerance', 'rate_limit_patience'));
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_value_valid;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_value_valid check (case key
    when 'timezone' then jsonb_typeof(value) = 'string' and length(value #>> '{}') between 1 and 64
    when 'mass_delete_share' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0 and (value #>> '{}')::numeric <= 1
    when 'completeness_tolerance' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric >= 0 and (value #>> '{}')::numeric <= 1
    when 'reconcile_window' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 0 and 10079
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'search_include_drafts' then jsonb_typeof(value) = 'boolean'
    when 'alert_channels' then public.harvester_alert_channels_valid(value)
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end);
insert into platform_settings (key, value) values
    ('completeness_tolerance', '0.01'), -- a unit whose live count is off by more than 1 % is flagged
    ('rate_limit_patience', '600');     -- seconds a request keeps retrying "slow down" answers (429 / 503 + Retry-After)

-- The collapse step now records why and by which run a duplicate was soft-deleted. The one-argument
-- form stays (callers of the previous release) and delegates with no run.
create function harvester_collapse_duplicates(p_source_id bigint, p_run_id bigint) returns integer
    language plpgsql
    set search_path to ''
as $$
declare
    pair record;
    collapsed integer := 0;
begin
    loop
        select s.id as survivor_id, s.source_type, s.source_entity_id as survivor_key,
               d.id as duplicate_id, d.source_entity_id as duplicate_key
          into pair
          from public.entities s
          join public.entities d
            on d.source_id = s.source_id and d.source_type = s.source_type
           and (d.source_entity_id = any (s.aliases) or d.natural_key = any (s.aliases)) and d.id <> s.id
         where s.source_id = p_source_id and s.deleted_at is null and d.deleted_at is null
         order by exists (select 1 from public.entities x
                           where x.source_id = d.source_id and x.source_type = d.source_type
                             and (x.source_entity_id = any (d.aliases) or x.natural_key = any (d.aliases))
                             and x.deleted_at is null and x.id <> s.id),
                  d.id
         limit 1;
        exit when not found;

        with old as (
            delete from public.entity_notes n
             where n.source_id = p_source_id and n.source_type = pair.source_type
               and n.source_entity_id in (pair.survivor_key, pair.duplicate_key)
            returning n.*
        ), s as (
            select * from old where source_entity_id = pair.survivor_key
        ), d as (
            select * from old where source_entity_id = pair.duplicate_key
        )
        insert into public.entity_notes (source_id, source_type, source_entity_id, fact_status, work_kind,
                                         done_text, rest_text, owner_note, updated_by, created_at, updated_at)
        select p_source_id, pair.source_type, pair.survivor_key,
               coalesce(nullif(d.fact_status, ''), s.fact_status),
               coalesce(nullif(d.work_kind, ''), s.work_kind),
               coalesce(nullif(d.done_text, ''), s.done_text),
               coalesce(nullif(d.rest_text, ''), s.rest_text),
               coalesce(nullif(d.owner_note, ''), s.owner_note),
               case when s.updated_at is null or d.updated_at > s.updated_at then d.updated_by else s.updated_by end,
               coalesce(least(s.created_at, d.created_at), s.created_at, d.created_at),
               coalesce(greatest(s.updated_at, d.updated_at), s.updated_at, d.updated_at)
          from d full join s on true;

        update public.entities
           set deleted_at = now(), deleted_by_run_id = p_run_id, deleted_reason = 'collapsed_duplicate'
         where id = pair.duplicate_id;
        collapsed := collapsed + 1;
    end loop;
    return collapsed;
end;
$$;
comment on function harvester_collapse_duplicates(bigint, bigint) is
    'Soft-deletes (reason collapsed_duplicate, by run p_run_id) live entities named in another live entity''s aliases and merges their notes into it. Returns how many were collapsed.';

create or replace function harvester_collapse_duplicates(p_source_id bigint) returns integer
    language sql
    set search_path to ''
as $$
    select public.harvester_collapse_duplicates(p_source_id, null::bigint);
$$;
comment on function harvester_collapse_duplicates(bigint) is
    'Previous form of harvester_collapse_duplicates(bigint, bigint), without a run id.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
