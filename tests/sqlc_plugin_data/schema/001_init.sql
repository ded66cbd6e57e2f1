-- migrate:up
-- A tiny schema that exercises every type and construct the sqlc plugin must handle.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TYPE item_kind AS ENUM ('doc', 'issue');

CREATE TABLE owners (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    CONSTRAINT owners_name_key UNIQUE (name)
);

CREATE TABLE items (
    id bigserial PRIMARY KEY,
    owner_id bigint NOT NULL REFERENCES owners (id),
    external_id text NOT NULL,
    kind item_kind NOT NULL DEFAULT 'doc',
    status text NOT NULL DEFAULT 'draft' CONSTRAINT items_status_check CHECK (status IN ('draft', 'final')),
    title varchar(200) NOT NULL,
    note text,
    tags text[] NOT NULL DEFAULT '{}',
    payload jsonb,
    embedding vector(3),
    score numeric(10, 2),
    ratio double precision,
    weight real,
    rank_small smallint,
    rank_int integer,
    blob bytea,
    is_active boolean NOT NULL DEFAULT true,
    uid uuid,
    due_on date,
    ttl interval,
    seen_at timestamp,
    deleted_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Upsert key of a live item: one live row per (owner, external id); soft-deleted rows do not count.
CREATE UNIQUE INDEX items_owner_external_live_key ON items (owner_id, external_id) WHERE deleted_at IS NULL;

CREATE VIEW live_items AS
SELECT id, owner_id, external_id, title, tags
FROM items
WHERE deleted_at IS NULL;

CREATE FUNCTION item_label(p_title text, p_tags text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path TO ''
AS $$
BEGIN
    -- A literal '%' and '$1' in a dollar-quoted body must survive placeholder rewriting.
    RETURN p_title || ' [' || array_to_string(p_tags, ',') || '] 100%';
END;
$$;

-- migrate:down
DROP FUNCTION item_label(text, text[]);
DROP VIEW live_items;
DROP TABLE items;
DROP TABLE owners;
DROP TYPE item_kind;
