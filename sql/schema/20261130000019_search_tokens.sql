-- migrate:up
-- Who may search as whom (issue 14 §4, docs/decisions.md): a third token scope, `search`, may call only
-- POST /api/v1/search and only as the principals bound to it when it was created (its end user and
-- their groups); `admin` may search as anyone; `read` may not search. The binding is stored with the
-- token, so the guard that authenticates it also knows whom it may search as.
set lock_timeout = '5s';
set statement_timeout = '60s';

alter table api_tokens add column principals text[];
comment on column api_tokens.principals is
    'ACL tokens (user:<id>, group:<connector>:<id>) a search-scope token may search as; NULL for other scopes.';

-- The scope set grows by one value: the replacement accepts everything the old check did, so no
-- guarantee is lost. api_tokens holds a handful of rows; validating in this transaction is instant.
-- squawk-ignore ban-drop-constraint
alter table api_tokens drop constraint api_tokens_scope_check;
-- squawk-ignore constraint-missing-not-valid
alter table api_tokens add constraint api_tokens_scope_check check (scope in ('admin', 'read', 'search'));
comment on constraint api_tokens_scope_check on api_tokens is
    'admin: everything; read: GET only, no search; search: POST /search only, as its bound principals.';

-- Every existing token has a NULL principals column and scope admin or read, so this holds at once.
-- squawk-ignore constraint-missing-not-valid
alter table api_tokens add constraint api_tokens_search_principals check (
    case when scope = 'search' then coalesce(cardinality(principals), 0) > 0 else principals is null end);
comment on constraint api_tokens_search_principals on api_tokens is
    'A search token is bound to at least one principal; admin and read tokens to none (they are not limited to one).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
