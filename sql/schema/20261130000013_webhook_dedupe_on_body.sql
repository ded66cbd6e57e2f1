-- migrate:up
-- Webhook de-duplication keys on signed content only (issue 11, Deliver 5): delivery_id now holds
-- "sha256:<hex>" of the verified body, never an unsigned header such as X-Atlassian-Webhook-Identifier,
-- which anyone replaying a captured body can change. Documentation only: the column keeps its type and
-- key; rows written under the old rule expire with their TTL.
set lock_timeout = '5s';
set statement_timeout = '60s';

comment on table webhook_deliveries is
    'Seen webhook deliveries, keyed on a hash of the signed body, so a replay is processed once whatever unsigned headers it carries. Unlogged on purpose: the dedupe window is ephemeral (seed 000 "Реал-тайм").';
comment on column webhook_deliveries.delivery_id is
    'De-duplication key: "sha256:<hex>" of the verified request body (signed content only, never a sender header).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
