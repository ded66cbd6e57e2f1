CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

COMMENT ON EXTENSION vector IS 'vector data type and ivfflat and hnsw access methods';

CREATE TYPE public.entity_totals_share AS (
	id bigint,
	source_id bigint,
	acl text[],
	sign integer
);

COMMENT ON TYPE public.entity_totals_share IS 'An entity row''s share in source_entity_totals and acl_principal_totals: its id, source, ACL, +1 counted in or -1 counted out (sql/triggers/700_entity_totals.sql).';

CREATE TYPE public.procrastinate_job_event_type AS ENUM (
    'deferred',
    'started',
    'deferred_for_retry',
    'failed',
    'succeeded',
    'cancelled',
    'abort_requested',
    'aborted',
    'scheduled',
    'retried'
);

CREATE TYPE public.procrastinate_job_status AS ENUM (
    'todo',
    'doing',
    'succeeded',
    'failed',
    'cancelled',
    'aborting',
    'aborted'
);

CREATE TYPE public.procrastinate_job_to_defer_v1 AS (
	queue_name character varying,
	task_name character varying,
	priority integer,
	lock text,
	queueing_lock text,
	args jsonb,
	scheduled_at timestamp with time zone
);

CREATE FUNCTION public.harvester_alert_channels_valid(channels jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO ''
    AS $$
    select jsonb_typeof(channels) = 'array'
       and jsonb_array_length(channels) <= 20
       and coalesce((
           select bool_and(
               jsonb_typeof(c) = 'object'
               and c ->> 'kind' in ('webhook', 'slack')
               and jsonb_typeof(c -> 'url') = 'string'
               and (c ->> 'url') ~ '^https?://[^\s/?#]+'
               and length(c ->> 'url') <= 2048
               and not (c ? 'secret')
               and (not (c ? 'secret_enc') or (c ->> 'secret_enc') like 'v1:%')
               and (not (c ? 'events') or jsonb_typeof(c -> 'events') = 'array'))
           from jsonb_array_elements(channels) as c), true)
$$;

COMMENT ON FUNCTION public.harvester_alert_channels_valid(channels jsonb) IS 'CHECK helper: alert_channels is an array of {kind webhook|slack, url http(s), secret_enc?, events?}; no clear secret.';

CREATE FUNCTION public.harvester_collapse_duplicates(p_source_id bigint) RETURNS integer
    LANGUAGE sql
    SET search_path TO ''
    AS $$
    select public.harvester_collapse_duplicates(p_source_id, null::bigint);
$$;

COMMENT ON FUNCTION public.harvester_collapse_duplicates(p_source_id bigint) IS 'Previous form of harvester_collapse_duplicates(bigint, bigint), without a run id.';

CREATE FUNCTION public.harvester_collapse_duplicates(p_source_id bigint, p_run_id bigint) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
    pair record;
    collapsed integer := 0;
begin
    loop
        -- Only live rows that list aliases are read (entities_alias_holders_idx), and each alias is one
        -- equality probe of the identity key and one of the natural-key index. `offset 0` keeps each
        -- alias's pair of probes a subquery of its own, with the liveness and self checks outside it:
        -- given equalities and nothing else, the planner picks those indexes whatever its statistics say.
        select s.id as survivor_id, s.source_type, s.source_entity_id as survivor_key,
               d.id as duplicate_id, d.source_entity_id as duplicate_key
          into pair
          from public.entities s
          cross join lateral unnest(s.aliases) as a(alias)
          cross join lateral (
              select k.id, k.source_entity_id, k.aliases, k.source_type, k.deleted_at
                from public.entities k
               where k.source_id = p_source_id and k.source_type = s.source_type and k.source_entity_id = a.alias
              union all
              select k.id, k.source_entity_id, k.aliases, k.source_type, k.deleted_at
                from public.entities k
               where k.source_id = p_source_id and k.natural_key = a.alias
              offset 0
          ) d
         where s.source_id = p_source_id and s.deleted_at is null and s.aliases <> '{}'
           and d.source_type = s.source_type and d.deleted_at is null and d.id <> s.id
         -- Leaves first: a duplicate that itself names another live row (not s) waits for that one.
         order by exists (select 1
                            from unnest(d.aliases) as b(alias)
                            cross join lateral (
                                select x.id, x.source_type, x.deleted_at from public.entities x
                                 where x.source_id = p_source_id and x.source_type = s.source_type
                                   and x.source_entity_id = b.alias
                                union all
                                select x.id, x.source_type, x.deleted_at from public.entities x
                                 where x.source_id = p_source_id and x.natural_key = b.alias
                                offset 0) x
                           where x.source_type = s.source_type and x.deleted_at is null and x.id <> s.id),
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

COMMENT ON FUNCTION public.harvester_collapse_duplicates(p_source_id bigint, p_run_id bigint) IS 'Soft-deletes (reason collapsed_duplicate, by run p_run_id) live entities named in another live entity''s aliases and merges their notes into it. Returns how many were collapsed.';

CREATE FUNCTION public.harvester_defer_alert(args jsonb) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'public'
    AS $_$
declare
    job_id bigint;
begin
    execute 'select (public.procrastinate_defer_jobs_v1(array[row($1, $2, 0, null, null, $3, null)'
            '::public.procrastinate_job_to_defer_v1]))[1]'
        into job_id
        using 'alerts', 'harvester:send_alert', args;
    return job_id;
end;
$_$;

COMMENT ON FUNCTION public.harvester_defer_alert(args jsonb) IS 'Queues one harvester:send_alert job (queue alerts) in the caller''s transaction.';

CREATE FUNCTION public.harvester_distinct_chunks() RETURNS bigint
    LANGUAGE sql
    SET search_path TO ''
    AS $$
    -- The chunk's content_hash is the SHA-256 of its text: an equal hash in one entity is the same text.
    with copies as (
        select c.id
          from (select x.id,
                       row_number() over (partition by x.entity_id, x.content_hash order by x.ordinal) as n
                  from public.entity_chunks x) as c
         where c.n > 1),
    removed as (
        delete from public.entity_chunks c
         using copies
         where c.id = copies.id
        returning 1)
    select count(*) from removed;
$$;

COMMENT ON FUNCTION public.harvester_distinct_chunks() IS 'Removes every chunk whose text an earlier chunk of the same entity holds (decision 130); returns how many. The ordinals kept may have gaps until the entity''s text changes.';

CREATE FUNCTION public.harvester_job_workers() RETURNS TABLE(id bigint, last_heartbeat timestamp with time zone)
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $$
begin
    return query execute 'select w.id, w.last_heartbeat from public.procrastinate_workers w order by w.id';
end;
$$;

COMMENT ON FUNCTION public.harvester_job_workers() IS 'Procrastinate workers and their last heartbeat (online = younger than 5 minutes, computed by the reader).';

CREATE FUNCTION public.harvester_queued_run_jobs() RETURNS TABLE(run_id bigint, live boolean, last_status text)
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $_$
begin
    return query execute $q$
        select r.id,
               coalesce(bool_or(j.status = 'todo' or (j.status = 'doing' and j.worker_id is not null)), false),
               (array_agg(j.status::text order by j.id desc) filter (where j.id is not null))[1]
        from public.sync_runs r
        left join public.procrastinate_jobs j
               on j.task_name = 'harvester:run_sync'
              and j.args ? 'run_id'
              and (j.args ->> 'run_id')::bigint = r.id
        where r.state = 'queued'
        group by r.id
    $q$;
end;
$_$;

COMMENT ON FUNCTION public.harvester_queued_run_jobs() IS 'Each queued run with whether a run_sync job will still run it (todo, or doing on a live worker) and its latest job''s status.';

CREATE FUNCTION public.harvester_repeated_lexemes(lexemes tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO ''
    AS $$
    select pg_catalog.array_to_tsvector(coalesce(pg_catalog.array_agg(
               u.lexeme || case when u.n >= 55 then ' 55' when u.n >= 21 then ' 21' when u.n >= 8 then ' 8'
                                when u.n >= 3 then ' 3' else '' end), '{}'))
    from (select r.lexeme, pg_catalog.cardinality(r.positions) as n from pg_catalog.unnest(lexemes) as r) as u
    where u.n > 1;
$$;

COMMENT ON FUNCTION public.harvester_repeated_lexemes(lexemes tsvector) IS 'The lexemes of a tsvector with two or more positions, each once, marked by its count: itself 2, " 3" 3-7, " 8" 8-20, " 21" 21-54, " 55" 55+ (entity_chunk_repeats).';

CREATE FUNCTION public.harvester_run_duration_bounds() RETURNS double precision[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select array[1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600]::float8[]
$$;

COMMENT ON FUNCTION public.harvester_run_duration_bounds() IS 'Upper bounds (seconds, inclusive) of the run-duration histogram''s buckets (Prometheus "le"); a last bucket holds longer runs.';

CREATE FUNCTION public.harvester_run_duration_bucket(seconds double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select (1 + count(*))::integer from unnest(public.harvester_run_duration_bounds()) as b(bound) where b.bound < seconds
$$;

COMMENT ON FUNCTION public.harvester_run_duration_bucket(seconds double precision) IS 'The histogram bucket of a duration: i when it is above bound i-1 and at most bound i of harvester_run_duration_bounds(), one past the last bound when longer.';

CREATE TABLE public.sync_run_totals (
    source_id bigint NOT NULL,
    mode text NOT NULL,
    state text NOT NULL,
    bucket integer NOT NULL,
    runs bigint NOT NULL,
    webhook_runs bigint NOT NULL,
    entities_done bigint NOT NULL,
    api_calls bigint NOT NULL,
    rate_limited bigint NOT NULL,
    duration_sum numeric NOT NULL,
    CONSTRAINT sync_run_totals_bucket_range CHECK (((bucket >= 1) AND (bucket <= (cardinality(public.harvester_run_duration_bounds()) + 1)))),
    CONSTRAINT sync_run_totals_counts_not_negative CHECK (((runs >= 0) AND (webhook_runs >= 0) AND (entities_done >= 0) AND (api_calls >= 0) AND (rate_limited >= 0) AND (duration_sum >= (0)::numeric))),
    CONSTRAINT sync_run_totals_mode_check CHECK ((mode = ANY (ARRAY['full'::text, 'incremental'::text, 'reconciliation'::text]))),
    CONSTRAINT sync_run_totals_state_check CHECK ((state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))
);

COMMENT ON TABLE public.sync_run_totals IS 'Finished runs summed per source, mode, final state and duration bucket (GET /metrics), kept exact by statement triggers on sync_runs (sql/triggers/600_run_totals.sql).';

COMMENT ON COLUMN public.sync_run_totals.bucket IS 'The runs'' duration bucket (harvester_run_duration_bucket of finished_at - coalesce(started_at, created_at), negative taken as 0).';

COMMENT ON COLUMN public.sync_run_totals.duration_sum IS 'Sum of the runs'' durations in seconds; numeric, so that a run taken out subtracts exactly what it added.';

CREATE FUNCTION public.harvester_run_totals_merge(deltas public.sync_run_totals[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    -- Runs counted in (positive rows): added, or a row created (a key without one had no finished run).
    insert into public.sync_run_totals as t
    select d.* from unnest(deltas) as d where d.runs > 0
    on conflict on constraint sync_run_totals_pkey do update
    set runs = t.runs + excluded.runs,
        webhook_runs = t.webhook_runs + excluded.webhook_runs,
        entities_done = t.entities_done + excluded.entities_done,
        api_calls = t.api_calls + excluded.api_calls,
        rate_limited = t.rate_limited + excluded.rate_limited,
        duration_sum = t.duration_sum + excluded.duration_sum;
    -- Runs counted out (negative rows): their row exists, unless the source is being deleted and the
    -- cascade took its totals first; then there is nothing left to correct.
    update public.sync_run_totals as t
    set runs = t.runs + d.runs,
        webhook_runs = t.webhook_runs + d.webhook_runs,
        entities_done = t.entities_done + d.entities_done,
        api_calls = t.api_calls + d.api_calls,
        rate_limited = t.rate_limited + d.rate_limited,
        duration_sum = t.duration_sum + d.duration_sum
    from unnest(deltas) as d
    where d.runs <= 0
      and t.source_id = d.source_id and t.mode = d.mode and t.state = d.state and t.bucket = d.bucket;
end;
$$;

COMMENT ON FUNCTION public.harvester_run_totals_merge(deltas public.sync_run_totals[]) IS 'Adds per-key deltas to sync_run_totals: positive rows (runs counted in) upserted, negative rows (runs counted out) subtracted; at most one of each per key.';

CREATE FUNCTION public.harvester_take_rate_token(p_key text) RETURNS double precision
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
    b public.rate_budgets%rowtype;
    available double precision;
begin
    select * into b from public.rate_budgets where credential_key = p_key for update;
    if not found then
        return 0;
    end if;
    if b.paused_until is not null and b.paused_until > now() then
        return extract(epoch from (b.paused_until - now()));
    end if;
    if b.refill_per_second <= 0 or b.capacity <= 0 then
        return 0;
    end if;
    available := least(
        b.capacity,
        greatest(b.tokens, 0) + greatest(extract(epoch from (now() - b.updated_at)), 0) * b.refill_per_second
    );
    if available >= 1 then
        update public.rate_budgets set tokens = available - 1, updated_at = greatest(now(), b.updated_at)
        where credential_key = p_key;
        return 0;
    end if;
    update public.rate_budgets set tokens = available, updated_at = greatest(now(), b.updated_at)
    where credential_key = p_key;
    return (1 - available) / b.refill_per_second;
end;
$$;

COMMENT ON FUNCTION public.harvester_take_rate_token(p_key text) IS 'Takes one request token of a credential''s rate budget: 0 = go now, else seconds to wait.';

CREATE FUNCTION public.harvester_webhook_job_waiting(p_source_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $_$
declare
    waiting boolean;
begin
    execute $q$
        select exists (
            select 1 from public.procrastinate_jobs j
             where j.status = 'todo'
               and j.task_name = 'harvester:apply_webhook'
               and j.args ? 'source_id'
               and (j.args ->> 'source_id')::bigint = $1)
    $q$ into waiting using p_source_id;
    return waiting;
end;
$_$;

COMMENT ON FUNCTION public.harvester_webhook_job_waiting(p_source_id bigint) IS 'Whether a todo apply_webhook job for the source exists: it will take whatever the source has pending.';

CREATE FUNCTION public.procrastinate_cancel_job_v1(job_id bigint, abort boolean, delete_job boolean) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    _job_id bigint;
BEGIN
    IF delete_job THEN
        DELETE FROM procrastinate_jobs
        WHERE id = job_id AND status = 'todo'
        RETURNING id INTO _job_id;
    END IF;
    IF _job_id IS NULL THEN
        IF abort THEN
            UPDATE procrastinate_jobs
            SET abort_requested = true,
                status = CASE status
                    WHEN 'todo' THEN 'cancelled'::procrastinate_job_status ELSE status
                END
            WHERE id = job_id AND status IN ('todo', 'doing')
            RETURNING id INTO _job_id;
        ELSE
            UPDATE procrastinate_jobs
            SET status = 'cancelled'::procrastinate_job_status
            WHERE id = job_id AND status = 'todo'
            RETURNING id INTO _job_id;
        END IF;
    END IF;
    RETURN _job_id;
END;
$$;

CREATE FUNCTION public.procrastinate_defer_jobs_v1(jobs public.procrastinate_job_to_defer_v1[]) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    job_ids bigint[];
BEGIN
    WITH inserted_jobs AS (
        INSERT INTO procrastinate_jobs (queue_name, task_name, priority, lock, queueing_lock, args, scheduled_at)
        SELECT (job).queue_name,
               (job).task_name,
               (job).priority,
               (job).lock,
               (job).queueing_lock,
               (job).args,
               (job).scheduled_at
        FROM unnest(jobs) AS job
        RETURNING id
    )
    SELECT array_agg(id) FROM inserted_jobs INTO job_ids;

    RETURN job_ids;
END;
$$;

CREATE FUNCTION public.procrastinate_defer_periodic_job_v2(_queue_name character varying, _lock character varying, _queueing_lock character varying, _task_name character varying, _priority integer, _periodic_id character varying, _defer_timestamp bigint, _args jsonb) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
	_job_id bigint;
	_defer_id bigint;
BEGIN
    INSERT
        INTO procrastinate_periodic_defers (task_name, periodic_id, defer_timestamp)
        VALUES (_task_name, _periodic_id, _defer_timestamp)
        ON CONFLICT DO NOTHING
        RETURNING id into _defer_id;

    IF _defer_id IS NULL THEN
        RETURN NULL;
    END IF;

    UPDATE procrastinate_periodic_defers
        SET job_id = (
            SELECT COALESCE((
                SELECT unnest(procrastinate_defer_jobs_v1(
                    ARRAY[
                        ROW(
                            _queue_name,
                            _task_name,
                            _priority,
                            _lock,
                            _queueing_lock,
                            _args,
                            NULL::timestamptz
                        )
                    ]::procrastinate_job_to_defer_v1[]
                ))
            ), NULL)
        )
        WHERE id = _defer_id
        RETURNING job_id INTO _job_id;

    DELETE
        FROM procrastinate_periodic_defers
        USING (
            SELECT id
            FROM procrastinate_periodic_defers
            WHERE procrastinate_periodic_defers.task_name = _task_name
            AND procrastinate_periodic_defers.periodic_id = _periodic_id
            AND procrastinate_periodic_defers.defer_timestamp < _defer_timestamp
            ORDER BY id
            FOR UPDATE
        ) to_delete
        WHERE procrastinate_periodic_defers.id = to_delete.id;

    RETURN _job_id;
END;
$$;

CREATE TABLE public.procrastinate_jobs (
    id bigint NOT NULL,
    queue_name character varying(128) NOT NULL,
    task_name character varying(128) NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    lock text,
    queueing_lock text,
    args jsonb DEFAULT '{}'::jsonb NOT NULL,
    status public.procrastinate_job_status DEFAULT 'todo'::public.procrastinate_job_status NOT NULL,
    scheduled_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    abort_requested boolean DEFAULT false NOT NULL,
    worker_id bigint,
    CONSTRAINT check_not_todo_abort_requested CHECK ((NOT ((status = 'todo'::public.procrastinate_job_status) AND (abort_requested = true))))
);

CREATE FUNCTION public.procrastinate_fetch_job_v2(target_queue_names character varying[], p_worker_id bigint) RETURNS public.procrastinate_jobs
    LANGUAGE plpgsql
    AS $$
DECLARE
	found_jobs procrastinate_jobs;
BEGIN
    WITH candidate AS (
        SELECT jobs.*
            FROM procrastinate_jobs AS jobs
            WHERE
                -- reject the job if its lock has earlier or higher priority jobs
                NOT EXISTS (
                    SELECT 1
                        FROM procrastinate_jobs AS other_jobs
                        WHERE
                            jobs.lock IS NOT NULL
                            AND other_jobs.lock = jobs.lock
                            AND (
                                -- job with same lock is already running
                                other_jobs.status = 'doing'
                                OR
                                -- job with same lock is waiting and has higher priority (or same priority but was queued first)
                                (
                                    other_jobs.status = 'todo'
                                    AND (
                                        other_jobs.priority > jobs.priority
                                        OR (
                                        other_jobs.priority = jobs.priority
                                        AND other_jobs.id < jobs.id
                                        )
                                    )
                                )
                            )
                )
                AND jobs.status = 'todo'
                AND (target_queue_names IS NULL OR jobs.queue_name = ANY( target_queue_names ))
                AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= now())
            ORDER BY jobs.priority DESC, jobs.id ASC LIMIT 1
            FOR UPDATE OF jobs SKIP LOCKED
    )
    UPDATE procrastinate_jobs
        SET status = 'doing', worker_id = p_worker_id
        FROM candidate
        WHERE procrastinate_jobs.id = candidate.id
        RETURNING procrastinate_jobs.* INTO found_jobs;

 RETURN found_jobs;
END;
$$;

CREATE FUNCTION public.procrastinate_finish_job_v1(job_id bigint, end_status public.procrastinate_job_status, delete_job boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    _job_id bigint;
BEGIN
    IF end_status NOT IN ('succeeded', 'failed', 'aborted') THEN
        RAISE 'End status should be either "succeeded", "failed" or "aborted" (job id: %)', job_id;
    END IF;
    IF delete_job THEN
        DELETE FROM procrastinate_jobs
        WHERE id = job_id AND status IN ('todo', 'doing')
        RETURNING id INTO _job_id;
    ELSE
        UPDATE procrastinate_jobs
        SET status = end_status,
            abort_requested = false,
            attempts = CASE status
                WHEN 'doing' THEN attempts + 1 ELSE attempts
            END
        WHERE id = job_id AND status IN ('todo', 'doing')
        RETURNING id INTO _job_id;
    END IF;
    IF _job_id IS NULL THEN
        RAISE 'Job was not found or not in "doing" or "todo" status (job id: %)', job_id;
    END IF;
END;
$$;

CREATE FUNCTION public.procrastinate_notify_queue_abort_job_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    payload TEXT;
BEGIN
    SELECT json_build_object('type', 'abort_job_requested', 'job_id', NEW.id)::text INTO payload;
	PERFORM pg_notify('procrastinate_queue_v1#' || NEW.queue_name, payload);
	PERFORM pg_notify('procrastinate_any_queue_v1', payload);
	RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_notify_queue_job_inserted_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    payload TEXT;
BEGIN
    SELECT json_build_object('type', 'job_inserted', 'job_id', NEW.id)::text INTO payload;
	PERFORM pg_notify('procrastinate_queue_v1#' || NEW.queue_name, payload);
	PERFORM pg_notify('procrastinate_any_queue_v1', payload);
	RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_prune_stalled_workers_v1(seconds_since_heartbeat double precision) RETURNS TABLE(worker_id bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
    RETURN QUERY
    DELETE FROM procrastinate_workers
    WHERE last_heartbeat < NOW() - (seconds_since_heartbeat || 'SECOND')::INTERVAL
    RETURNING procrastinate_workers.id;
END;
$$;

CREATE FUNCTION public.procrastinate_register_worker_v1() RETURNS TABLE(worker_id bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
    RETURN QUERY
    INSERT INTO procrastinate_workers DEFAULT VALUES
    RETURNING procrastinate_workers.id;
END;
$$;

CREATE FUNCTION public.procrastinate_retry_job_v1(job_id bigint, retry_at timestamp with time zone, new_priority integer, new_queue_name character varying, new_lock character varying) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    _job_id bigint;
    _abort_requested boolean;
BEGIN
    SELECT abort_requested FROM procrastinate_jobs
    WHERE id = job_id AND status = 'doing'
    FOR UPDATE
    INTO _abort_requested;
    IF _abort_requested THEN
        UPDATE procrastinate_jobs
        SET status = 'failed'::procrastinate_job_status
        WHERE id = job_id AND status = 'doing'
        RETURNING id INTO _job_id;
    ELSE
        UPDATE procrastinate_jobs
        SET status = 'todo'::procrastinate_job_status,
            attempts = attempts + 1,
            scheduled_at = retry_at,
            priority = COALESCE(new_priority, priority),
            queue_name = COALESCE(new_queue_name, queue_name),
            lock = COALESCE(new_lock, lock)
        WHERE id = job_id AND status = 'doing'
        RETURNING id INTO _job_id;
    END IF;

    IF _job_id IS NULL THEN
        RAISE 'Job was not found or not in "doing" status (job id: %)', job_id;
    END IF;
END;
$$;

CREATE FUNCTION public.procrastinate_retry_job_v2(job_id bigint, retry_at timestamp with time zone, new_priority integer, new_queue_name character varying, new_lock character varying) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    _job_id bigint;
    _abort_requested boolean;
    _current_status procrastinate_job_status;
BEGIN
    SELECT status, abort_requested FROM procrastinate_jobs
    WHERE id = job_id AND status IN ('doing', 'failed')
    FOR UPDATE
    INTO _current_status, _abort_requested;
    IF _current_status = 'doing' AND _abort_requested THEN
        UPDATE procrastinate_jobs
        SET status = 'failed'::procrastinate_job_status
        WHERE id = job_id AND status = 'doing'
        RETURNING id INTO _job_id;
    ELSE
        UPDATE procrastinate_jobs
        SET status = 'todo'::procrastinate_job_status,
            attempts = attempts + 1,
            scheduled_at = retry_at,
            priority = COALESCE(new_priority, priority),
            queue_name = COALESCE(new_queue_name, queue_name),
            lock = COALESCE(new_lock, lock)
        WHERE id = job_id AND status IN ('doing', 'failed')
        RETURNING id INTO _job_id;
    END IF;

    IF _job_id IS NULL THEN
        RAISE 'Job was not found or has an invalid status to retry (job id: %)', job_id;
    END IF;

END;
$$;

CREATE FUNCTION public.procrastinate_trigger_abort_requested_events_procedure_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO procrastinate_events(job_id, type)
        VALUES (NEW.id, 'abort_requested'::procrastinate_job_event_type);
    RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_trigger_function_scheduled_events_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO procrastinate_events(job_id, type, at)
        VALUES (NEW.id, 'scheduled'::procrastinate_job_event_type, NEW.scheduled_at);

	RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_trigger_function_status_events_insert_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO procrastinate_events(job_id, type)
        VALUES (NEW.id, 'deferred'::procrastinate_job_event_type);
	RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_trigger_function_status_events_update_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    WITH t AS (
        SELECT CASE
            WHEN OLD.status = 'todo'::procrastinate_job_status
                AND NEW.status = 'doing'::procrastinate_job_status
                THEN 'started'::procrastinate_job_event_type
            WHEN OLD.status = 'doing'::procrastinate_job_status
                AND NEW.status = 'todo'::procrastinate_job_status
                THEN 'deferred_for_retry'::procrastinate_job_event_type
            WHEN OLD.status = 'doing'::procrastinate_job_status
                AND NEW.status = 'failed'::procrastinate_job_status
                THEN 'failed'::procrastinate_job_event_type
            WHEN OLD.status = 'doing'::procrastinate_job_status
                AND NEW.status = 'succeeded'::procrastinate_job_status
                THEN 'succeeded'::procrastinate_job_event_type
            WHEN OLD.status = 'todo'::procrastinate_job_status
                AND (
                    NEW.status = 'cancelled'::procrastinate_job_status
                    OR NEW.status = 'failed'::procrastinate_job_status
                    OR NEW.status = 'succeeded'::procrastinate_job_status
                )
                THEN 'cancelled'::procrastinate_job_event_type
            WHEN OLD.status = 'doing'::procrastinate_job_status
                AND NEW.status = 'aborted'::procrastinate_job_status
                THEN 'aborted'::procrastinate_job_event_type
            WHEN OLD.status = 'failed'::procrastinate_job_status
                AND NEW.status = 'todo'::procrastinate_job_status
                THEN 'retried'::procrastinate_job_event_type
            ELSE NULL
        END as event_type
    )
    INSERT INTO procrastinate_events(job_id, type)
        SELECT NEW.id, t.event_type
        FROM t
        WHERE t.event_type IS NOT NULL;
	RETURN NEW;
END;
$$;

CREATE FUNCTION public.procrastinate_unlink_periodic_defers_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE procrastinate_periodic_defers
    SET job_id = NULL
    WHERE job_id = OLD.id;
    RETURN OLD;
END;
$$;

CREATE FUNCTION public.procrastinate_unregister_worker_v1(worker_id bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM procrastinate_workers
    WHERE id = worker_id;
END;
$$;

CREATE FUNCTION public.procrastinate_update_heartbeat_v1(worker_id bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE procrastinate_workers
    SET last_heartbeat = NOW()
    WHERE id = worker_id;
END;
$$;

CREATE FUNCTION public.tg__notify_runs_changed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    perform pg_catalog.pg_notify('harvester_runs', '');
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg__notify_runs_changed() IS 'AFTER statement trigger on sync_runs, run_completeness and sources: NOTIFY harvester_runs (no payload), so API processes drop their cached runs responses.';

CREATE FUNCTION public.tg__set_updated_at() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    new.updated_at := now();
    return new;
end;
$$;

COMMENT ON FUNCTION public.tg__set_updated_at() IS 'Shared BEFORE UPDATE trigger: stamps updated_at with the transaction time.';

CREATE FUNCTION public.tg_api_tokens__notify_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    perform pg_catalog.pg_notify('harvester_api_tokens', coalesce(new.id, old.id)::text);
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_api_tokens__notify_change() IS 'AFTER UPDATE/DELETE trigger on api_tokens: NOTIFY harvester_api_tokens with the token id, so API processes drop cached look-ups (revocation takes effect on the next request).';

CREATE FUNCTION public.tg_dead_letters__totals() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
    deltas public.dead_letter_totals[];
begin
    if tg_op = 'INSERT' then
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select r.source_id, r.reason, count(*) as items from new_rows r group by 1, 2) as d;
    elsif tg_op = 'DELETE' then
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select r.source_id, r.reason, -count(*) as items from old_rows r group by 1, 2) as d;
    else
        -- Grouped, not joined on id (a join's plan is made once, for the first call's row counts): an item
        -- whose source and reason stayed cancels out.
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select x.source_id, x.reason, sum(x.sign)::bigint as items
              from (select r.source_id, r.reason, 1 as sign from new_rows r
                    union all
                    select r.source_id, r.reason, -1 from old_rows r) as x
              group by 1, 2
              having sum(x.sign) <> 0) as d;
    end if;
    if cardinality(deltas) = 0 then
        return null;  -- most updates: an item failing again for the same reason
    end if;

    -- Per key one net delta, applied as in 700_entity_totals.sql: a row that would be left at zero or
    -- less is deleted first (each statement sees the ones before it), then the others are updated in
    -- place, then a key without a row is inserted; a negative one without a row is dropped (a source's
    -- deletion cascaded to its totals first).
    delete from public.dead_letter_totals as t
    using unnest(deltas) as d
    where d.items < 0 and t.source_id = d.source_id and t.reason = d.reason and t.items + d.items <= 0;
    update public.dead_letter_totals as t
    set items = t.items + d.items
    from unnest(deltas) as d
    where t.source_id = d.source_id and t.reason = d.reason;
    insert into public.dead_letter_totals as t
    select d.* from unnest(deltas) as d
    where d.items > 0
      and not exists (select 1 from public.dead_letter_totals x where x.source_id = d.source_id and x.reason = d.reason)
    on conflict on constraint dead_letter_totals_pkey do update set items = t.items + excluded.items;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_dead_letters__totals() IS 'AFTER statement triggers on dead_letters: add the statement''s new rows to dead_letter_totals and take out the ones it removed or changed.';

CREATE FUNCTION public.tg_dead_letters__totals_truncate() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    delete from public.dead_letter_totals;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_dead_letters__totals_truncate() IS 'AFTER TRUNCATE trigger on dead_letters: no dead letters, no totals.';

CREATE FUNCTION public.tg_entities__propagate_acl() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    update public.entity_chunks c
       set acl_principals = new.acl_principals,
           entity_status = new.status,
           entity_deleted = new.deleted_at is not null
     where c.entity_id = new.id;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_entities__propagate_acl() IS 'Pushes a changed ACL, status or deletion of an entity down to its chunks.';

CREATE FUNCTION public.tg_entities__totals() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
    counted public.entity_totals_share[];
    live_deltas public.source_entity_totals[];
    principal_deltas public.acl_principal_totals[];
begin
    if tg_op = 'INSERT' then
        select coalesce(array_agg(row(r.id, r.source_id, r.acl_principals, 1)::public.entity_totals_share), '{}')
        into counted
        from new_rows r where r.deleted_at is null;
    elsif tg_op = 'DELETE' then
        select coalesce(array_agg(row(r.id, r.source_id, r.acl_principals, -1)::public.entity_totals_share), '{}')
        into counted
        from old_rows r where r.deleted_at is null;
    else
        -- Grouped rather than joined on id: an entity live on both sides with the same source and ACL
        -- cancels out; one whose liveness, source or ACL changed leaves its old share (-1) and its new
        -- one (+1). A join's plan would be made once, from the first call's transition tables: planned
        -- for one row, it compared every old row with every new one.
        select coalesce(array_agg(row(g.id, g.source_id, g.acl, g.sign)::public.entity_totals_share), '{}')
        into counted
        from (select x.id, x.source_id, x.acl, sum(x.sign)::integer as sign
              from (select r.id, r.source_id, r.acl_principals as acl, 1 as sign
                    from new_rows r where r.deleted_at is null
                    union all
                    select r.id, r.source_id, r.acl_principals, -1
                    from old_rows r where r.deleted_at is null) as x
              group by x.id, x.source_id, x.acl
              having sum(x.sign) <> 0) as g;
    end if;
    if cardinality(counted) = 0 then
        return null;  -- most updates: the provenance touch of unchanged rows, a rewritten body
    end if;

    select coalesce(array_agg(row(d.source_id, d.delta)::public.source_entity_totals), '{}')
    into live_deltas
    from (select c.source_id, sum(c.sign) as delta from unnest(counted) as c group by 1) as d
    where d.delta <> 0;
    -- A principal counts an entity once, however often its ACL repeats it (spelled as in the rebuild below).
    select coalesce(array_agg(row(d.principal, d.source_id, d.delta)::public.acl_principal_totals), '{}')
    into principal_deltas
    from (select u.p as principal, c.source_id, sum(c.sign) as delta
          from unnest(counted) as c
          cross join lateral (select distinct x.p from unnest(c.acl) as x(p) where x.p is not null) as u
          group by 1, 2) as d
    where d.delta <> 0;

    -- Per key one net delta. A row that exists is deleted when nothing would be left (before the update:
    -- each statement sees the ones before it), or else updated in place (a plain update: an upsert locks
    -- each row first, one more WAL record a key). A key without a row is inserted; a negative one without
    -- a row is dropped (a source's deletion cascaded to its totals first). Never below zero: rows written
    -- past the triggers cannot fail a page; the next migrate's rebuild corrects the figures.
    update public.source_entity_totals as t
    set live = greatest(t.live + d.live, 0)
    from unnest(live_deltas) as d
    where t.source_id = d.source_id;
    insert into public.source_entity_totals as t
    select d.* from unnest(live_deltas) as d
    where d.live > 0 and not exists (select 1 from public.source_entity_totals x where x.source_id = d.source_id)
    on conflict on constraint source_entity_totals_pkey do update set live = t.live + excluded.live;

    delete from public.acl_principal_totals as t
    using unnest(principal_deltas) as d
    where d.entities < 0 and t.principal = d.principal and t.source_id = d.source_id
      and t.entities + d.entities <= 0;
    update public.acl_principal_totals as t
    set entities = t.entities + d.entities
    from unnest(principal_deltas) as d
    where t.principal = d.principal and t.source_id = d.source_id;
    insert into public.acl_principal_totals as t
    select d.* from unnest(principal_deltas) as d
    where d.entities > 0
      and not exists (select 1 from public.acl_principal_totals x
                      where x.principal = d.principal and x.source_id = d.source_id)
    on conflict on constraint acl_principal_totals_pkey do update set entities = t.entities + excluded.entities;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_entities__totals() IS 'AFTER statement triggers on entities: add the statement''s live rows to source_entity_totals and acl_principal_totals, and take out the ones it removed, soft-deleted or re-permissioned.';

CREATE FUNCTION public.tg_entities__totals_truncate() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    delete from public.source_entity_totals;
    delete from public.acl_principal_totals;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_entities__totals_truncate() IS 'AFTER TRUNCATE trigger on entities: no entities, no totals.';

CREATE FUNCTION public.tg_entity_chunks__inherit_acl() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    select e.source_id, e.acl_principals, e.status, e.deleted_at is not null
      into new.source_id, new.acl_principals, new.entity_status, new.entity_deleted
      from public.entities e
     where e.id = new.entity_id;
    return new;
end;
$$;

COMMENT ON FUNCTION public.tg_entity_chunks__inherit_acl() IS 'Copies source, ACL, status and deletion of the parent entity onto a new or moved chunk.';

CREATE FUNCTION public.tg_entity_chunks__lexemes_insert() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    with stored as (
        insert into public.entity_chunk_lexemes (chunk_id, lexemes)
        select n.id, to_tsvector('russian'::regconfig, n.body) from new_chunks n
        returning chunk_id, lexemes
    )
    insert into public.entity_chunk_repeats (chunk_id, lexemes)
    select s.chunk_id, public.harvester_repeated_lexemes(s.lexemes) from stored s;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_entity_chunks__lexemes_insert() IS 'AFTER INSERT statement trigger on entity_chunks: stores the lexemes of the new chunks and the lexemes each repeats.';

CREATE FUNCTION public.tg_entity_chunks__lexemes_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    with stored as (
        update public.entity_chunk_lexemes
           set lexemes = to_tsvector('russian'::regconfig, new.body)
         where chunk_id = new.id
        returning chunk_id, lexemes
    )
    update public.entity_chunk_repeats r
       set lexemes = public.harvester_repeated_lexemes(s.lexemes)
      from stored s
     where r.chunk_id = s.chunk_id;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_entity_chunks__lexemes_update() IS 'AFTER UPDATE OF body row trigger on entity_chunks: stores the lexemes of a changed chunk text and the lexemes it repeats.';

CREATE FUNCTION public.tg_platform_settings__bump_version() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    if tg_op = 'UPDATE' and old.value is not distinct from new.value then
        return null;
    end if;
    update public.platform_settings_version set version = version + 1 where singleton;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_platform_settings__bump_version() IS 'Raises platform_settings_version.version once per changed setting row.';

CREATE FUNCTION public.tg_sync_runs__totals() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $_$
declare
    counted_in boolean := false;
    counted_out boolean := false;
    side record;
    part public.sync_run_totals[];
    deltas public.sync_run_totals[] := '{}';
begin
    if tg_op in ('INSERT', 'UPDATE') then
        counted_in := exists (select 1 from new_runs where state in ('succeeded', 'failed', 'cancelled'));
    end if;
    if tg_op in ('UPDATE', 'DELETE') then
        counted_out := exists (select 1 from old_runs where state in ('succeeded', 'failed', 'cancelled'));
    end if;
    for side in select v.rows, v.sign from (values ('new_runs', 1, counted_in), ('old_runs', -1, counted_out))
                                           as v(rows, sign, wanted)
                where v.wanted loop
        execute format($q$
            select coalesce(array_agg(d::public.sync_run_totals), '{}') from (
                select r.source_id, r.mode, r.state, public.harvester_run_duration_bucket(s.seconds::float8),
                       %1$s * count(*), %1$s * count(*) filter (where r.trigger = 'webhook'),
                       %1$s * sum(coalesce(r.entities_done, 0)), %1$s * sum(r.api_calls),
                       %1$s * sum(r.rate_limited), %1$s * sum(s.seconds)
                from %2$I as r
                cross join lateral (select greatest(extract(epoch from r.finished_at
                                                    - coalesce(r.started_at, r.created_at)), 0) as seconds) as s
                where r.state in ('succeeded', 'failed', 'cancelled')
                group by 1, 2, 3, 4) as d
            $q$, side.sign, side.rows) into part;
        deltas := deltas || part;
    end loop;
    -- The merge takes each side's rows apart: a key both sides hold (a finished run edited in place) gets
    -- the new row's share added and the old row's taken out.
    if cardinality(deltas) > 0 then
        perform public.harvester_run_totals_merge(deltas);
    end if;
    return null;
end;
$_$;

COMMENT ON FUNCTION public.tg_sync_runs__totals() IS 'AFTER statement triggers on sync_runs: add the statement''s finished runs to sync_run_totals and take out the ones it removed or changed.';

CREATE FUNCTION public.tg_sync_runs__totals_truncate() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    delete from public.sync_run_totals;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_sync_runs__totals_truncate() IS 'AFTER TRUNCATE trigger on sync_runs: no runs, no totals.';

CREATE FUNCTION public.tg_webhook_deliveries__totals() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    if tg_op = 'INSERT' then
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select r.source_id, pg_catalog.pg_backend_pid() % 16, count(*) from new_rows r group by r.source_id
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    elsif tg_op = 'DELETE' then
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select r.source_id, pg_catalog.pg_backend_pid() % 16, -count(*) from old_rows r group by r.source_id
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    else
        -- Grouped, not joined: a delivery whose source stayed cancels out.
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select x.source_id, pg_catalog.pg_backend_pid() % 16, sum(x.sign)::bigint
        from (select r.source_id, 1 as sign from new_rows r
              union all
              select r.source_id, -1 from old_rows r) as x
        group by x.source_id
        having sum(x.sign) <> 0
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    end if;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_webhook_deliveries__totals() IS 'AFTER statement triggers on webhook_deliveries: add the statement''s new deliveries to this session''s slot of webhook_delivery_totals and take out the ones it removed or moved.';

CREATE FUNCTION public.tg_webhook_deliveries__totals_truncate() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
    delete from public.webhook_delivery_totals;
    return null;
end;
$$;

COMMENT ON FUNCTION public.tg_webhook_deliveries__totals_truncate() IS 'AFTER TRUNCATE trigger on webhook_deliveries: no deliveries, no totals.';

CREATE TABLE public.acl_principal_totals (
    principal text NOT NULL COLLATE pg_catalog."C",
    source_id bigint NOT NULL,
    entities bigint NOT NULL,
    CONSTRAINT acl_principal_totals_entities_positive CHECK ((entities > 0))
);

COMMENT ON TABLE public.acl_principal_totals IS 'Per ACL principal and source, the live entities whose acl_principals name it (GET /principals), kept exact by statement triggers on entities (sql/triggers/700_entity_totals.sql); a principal no live entity names has no row.';

CREATE TABLE public.alert_incidents (
    id bigint NOT NULL,
    kind text NOT NULL,
    subject text NOT NULL,
    detail text,
    opened_at timestamp with time zone DEFAULT now() NOT NULL,
    resolved_at timestamp with time zone,
    last_sent_at timestamp with time zone,
    send_failures integer DEFAULT 0 NOT NULL,
    CONSTRAINT alert_incidents_kind_check CHECK ((kind = ANY (ARRAY['run_failed'::text, 'source_health_error'::text, 'mass_delete_held'::text, 'dead_letters_over_threshold'::text, 'worker_gone'::text]))),
    CONSTRAINT alert_incidents_resolved_after_opened CHECK (((resolved_at IS NULL) OR (resolved_at >= opened_at))),
    CONSTRAINT alert_incidents_send_failures_not_negative CHECK ((send_failures >= 0))
);

COMMENT ON TABLE public.alert_incidents IS 'Alert de-duplication (issue 10 §4): one row per incident; opening and resolving each send one notification.';

COMMENT ON COLUMN public.alert_incidents.kind IS 'What went wrong: run_failed, source_health_error, mass_delete_held, dead_letters_over_threshold, worker_gone.';

COMMENT ON COLUMN public.alert_incidents.subject IS 'What it happened to: source:<id> or worker:<id>.';

COMMENT ON COLUMN public.alert_incidents.detail IS 'One line for the notification (a run''s error_detail, the DLQ depth); never a secret.';

COMMENT ON COLUMN public.alert_incidents.resolved_at IS 'When the condition cleared (a recovery notification is sent); NULL while open.';

COMMENT ON COLUMN public.alert_incidents.last_sent_at IS 'When a notification of this incident last reached every channel.';

COMMENT ON COLUMN public.alert_incidents.send_failures IS 'Failed delivery attempts (metric harvester_alert_delivery_failures_total).';

ALTER TABLE public.alert_incidents ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.alert_incidents_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.api_tokens (
    id bigint NOT NULL,
    name text NOT NULL,
    scope text NOT NULL,
    token_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    expires_at timestamp with time zone,
    principals text[],
    CONSTRAINT api_tokens_name_present CHECK ((btrim(name) <> ''::text)),
    CONSTRAINT api_tokens_scope_check CHECK ((scope = ANY (ARRAY['admin'::text, 'read'::text, 'search'::text]))),
    CONSTRAINT api_tokens_search_principals CHECK (
CASE
    WHEN (scope = 'search'::text) THEN (COALESCE(cardinality(principals), 0) > 0)
    ELSE (principals IS NULL)
END)
);

COMMENT ON TABLE public.api_tokens IS 'Admin API bearer tokens; only a SHA-256 of the token is stored, the token is printed once.';

COMMENT ON COLUMN public.api_tokens.last_used_at IS 'Last time the token authenticated a request, kept to the minute.';

COMMENT ON COLUMN public.api_tokens.expires_at IS 'When the token stops authenticating; NULL: never expires (revoke it to end it).';

COMMENT ON COLUMN public.api_tokens.principals IS 'ACL tokens (user:<id>, group:<connector>:<id>) a search-scope token may search as; NULL for other scopes.';

COMMENT ON CONSTRAINT api_tokens_name_present ON public.api_tokens IS 'Every token has a name: audit events name the actor by it.';

COMMENT ON CONSTRAINT api_tokens_scope_check ON public.api_tokens IS 'admin: everything; read: GET only, no search; search: POST /search only, as its bound principals.';

COMMENT ON CONSTRAINT api_tokens_search_principals ON public.api_tokens IS 'A search token is bound to at least one principal; admin and read tokens to none (they are not limited to one).';

ALTER TABLE public.api_tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.api_tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.dead_letter_totals (
    source_id bigint NOT NULL,
    reason text NOT NULL,
    items bigint NOT NULL,
    CONSTRAINT dead_letter_totals_items_positive CHECK ((items > 0))
);

COMMENT ON TABLE public.dead_letter_totals IS 'Dead letters per source and reason (GET /sources, the queue summary, metrics, alerts), kept exact by statement triggers on dead_letters (sql/triggers/800_dead_letter_totals.sql); a reason without items has no row.';

CREATE TABLE public.dead_letters (
    id bigint NOT NULL,
    source_id bigint NOT NULL,
    run_id bigint,
    source_type text NOT NULL,
    source_entity_id text NOT NULL,
    reason text NOT NULL,
    error_detail text,
    attempts integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT dead_letters_attempts_positive CHECK ((attempts >= 1)),
    CONSTRAINT dead_letters_reason_check CHECK ((reason = ANY (ARRAY['permission'::text, 'not_found'::text, 'malformed'::text, 'rate_limited'::text, 'unknown'::text])))
);

COMMENT ON TABLE public.dead_letters IS 'Working queue of unresolved failed items (seed 000 §3): a row leaves when the item loads or is gone at the source.';

COMMENT ON COLUMN public.dead_letters.run_id IS 'Run of the latest failure; SET NULL so the queue outlives journal clean-up.';

COMMENT ON COLUMN public.dead_letters.attempts IS 'How many times the item failed; +1 on every repeat via upsert.';

ALTER TABLE public.dead_letters ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.dead_letters_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.entities (
    id bigint NOT NULL,
    source_id bigint NOT NULL,
    source_type text NOT NULL,
    source_entity_id text NOT NULL,
    natural_key text,
    container text,
    status text NOT NULL,
    deleted_at timestamp with time zone,
    title text DEFAULT ''::text NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    url text,
    author text,
    source_created_at timestamp with time zone,
    source_updated_at timestamp with time zone,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    acl_principals text[],
    aliases text[] DEFAULT '{}'::text[] NOT NULL,
    out_of_scope boolean DEFAULT false NOT NULL,
    content_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    last_fetched_at timestamp with time zone,
    last_run_id bigint,
    deleted_by_run_id bigint,
    deleted_reason text,
    CONSTRAINT entities_deleted_reason_known CHECK ((deleted_reason = ANY (ARRAY['gone_at_source'::text, 'collapsed_duplicate'::text]))),
    CONSTRAINT entities_metadata_is_object CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT entities_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'final'::text, 'archived'::text])))
);

COMMENT ON TABLE public.entities IS 'Relational projection: one row per source record (seed 000). Written only by the sync pipeline (role harvester_worker).';

COMMENT ON COLUMN public.entities.status IS 'Content lifecycle set by classify: draft | final | archived. Deletion is the separate deleted_at axis.';

COMMENT ON COLUMN public.entities.deleted_at IS 'Soft-delete marker set by reconciliation when the record vanished; clearing it restores the old status (seed 000 "Удаления").';

COMMENT ON COLUMN public.entities.body IS 'Clean text for display and embedding.';

COMMENT ON COLUMN public.entities.acl_principals IS 'Rights captured with the record: principals like user:<email>, group:<connector>:<id>. NULL = unknown: visible to nobody.';

COMMENT ON COLUMN public.entities.aliases IS 'Other source ids of the same record (e.g. moved Jira issue); reconciliation collapses duplicates found through them.';

COMMENT ON COLUMN public.entities.out_of_scope IS 'Neighbour fetched one hop outside the scope by a link (seed 003 "Соседняя задача").';

COMMENT ON COLUMN public.entities.content_hash IS 'SHA-256 of the normalised entity; an equal hash means the upsert writes nothing.';

COMMENT ON COLUMN public.entities.last_fetched_at IS 'When a run last took this record from the source (changed or not). NULL: not fetched since provenance was recorded.';

COMMENT ON COLUMN public.entities.last_run_id IS 'The run (sync_runs.id) that last fetched this record; not a foreign key so it outlives journal pruning.';

COMMENT ON COLUMN public.entities.deleted_by_run_id IS 'The run that soft-deleted this record (NULL while live, or for deletions made before provenance was recorded).';

COMMENT ON COLUMN public.entities.deleted_reason IS 'Why it was soft-deleted: gone_at_source (reconciliation did not see it, or the source said it is gone) | collapsed_duplicate (folded into the entity that lists it as an alias). NULL while live.';

ALTER TABLE public.entities ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.entities_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.entity_chunk_lexemes (
    chunk_id bigint NOT NULL,
    lexemes tsvector NOT NULL
);

COMMENT ON TABLE public.entity_chunk_lexemes IS 'The lexemes of each chunk text for full-text search, kept by the triggers of sql/triggers/310_chunk_lexemes.sql (decision 113).';

COMMENT ON COLUMN public.entity_chunk_lexemes.lexemes IS 'to_tsvector(''russian'', entity_chunks.body): Russian stems for Cyrillic, English for Latin words, positions kept for ts_rank_cd.';

CREATE TABLE public.entity_chunk_repeats (
    chunk_id bigint NOT NULL,
    lexemes tsvector NOT NULL
);

COMMENT ON TABLE public.entity_chunk_repeats IS 'The lexemes each chunk text holds more than once, kept by the triggers of sql/triggers/310_chunk_lexemes.sql (decision 115).';

COMMENT ON COLUMN public.entity_chunk_repeats.lexemes IS 'Each lexeme of entity_chunk_lexemes.lexemes with two or more positions, once, marked by its count: as itself 2, with " 3" 3-7, " 8" 8-20, " 21" 21-54, " 55" 55+; no positions; empty when none repeats.';

CREATE TABLE public.entity_chunks (
    id bigint NOT NULL,
    entity_id bigint NOT NULL,
    ordinal integer NOT NULL,
    body text NOT NULL,
    content_hash text NOT NULL,
    embedding public.vector(384),
    embedding_model text,
    source_id bigint NOT NULL,
    acl_principals text[],
    entity_status text NOT NULL,
    entity_deleted boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT entity_chunks_ordinal_not_negative CHECK ((ordinal >= 0))
);

COMMENT ON TABLE public.entity_chunks IS 'Vector projection (seed 000): per-chunk embeddings, child rows of the entity, with a content hash.';

COMMENT ON COLUMN public.entity_chunks.content_hash IS 'SHA-256 of the embedded text; unchanged hash = no re-embedding, no write.';

COMMENT ON COLUMN public.entity_chunks.embedding_model IS 'Model that produced the vector; a different configured model triggers a background re-embed.';

COMMENT ON COLUMN public.entity_chunks.acl_principals IS 'Inherited from the entity (trigger); the chunk is never visible to more than its entity.';

ALTER TABLE public.entity_chunks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.entity_chunks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.entity_edges (
    from_entity_id bigint NOT NULL,
    source_id bigint NOT NULL,
    relation text NOT NULL,
    direction text DEFAULT 'outward'::text NOT NULL,
    target_type text NOT NULL,
    target_source_entity_id text NOT NULL,
    target_key text,
    CONSTRAINT entity_edges_direction_check CHECK ((direction = ANY (ARRAY['outward'::text, 'inward'::text])))
);

COMMENT ON TABLE public.entity_edges IS 'Graph projection: links inside one source, owned by the declaring entity; loading X replaces only X''s edges (seed 003).';

COMMENT ON COLUMN public.entity_edges.direction IS 'outward: from_entity is the source side as the source defines it (Jira outwardIssue).';

COMMENT ON COLUMN public.entity_edges.target_source_entity_id IS 'Natural key of the target inside the same source; the target may not be loaded yet.';

CREATE TABLE public.entity_notes (
    source_id bigint NOT NULL,
    source_type text NOT NULL,
    source_entity_id text NOT NULL,
    fact_status text,
    work_kind text,
    done_text text,
    rest_text text,
    owner_note text,
    updated_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.entity_notes IS 'Admin notes keyed by entity identity (seed 003 "Служебные заметки"); sync never writes them, except the field-by-field merge when reconciliation collapses a duplicate.';

CREATE TABLE public.entity_refs (
    entity_id bigint NOT NULL,
    relation text NOT NULL,
    target_kind text NOT NULL,
    target_ref text NOT NULL,
    source_hint text
);

COMMENT ON TABLE public.entity_refs IS 'Mentions of other sources kept as claims, not edges (seed 000 "Формат refs"): Knowledge Store resolves them later.';

CREATE VIEW public.live_entities AS
 SELECT id,
    source_id,
    source_type,
    source_entity_id,
    natural_key,
    container,
    status,
    deleted_at,
    title,
    body,
    url,
    author,
    source_created_at,
    source_updated_at,
    metadata,
    acl_principals,
    aliases,
    out_of_scope,
    content_hash,
    created_at,
    updated_at
   FROM public.entities e
  WHERE (deleted_at IS NULL);

COMMENT ON VIEW public.live_entities IS 'Entities not soft-deleted: what output and search may show (seed 000 "Удаления").';

CREATE TABLE public.platform_settings (
    key text NOT NULL,
    value jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT platform_settings_key_known CHECK ((key = ANY (ARRAY['sync_interval'::text, 'reconcile_interval'::text, 'reconcile_window'::text, 'probe_interval'::text, 'watchdog_silence'::text, 'timezone'::text, 'mass_delete_share'::text, 'incremental_lookback'::text, 'max_deliveries'::text, 'stale_run_after'::text, 'webhook_dedupe_ttl'::text, 'search_include_drafts'::text, 'alert_channels'::text, 'alert_dlq_threshold'::text, 'lane_wait_max'::text, 'completeness_tolerance'::text, 'rate_limit_patience'::text, 'takeover_grace'::text, 'fetch_fanout'::text, 'directory_ttl'::text, 'lock_wait_max'::text, 'response_max_mib'::text, 'response_max_seconds'::text]))),
    CONSTRAINT platform_settings_value_valid CHECK (
CASE key
    WHEN 'timezone'::text THEN ((jsonb_typeof(value) = 'string'::text) AND ((length((value #>> '{}'::text[])) >= 1) AND (length((value #>> '{}'::text[])) <= 64)))
    WHEN 'mass_delete_share'::text THEN ((jsonb_typeof(value) = 'number'::text) AND (((value #>> '{}'::text[]))::numeric > (0)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (1)::numeric))
    WHEN 'completeness_tolerance'::text THEN ((jsonb_typeof(value) = 'number'::text) AND (((value #>> '{}'::text[]))::numeric >= (0)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (1)::numeric))
    WHEN 'reconcile_window'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (0)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (10079)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    WHEN 'search_include_drafts'::text THEN (jsonb_typeof(value) = 'boolean'::text)
    WHEN 'alert_channels'::text THEN public.harvester_alert_channels_valid(value)
    WHEN 'fetch_fanout'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (1)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (16)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    WHEN 'directory_ttl'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (0)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (3600)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    WHEN 'lock_wait_max'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (1)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (3600)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    WHEN 'response_max_mib'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (1)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (4096)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    WHEN 'response_max_seconds'::text THEN ((jsonb_typeof(value) = 'number'::text) AND ((((value #>> '{}'::text[]))::numeric >= (1)::numeric) AND (((value #>> '{}'::text[]))::numeric <= (3600)::numeric)) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
    ELSE ((jsonb_typeof(value) = 'number'::text) AND (((value #>> '{}'::text[]))::numeric > (0)::numeric) AND (((value #>> '{}'::text[]))::numeric = trunc(((value #>> '{}'::text[]))::numeric)))
END)
);

COMMENT ON TABLE public.platform_settings IS 'Platform defaults as key -> JSON (seed 001 "Расписание", seed 003 "Настройки"); no secret is ever stored here.';

CREATE TABLE public.platform_settings_version (
    singleton boolean DEFAULT true NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    CONSTRAINT platform_settings_version_singleton CHECK (singleton)
);

COMMENT ON TABLE public.platform_settings_version IS 'One row: the settings version, raised by a trigger on every changed value.';

CREATE TABLE public.procrastinate_events (
    id bigint NOT NULL,
    job_id bigint NOT NULL,
    type public.procrastinate_job_event_type,
    at timestamp with time zone DEFAULT now()
);

CREATE SEQUENCE public.procrastinate_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.procrastinate_events_id_seq OWNED BY public.procrastinate_events.id;

CREATE SEQUENCE public.procrastinate_jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.procrastinate_jobs_id_seq OWNED BY public.procrastinate_jobs.id;

CREATE TABLE public.procrastinate_periodic_defers (
    id bigint NOT NULL,
    task_name character varying(128) NOT NULL,
    defer_timestamp bigint,
    job_id bigint,
    periodic_id character varying(128) DEFAULT ''::character varying NOT NULL
);

CREATE SEQUENCE public.procrastinate_periodic_defers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.procrastinate_periodic_defers_id_seq OWNED BY public.procrastinate_periodic_defers.id;

CREATE TABLE public.procrastinate_workers (
    id bigint NOT NULL,
    last_heartbeat timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE public.procrastinate_workers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.procrastinate_workers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.rate_budgets (
    credential_key text NOT NULL,
    capacity double precision DEFAULT 0 NOT NULL,
    refill_per_second double precision DEFAULT 0 NOT NULL,
    tokens double precision DEFAULT 0 NOT NULL,
    paused_until timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT rate_budgets_key_is_sha256 CHECK ((credential_key ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT rate_budgets_nonnegative CHECK (((capacity >= (0)::double precision) AND (refill_per_second >= (0)::double precision) AND (tokens >= (0)::double precision)))
);

COMMENT ON TABLE public.rate_budgets IS 'Per-credential rate budget shared by every run (issue 12): token bucket + pause, fed by the source''s rate-limit headers.';

COMMENT ON COLUMN public.rate_budgets.credential_key IS 'sha256 hex of connector type, base URL and credential; never the credential.';

COMMENT ON COLUMN public.rate_budgets.capacity IS 'Bucket size (X-RateLimit-Limit); 0 = the source has not said: no bucket, pauses only.';

COMMENT ON COLUMN public.rate_budgets.refill_per_second IS 'Tokens added per second (X-RateLimit-FillRate / interval, or limit / window); 0 = unknown.';

COMMENT ON COLUMN public.rate_budgets.tokens IS 'Tokens left at updated_at.';

COMMENT ON COLUMN public.rate_budgets.paused_until IS 'No request with this credential before this time (Retry-After of a 429/503, X-RateLimit-Reset at Remaining 0).';

CREATE TABLE public.run_completeness (
    run_id bigint NOT NULL,
    container text NOT NULL,
    source_count integer,
    live_count integer NOT NULL,
    CONSTRAINT run_completeness_counts_nonnegative CHECK (((COALESCE(source_count, 0) >= 0) AND (live_count >= 0)))
);

COMMENT ON TABLE public.run_completeness IS 'Completeness audit of a reconciliation (issue 12): per scope unit, the count the source reports vs the live entities held after the run.';

COMMENT ON COLUMN public.run_completeness.container IS 'Scope unit: Jira project key, Confluence space key, Slack channel id.';

COMMENT ON COLUMN public.run_completeness.source_count IS 'Items the source reports in that unit (Jira search total, Confluence CQL totalSize, Slack messages enumerated); NULL when the source would not say.';

COMMENT ON COLUMN public.run_completeness.live_count IS 'Live (not soft-deleted) entities of the source in that unit right after the run resolved.';

CREATE TABLE public.run_seen_items (
    run_id bigint NOT NULL,
    source_type text NOT NULL,
    source_entity_id text NOT NULL
);

COMMENT ON TABLE public.run_seen_items IS 'Identities enumerated by a full or reconciliation run, so that "not seen" can be computed without touching unchanged entities. Emptied when the run ends.';

CREATE TABLE public.schema_migrations (
    version text NOT NULL,
    checksum text,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.schema_migrations IS 'Applied migrations (dbmate-compatible) with the checksum of each file''s up section.';

CREATE TABLE public.schema_trigger_files (
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schema_trigger_files_checksum_check CHECK ((checksum ~ '^[0-9a-f]{64}$'::text))
);

COMMENT ON TABLE public.schema_trigger_files IS 'Re-appliable files of sql/triggers as last applied by harvester db migrate (one row per file name).';

COMMENT ON COLUMN public.schema_trigger_files.name IS 'File name inside sql/triggers, e.g. 100_timestamps.sql.';

COMMENT ON COLUMN public.schema_trigger_files.checksum IS 'sha256 (hex) of the file text that was applied.';

COMMENT ON COLUMN public.schema_trigger_files.applied_at IS 'When migrate last applied this text.';

CREATE TABLE public.source_entity_totals (
    source_id bigint NOT NULL,
    live bigint NOT NULL,
    CONSTRAINT source_entity_totals_live_not_negative CHECK ((live >= 0))
);

COMMENT ON TABLE public.source_entity_totals IS 'Live (not soft-deleted) entities per source (GET /sources), kept exact by statement triggers on entities (sql/triggers/700_entity_totals.sql).';

CREATE TABLE public.sources (
    id bigint NOT NULL,
    name text NOT NULL,
    connector_type text NOT NULL,
    base_url text,
    auth_account text DEFAULT 'service'::text NOT NULL,
    auth_method text DEFAULT 'static_token'::text NOT NULL,
    credential_enc text,
    state text DEFAULT 'active'::text NOT NULL,
    scope_mode text DEFAULT 'all'::text NOT NULL,
    scope_list jsonb DEFAULT '[]'::jsonb NOT NULL,
    content_filters jsonb DEFAULT '{}'::jsonb NOT NULL,
    sync_interval integer,
    reconcile_interval integer,
    reconcile_window integer,
    authority_tier text,
    webhook_enabled boolean DEFAULT false NOT NULL,
    webhook_secret_enc text,
    incremental_cursor jsonb,
    last_probe_at timestamp with time zone,
    last_probe_status text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sources_auth_account_check CHECK ((auth_account = ANY (ARRAY['service'::text, 'personal'::text]))),
    CONSTRAINT sources_auth_method_check CHECK ((auth_method = ANY (ARRAY['static_token'::text, 'oauth'::text]))),
    CONSTRAINT sources_authority_tier_check CHECK ((authority_tier = ANY (ARRAY['low'::text, 'normal'::text, 'high'::text]))),
    CONSTRAINT sources_content_filters_is_object CHECK ((jsonb_typeof(content_filters) = 'object'::text)),
    CONSTRAINT sources_disconnected_has_no_credential CHECK (((state <> 'disconnected'::text) OR (credential_enc IS NULL))),
    CONSTRAINT sources_last_probe_status_check CHECK ((last_probe_status = ANY (ARRAY['ok'::text, 'unreachable'::text, 'auth_failed'::text]))),
    CONSTRAINT sources_reconcile_interval_positive CHECK ((reconcile_interval > 0)),
    CONSTRAINT sources_reconcile_window_range CHECK (((reconcile_window >= 0) AND (reconcile_window <= 10079))),
    CONSTRAINT sources_scope_list_is_array CHECK ((jsonb_typeof(scope_list) = 'array'::text)),
    CONSTRAINT sources_scope_mode_check CHECK ((scope_mode = ANY (ARRAY['all'::text, 'selected'::text]))),
    CONSTRAINT sources_state_check CHECK ((state = ANY (ARRAY['active'::text, 'paused'::text, 'disconnected'::text]))),
    CONSTRAINT sources_sync_interval_positive CHECK ((sync_interval > 0))
);

COMMENT ON TABLE public.sources IS 'Connected sources (seed 000 §1). state is the admin''s intent; health is derived (view source_health), never stored.';

COMMENT ON COLUMN public.sources.connector_type IS 'Connector key; open set without CHECK, resolved against the connector manifest.';

COMMENT ON COLUMN public.sources.credential_enc IS 'AES-256-GCM ciphertext "v1:<key id>:<b64 nonce|ct>"; NULL when disconnected. Never returned by the API.';

COMMENT ON COLUMN public.sources.scope_list IS 'Container ids: deny-list when scope_mode = all, allow-list when selected (kinds declared by the manifest).';

COMMENT ON COLUMN public.sources.content_filters IS 'Toggles "beyond the rules"; the key set is declared by the connector manifest.';

COMMENT ON COLUMN public.sources.sync_interval IS 'Seconds between incremental runs; NULL inherits platform_settings.sync_interval (seed 001 "Расписание").';

COMMENT ON COLUMN public.sources.reconcile_interval IS 'Seconds between reconciliations; NULL inherits platform_settings.reconcile_interval.';

COMMENT ON COLUMN public.sources.reconcile_window IS 'Minute of week (0 = Monday 00:00, org time zone) when reconciliation starts; NULL inherits.';

COMMENT ON COLUMN public.sources.authority_tier IS 'Trust tier for Knowledge Store decay; NULL = the manifest''s default_authority.';

COMMENT ON COLUMN public.sources.webhook_secret_enc IS 'AES-256-GCM ciphertext of the webhook HMAC secret; same envelope as credential_enc.';

COMMENT ON COLUMN public.sources.incremental_cursor IS 'Position "since" of the last succeeded run: {"updated": <UTC ISO>, "ids": [...]}; NULL before the first.';

COMMENT ON COLUMN public.sources.last_probe_status IS 'Result of the scheduled connection probe: the one health facet a run cannot give (seed 000).';

CREATE TABLE public.sync_runs (
    id bigint NOT NULL,
    source_id bigint NOT NULL,
    mode text NOT NULL,
    trigger text NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    scope jsonb,
    entities_done integer,
    entities_total integer,
    checkpoint jsonb,
    error_count integer DEFAULT 0 NOT NULL,
    error_detail text,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    heartbeat_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    api_calls integer DEFAULT 0 NOT NULL,
    rate_limited integer DEFAULT 0 NOT NULL,
    deliveries integer DEFAULT 0 NOT NULL,
    claimed_at timestamp with time zone,
    worker_id text,
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT sync_runs_counters_not_negative CHECK (((error_count >= 0) AND (api_calls >= 0) AND (rate_limited >= 0) AND (deliveries >= 0) AND (COALESCE(entities_done, 0) >= 0) AND (COALESCE(entities_total, 0) >= 0))),
    CONSTRAINT sync_runs_finished_iff_terminal CHECK (((state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT sync_runs_mode_check CHECK ((mode = ANY (ARRAY['full'::text, 'incremental'::text, 'reconciliation'::text]))),
    CONSTRAINT sync_runs_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text]))),
    CONSTRAINT sync_runs_trigger_check CHECK ((trigger = ANY (ARRAY['connect'::text, 'schedule'::text, 'webhook'::text, 'watchdog'::text, 'manual'::text])))
);

COMMENT ON TABLE public.sync_runs IS 'Run journal (seed 000 §2). The history "type" is derived from mode + trigger + scope (view sync_run_history).';

COMMENT ON COLUMN public.sync_runs.scope IS 'NULL = whole source; {"kind":"window","since":...}; {"kind":"items","items":[{"source_type":..,"source_entity_id":..}]} (DLQ retry); {"kind":"containers","containers":[...]}.';

COMMENT ON COLUMN public.sync_runs.entities_done IS 'N of "N of M": items processed; set from the checkpoint, so redelivery never doubles it.';

COMMENT ON COLUMN public.sync_runs.entities_total IS 'M of "N of M": the connector''s estimate.';

COMMENT ON COLUMN public.sync_runs.checkpoint IS 'Connector position after the last committed page; a resumed run continues from here.';

COMMENT ON COLUMN public.sync_runs.error_count IS 'Items sent to the DLQ by this run: an immutable snapshot, unlike the live DLQ depth.';

COMMENT ON COLUMN public.sync_runs.api_calls IS 'HTTP requests made to the source by this run (seed 003 jira_calls).';

COMMENT ON COLUMN public.sync_runs.rate_limited IS 'Responses 429/503 received by this run (seed 003 rate_limited).';

COMMENT ON COLUMN public.sync_runs.deliveries IS 'How many times a worker claimed this run, and the generation of the current lease: every write of the holder checks it still holds this generation (issue 11); after max_deliveries the run fails (seed 003).';

COMMENT ON COLUMN public.sync_runs.options IS 'Run flags, e.g. {"confirm_mass_delete": true} to let a reconciliation pass the mass-deletion guard.';

CREATE VIEW public.source_health AS
 SELECT s.id AS source_id,
    s.state,
    lr.id AS last_run_id,
    lr.state AS last_run_state,
    lr.finished_at AS last_run_finished_at,
    lr.error_count AS last_run_error_count,
    s.last_probe_at,
    s.last_probe_status,
        CASE
            WHEN (lr.state = ANY (ARRAY['queued'::text, 'running'::text])) THEN 'syncing'::text
            WHEN (lr.state = 'failed'::text) THEN 'error'::text
            WHEN ((s.last_probe_status = ANY (ARRAY['unreachable'::text, 'auth_failed'::text])) AND ((lr.finished_at IS NULL) OR (s.last_probe_at >= lr.finished_at))) THEN 'error'::text
            ELSE 'idle'::text
        END AS health
   FROM (public.sources s
     LEFT JOIN LATERAL ( SELECT r.id,
            r.state,
            r.finished_at,
            r.error_count
           FROM public.sync_runs r
          WHERE (r.source_id = s.id)
          ORDER BY r.created_at DESC, r.id DESC
         LIMIT 1) lr ON (true));

COMMENT ON VIEW public.source_health IS 'Per source: idle | syncing | error, from the latest run and the latest probe (a newer failed probe overrides a good run).';

ALTER TABLE public.sources ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.sources_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW public.sync_run_history AS
 SELECT id,
    source_id,
    mode,
    trigger,
    state,
    scope,
    entities_done,
    entities_total,
    checkpoint,
    error_count,
    error_detail,
    started_at,
    finished_at,
    heartbeat_at,
    created_at,
    api_calls,
    rate_limited,
    deliveries,
    claimed_at,
    worker_id,
    options,
        CASE
            WHEN (mode = 'full'::text) THEN 'full'::text
            WHEN (mode = 'reconciliation'::text) THEN 'reconciliation'::text
            WHEN (trigger = 'watchdog'::text) THEN 'partial_resync'::text
            WHEN ((trigger = 'manual'::text) AND ((scope ->> 'kind'::text) = 'items'::text)) THEN 'dlq_retry'::text
            ELSE 'incremental'::text
        END AS run_type,
    (finished_at - started_at) AS duration
   FROM public.sync_runs r;

COMMENT ON VIEW public.sync_run_history IS 'sync_runs with run_type (full, incremental, partial_resync, dlq_retry, reconciliation) and duration.';

ALTER TABLE public.sync_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.sync_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE UNLOGGED TABLE public.webhook_deliveries (
    source_id bigint NOT NULL,
    delivery_id text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE public.webhook_deliveries IS 'Seen webhook deliveries, keyed on a hash of the signed body, so a replay is processed once whatever unsigned headers it carries. Unlogged on purpose: the dedupe window is ephemeral (seed 000 "Реал-тайм").';

COMMENT ON COLUMN public.webhook_deliveries.delivery_id IS 'De-duplication key: "sha256:<hex>" of the verified request body (signed content only, never a sender header).';

CREATE UNLOGGED TABLE public.webhook_delivery_totals (
    source_id bigint NOT NULL,
    slot integer NOT NULL,
    deliveries bigint NOT NULL,
    CONSTRAINT webhook_delivery_totals_slot_range CHECK (((slot >= 0) AND (slot <= 15)))
);

COMMENT ON TABLE public.webhook_delivery_totals IS 'Remembered webhook deliveries per source, split into slots by backend (metrics), kept exact by statement triggers on webhook_deliveries (sql/triggers/850_webhook_delivery_totals.sql); a source''s figure is the sum of its slots.';

CREATE TABLE public.webhook_pending (
    source_id bigint NOT NULL,
    source_type text NOT NULL,
    source_entity_id text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhook_pending_source_entity_id_nonempty CHECK ((source_entity_id <> ''::text)),
    CONSTRAINT webhook_pending_source_type_nonempty CHECK ((source_type <> ''::text))
);

COMMENT ON TABLE public.webhook_pending IS 'Items announced by accepted webhook deliveries and not yet in a run: one row per item, however many deliveries named it. apply_webhook takes them into one items-scoped run (decision 145).';

COMMENT ON COLUMN public.webhook_pending.received_at IS 'When the first delivery still pending named the item: the oldest are taken first when a run takes a bounded share.';

ALTER TABLE ONLY public.procrastinate_events ALTER COLUMN id SET DEFAULT nextval('public.procrastinate_events_id_seq'::regclass);

ALTER TABLE ONLY public.procrastinate_jobs ALTER COLUMN id SET DEFAULT nextval('public.procrastinate_jobs_id_seq'::regclass);

ALTER TABLE ONLY public.procrastinate_periodic_defers ALTER COLUMN id SET DEFAULT nextval('public.procrastinate_periodic_defers_id_seq'::regclass);

ALTER TABLE ONLY public.acl_principal_totals
    ADD CONSTRAINT acl_principal_totals_pkey PRIMARY KEY (principal, source_id);

ALTER TABLE ONLY public.alert_incidents
    ADD CONSTRAINT alert_incidents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.dead_letter_totals
    ADD CONSTRAINT dead_letter_totals_pkey PRIMARY KEY (source_id, reason);

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_item_key UNIQUE (source_id, source_type, source_entity_id);

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_identity_key UNIQUE (source_id, source_type, source_entity_id);

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entity_chunk_lexemes
    ADD CONSTRAINT entity_chunk_lexemes_pkey PRIMARY KEY (chunk_id);

ALTER TABLE ONLY public.entity_chunk_repeats
    ADD CONSTRAINT entity_chunk_repeats_pkey PRIMARY KEY (chunk_id);

ALTER TABLE ONLY public.entity_chunks
    ADD CONSTRAINT entity_chunks_entity_ordinal_key UNIQUE (entity_id, ordinal);

ALTER TABLE ONLY public.entity_chunks
    ADD CONSTRAINT entity_chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entity_edges
    ADD CONSTRAINT entity_edges_pkey PRIMARY KEY (from_entity_id, relation, target_type, target_source_entity_id);

ALTER TABLE ONLY public.entity_notes
    ADD CONSTRAINT entity_notes_pkey PRIMARY KEY (source_id, source_type, source_entity_id);

ALTER TABLE ONLY public.entity_refs
    ADD CONSTRAINT entity_refs_pkey PRIMARY KEY (entity_id, relation, target_kind, target_ref);

ALTER TABLE ONLY public.platform_settings
    ADD CONSTRAINT platform_settings_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.platform_settings_version
    ADD CONSTRAINT platform_settings_version_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY public.procrastinate_events
    ADD CONSTRAINT procrastinate_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.procrastinate_jobs
    ADD CONSTRAINT procrastinate_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.procrastinate_periodic_defers
    ADD CONSTRAINT procrastinate_periodic_defers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.procrastinate_periodic_defers
    ADD CONSTRAINT procrastinate_periodic_defers_unique UNIQUE (task_name, periodic_id, defer_timestamp);

ALTER TABLE ONLY public.procrastinate_workers
    ADD CONSTRAINT procrastinate_workers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.rate_budgets
    ADD CONSTRAINT rate_budgets_pkey PRIMARY KEY (credential_key);

ALTER TABLE ONLY public.run_completeness
    ADD CONSTRAINT run_completeness_pkey PRIMARY KEY (run_id, container);

ALTER TABLE ONLY public.run_seen_items
    ADD CONSTRAINT run_seen_items_pkey PRIMARY KEY (run_id, source_type, source_entity_id);

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.schema_trigger_files
    ADD CONSTRAINT schema_trigger_files_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.source_entity_totals
    ADD CONSTRAINT source_entity_totals_pkey PRIMARY KEY (source_id);

ALTER TABLE ONLY public.sources
    ADD CONSTRAINT sources_name_key UNIQUE (name);

ALTER TABLE ONLY public.sources
    ADD CONSTRAINT sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sync_run_totals
    ADD CONSTRAINT sync_run_totals_pkey PRIMARY KEY (source_id, mode, state, bucket);

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (source_id, delivery_id);

ALTER TABLE ONLY public.webhook_delivery_totals
    ADD CONSTRAINT webhook_delivery_totals_pkey PRIMARY KEY (source_id, slot);

ALTER TABLE ONLY public.webhook_pending
    ADD CONSTRAINT webhook_pending_pkey PRIMARY KEY (source_id, source_type, source_entity_id);

CREATE INDEX acl_principal_totals_source_id_idx ON public.acl_principal_totals USING btree (source_id);

CREATE UNIQUE INDEX alert_incidents_one_open ON public.alert_incidents USING btree (kind, subject) WHERE (resolved_at IS NULL);

COMMENT ON INDEX public.alert_incidents_one_open IS 'Lock: at most one open incident per (kind, subject). ON CONFLICT targets repeat its WHERE.';

CREATE INDEX alert_incidents_opened_at_idx ON public.alert_incidents USING btree (opened_at DESC);

CREATE INDEX alert_incidents_send_failures_idx ON public.alert_incidents USING btree (send_failures) WHERE (send_failures > 0);

CREATE UNIQUE INDEX api_tokens_live_name_key ON public.api_tokens USING btree (name) WHERE (revoked_at IS NULL);

COMMENT ON INDEX public.api_tokens_live_name_key IS 'One live (unrevoked) token per name, so revoke by name names exactly one token; a revoked name may be reused.';

CREATE INDEX dead_letters_reason_source_idx ON public.dead_letters USING btree (reason, source_id, id);

CREATE INDEX dead_letters_run_id_idx ON public.dead_letters USING btree (run_id);

CREATE INDEX entities_acl_principals_idx ON public.entities USING gin (acl_principals);

CREATE INDEX entities_alias_holders_idx ON public.entities USING btree (source_id) WHERE ((aliases <> '{}'::text[]) AND (deleted_at IS NULL));

CREATE INDEX entities_aliases_idx ON public.entities USING gin (aliases) WHERE (aliases <> '{}'::text[]);

CREATE INDEX entities_metadata_idx ON public.entities USING gin (metadata jsonb_path_ops);

CREATE INDEX entities_natural_key_present_idx ON public.entities USING btree (source_id, natural_key) WHERE (natural_key IS NOT NULL);

CREATE INDEX entities_source_live_idx ON public.entities USING btree (source_id, source_type) WHERE (deleted_at IS NULL);

CREATE INDEX entity_chunk_lexemes_lexemes_idx ON public.entity_chunk_lexemes USING gin (lexemes);

CREATE INDEX entity_chunk_repeats_lexemes_idx ON public.entity_chunk_repeats USING gin (lexemes);

CREATE INDEX entity_chunks_acl_principals_idx ON public.entity_chunks USING gin (acl_principals);

CREATE INDEX entity_chunks_embedding_hnsw_idx ON public.entity_chunks USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='128');

COMMENT ON INDEX public.entity_chunks_embedding_hnsw_idx IS 'Cosine HNSW over chunk embeddings; m 16, ef_construction 128 since migration 24 (recall at 1 M chunks, decision 68).';

CREATE INDEX entity_chunks_model_idx ON public.entity_chunks USING btree (embedding_model);

CREATE INDEX entity_chunks_visibility_idx ON public.entity_chunks USING btree (id) INCLUDE (entity_id, source_id, acl_principals, entity_status, entity_deleted);

COMMENT ON INDEX public.entity_chunks_visibility_idx IS 'What search checks of each matching chunk (entity, source, ACL, status, deletion), read by id without the heap (decision 117).';

CREATE INDEX entity_edges_target_idx ON public.entity_edges USING btree (source_id, target_type, target_source_entity_id);

CREATE INDEX entity_refs_target_idx ON public.entity_refs USING btree (target_kind, target_ref);

CREATE INDEX idx_procrastinate_jobs_worker_not_null ON public.procrastinate_jobs USING btree (worker_id) WHERE ((worker_id IS NOT NULL) AND (status = 'doing'::public.procrastinate_job_status));

CREATE INDEX idx_procrastinate_workers_last_heartbeat ON public.procrastinate_workers USING btree (last_heartbeat);

CREATE INDEX procrastinate_events_job_id_fkey_v1 ON public.procrastinate_events USING btree (job_id);

CREATE INDEX procrastinate_jobs_id_lock_idx_v1 ON public.procrastinate_jobs USING btree (id, lock) WHERE (status = ANY (ARRAY['todo'::public.procrastinate_job_status, 'doing'::public.procrastinate_job_status]));

CREATE UNIQUE INDEX procrastinate_jobs_lock_idx_v1 ON public.procrastinate_jobs USING btree (lock) WHERE (status = 'doing'::public.procrastinate_job_status);

CREATE INDEX procrastinate_jobs_priority_idx_v1 ON public.procrastinate_jobs USING btree (priority DESC, id) WHERE (status = 'todo'::public.procrastinate_job_status);

CREATE INDEX procrastinate_jobs_queue_name_idx_v1 ON public.procrastinate_jobs USING btree (queue_name);

CREATE UNIQUE INDEX procrastinate_jobs_queueing_lock_idx_v1 ON public.procrastinate_jobs USING btree (queueing_lock) WHERE (status = 'todo'::public.procrastinate_job_status);

CREATE INDEX procrastinate_periodic_defers_job_id_fkey_v1 ON public.procrastinate_periodic_defers USING btree (job_id);

CREATE INDEX sync_runs_anchor_idx ON public.sync_runs USING btree (source_id, created_at) WHERE ((mode = ANY (ARRAY['full'::text, 'reconciliation'::text])) AND (state = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text])));

CREATE UNIQUE INDEX sync_runs_one_active_per_source ON public.sync_runs USING btree (source_id) WHERE (state = ANY (ARRAY['queued'::text, 'running'::text]));

COMMENT ON INDEX public.sync_runs_one_active_per_source IS 'Lock: one queued/running run per source (seed 000). ON CONFLICT targets repeat its WHERE.';

CREATE INDEX sync_runs_reconciliation_idx ON public.sync_runs USING btree (source_id, created_at DESC) WHERE (mode = 'reconciliation'::text);

CREATE INDEX sync_runs_source_id_created_at_idx ON public.sync_runs USING btree (source_id, created_at DESC);

CREATE INDEX sync_runs_source_id_id_idx ON public.sync_runs USING btree (source_id, id DESC);

CREATE INDEX sync_runs_succeeded_idx ON public.sync_runs USING btree (source_id, finished_at DESC) WHERE (state = 'succeeded'::text);

CREATE INDEX sync_runs_terminal_idx ON public.sync_runs USING btree (source_id, finished_at DESC, id DESC) WHERE (state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text]));

CREATE INDEX sync_runs_watchdog_idx ON public.sync_runs USING btree (source_id, created_at DESC) WHERE (trigger = 'watchdog'::text);

CREATE INDEX webhook_deliveries_expires_at_idx ON public.webhook_deliveries USING btree (expires_at);

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.dead_letters FOR EACH ROW EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.entities FOR EACH ROW WHEN ((((NOT ((old.last_fetched_at IS DISTINCT FROM new.last_fetched_at) OR (old.last_run_id IS DISTINCT FROM new.last_run_id))) OR (old.content_hash IS DISTINCT FROM new.content_hash) OR (old.deleted_at IS DISTINCT FROM new.deleted_at) OR (old.out_of_scope IS DISTINCT FROM new.out_of_scope)) AND (new.updated_at IS DISTINCT FROM now()))) EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.entity_chunks FOR EACH ROW EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.entity_notes FOR EACH ROW EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.platform_settings FOR EACH ROW EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _100_timestamps BEFORE UPDATE ON public.sources FOR EACH ROW EXECUTE FUNCTION public.tg__set_updated_at();

CREATE TRIGGER _200_bump_version AFTER INSERT OR DELETE OR UPDATE ON public.platform_settings FOR EACH ROW EXECUTE FUNCTION public.tg_platform_settings__bump_version();

CREATE TRIGGER _300_inherit_acl BEFORE INSERT OR UPDATE OF entity_id, source_id, acl_principals, entity_status, entity_deleted ON public.entity_chunks FOR EACH ROW EXECUTE FUNCTION public.tg_entity_chunks__inherit_acl();

CREATE TRIGGER _300_propagate_acl AFTER UPDATE OF acl_principals, status, deleted_at ON public.entities FOR EACH ROW WHEN (((old.acl_principals IS DISTINCT FROM new.acl_principals) OR (old.status IS DISTINCT FROM new.status) OR ((old.deleted_at IS NULL) <> (new.deleted_at IS NULL)))) EXECUTE FUNCTION public.tg_entities__propagate_acl();

CREATE TRIGGER _310_lexemes_insert AFTER INSERT ON public.entity_chunks REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION public.tg_entity_chunks__lexemes_insert();

CREATE TRIGGER _310_lexemes_update AFTER UPDATE OF body ON public.entity_chunks FOR EACH ROW WHEN ((old.body IS DISTINCT FROM new.body)) EXECUTE FUNCTION public.tg_entity_chunks__lexemes_update();

CREATE TRIGGER _600_run_totals_delete AFTER DELETE ON public.sync_runs REFERENCING OLD TABLE AS old_runs FOR EACH STATEMENT EXECUTE FUNCTION public.tg_sync_runs__totals();

CREATE TRIGGER _600_run_totals_insert AFTER INSERT ON public.sync_runs REFERENCING NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION public.tg_sync_runs__totals();

CREATE TRIGGER _600_run_totals_truncate AFTER TRUNCATE ON public.sync_runs FOR EACH STATEMENT EXECUTE FUNCTION public.tg_sync_runs__totals_truncate();

CREATE TRIGGER _600_run_totals_update AFTER UPDATE ON public.sync_runs REFERENCING OLD TABLE AS old_runs NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION public.tg_sync_runs__totals();

CREATE TRIGGER _700_entity_totals_delete AFTER DELETE ON public.entities REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_entities__totals();

CREATE TRIGGER _700_entity_totals_insert AFTER INSERT ON public.entities REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_entities__totals();

CREATE TRIGGER _700_entity_totals_truncate AFTER TRUNCATE ON public.entities FOR EACH STATEMENT EXECUTE FUNCTION public.tg_entities__totals_truncate();

CREATE TRIGGER _700_entity_totals_update AFTER UPDATE ON public.entities REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_entities__totals();

CREATE TRIGGER _800_dead_letter_totals_delete AFTER DELETE ON public.dead_letters REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__totals();

CREATE TRIGGER _800_dead_letter_totals_insert AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__totals();

CREATE TRIGGER _800_dead_letter_totals_truncate AFTER TRUNCATE ON public.dead_letters FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__totals_truncate();

CREATE TRIGGER _800_dead_letter_totals_update AFTER UPDATE ON public.dead_letters REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__totals();

CREATE TRIGGER _850_webhook_delivery_totals_delete AFTER DELETE ON public.webhook_deliveries REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_webhook_deliveries__totals();

CREATE TRIGGER _850_webhook_delivery_totals_insert AFTER INSERT ON public.webhook_deliveries REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_webhook_deliveries__totals();

CREATE TRIGGER _850_webhook_delivery_totals_truncate AFTER TRUNCATE ON public.webhook_deliveries FOR EACH STATEMENT EXECUTE FUNCTION public.tg_webhook_deliveries__totals_truncate();

CREATE TRIGGER _850_webhook_delivery_totals_update AFTER UPDATE ON public.webhook_deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_webhook_deliveries__totals();

CREATE TRIGGER _900_notify AFTER DELETE OR UPDATE OF revoked_at, expires_at, scope, token_hash, name ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION public.tg_api_tokens__notify_change();

CREATE TRIGGER _900_notify_runs AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.run_completeness FOR EACH STATEMENT EXECUTE FUNCTION public.tg__notify_runs_changed();

CREATE TRIGGER _900_notify_runs AFTER DELETE OR UPDATE OF credential_enc, webhook_secret_enc ON public.sources FOR EACH STATEMENT EXECUTE FUNCTION public.tg__notify_runs_changed();

CREATE TRIGGER _900_notify_runs AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.sync_runs FOR EACH STATEMENT EXECUTE FUNCTION public.tg__notify_runs_changed();

CREATE TRIGGER procrastinate_jobs_notify_queue_job_aborted_v1 AFTER UPDATE OF abort_requested ON public.procrastinate_jobs FOR EACH ROW WHEN (((old.abort_requested = false) AND (new.abort_requested = true) AND (new.status = 'doing'::public.procrastinate_job_status))) EXECUTE FUNCTION public.procrastinate_notify_queue_abort_job_v1();

CREATE TRIGGER procrastinate_jobs_notify_queue_job_inserted_v1 AFTER INSERT ON public.procrastinate_jobs FOR EACH ROW WHEN ((new.status = 'todo'::public.procrastinate_job_status)) EXECUTE FUNCTION public.procrastinate_notify_queue_job_inserted_v1();

CREATE TRIGGER procrastinate_trigger_abort_requested_events_v1 AFTER UPDATE OF abort_requested ON public.procrastinate_jobs FOR EACH ROW WHEN ((new.abort_requested = true)) EXECUTE FUNCTION public.procrastinate_trigger_abort_requested_events_procedure_v1();

CREATE TRIGGER procrastinate_trigger_delete_jobs_v1 BEFORE DELETE ON public.procrastinate_jobs FOR EACH ROW EXECUTE FUNCTION public.procrastinate_unlink_periodic_defers_v1();

CREATE TRIGGER procrastinate_trigger_scheduled_events_v1 AFTER INSERT OR UPDATE ON public.procrastinate_jobs FOR EACH ROW WHEN (((new.scheduled_at IS NOT NULL) AND (new.status = 'todo'::public.procrastinate_job_status))) EXECUTE FUNCTION public.procrastinate_trigger_function_scheduled_events_v1();

CREATE TRIGGER procrastinate_trigger_status_events_insert_v1 AFTER INSERT ON public.procrastinate_jobs FOR EACH ROW WHEN ((new.status = 'todo'::public.procrastinate_job_status)) EXECUTE FUNCTION public.procrastinate_trigger_function_status_events_insert_v1();

CREATE TRIGGER procrastinate_trigger_status_events_update_v1 AFTER UPDATE OF status ON public.procrastinate_jobs FOR EACH ROW EXECUTE FUNCTION public.procrastinate_trigger_function_status_events_update_v1();

ALTER TABLE ONLY public.acl_principal_totals
    ADD CONSTRAINT acl_principal_totals_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.dead_letter_totals
    ADD CONSTRAINT dead_letter_totals_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.sync_runs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_chunk_lexemes
    ADD CONSTRAINT entity_chunk_lexemes_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES public.entity_chunks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_chunk_repeats
    ADD CONSTRAINT entity_chunk_repeats_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES public.entity_chunks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_chunks
    ADD CONSTRAINT entity_chunks_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_edges
    ADD CONSTRAINT entity_edges_from_entity_id_fkey FOREIGN KEY (from_entity_id) REFERENCES public.entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_notes
    ADD CONSTRAINT entity_notes_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_refs
    ADD CONSTRAINT entity_refs_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.procrastinate_events
    ADD CONSTRAINT procrastinate_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.procrastinate_jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.procrastinate_jobs
    ADD CONSTRAINT procrastinate_jobs_worker_id_fkey FOREIGN KEY (worker_id) REFERENCES public.procrastinate_workers(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.procrastinate_periodic_defers
    ADD CONSTRAINT procrastinate_periodic_defers_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.procrastinate_jobs(id);

ALTER TABLE ONLY public.run_completeness
    ADD CONSTRAINT run_completeness_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.sync_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.run_seen_items
    ADD CONSTRAINT run_seen_items_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.sync_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.source_entity_totals
    ADD CONSTRAINT source_entity_totals_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.sync_run_totals
    ADD CONSTRAINT sync_run_totals_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhook_pending
    ADD CONSTRAINT webhook_pending_source_id_fkey FOREIGN KEY (source_id) REFERENCES public.sources(id) ON DELETE CASCADE;
