-- Re-appliable: keeps items.updated_at honest whatever the writer.
CREATE OR REPLACE FUNCTION tg__set_updated_at() RETURNS trigger
LANGUAGE plpgsql
SET search_path TO ''
AS $$
BEGIN
    NEW.updated_at := pg_catalog.now();
    RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS _100_timestamps ON items;
CREATE TRIGGER _100_timestamps BEFORE UPDATE ON items
FOR EACH ROW EXECUTE FUNCTION tg__set_updated_at();
