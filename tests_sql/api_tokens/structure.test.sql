-- Structure of api_tokens: hashed admin API tokens.
begin;
select plan(29);

-- Test
select has_table('public', 'api_tokens', 'Table api_tokens exists.');
select columns_are('public', 'api_tokens', array['id', 'name', 'scope', 'token_hash', 'created_at', 'last_used_at', 'revoked_at', 'expires_at', 'principals'],
    'Table api_tokens has exactly the expected columns.');
select col_type_is('public', 'api_tokens', 'id', 'bigint', 'Column api_tokens.id is bigint.');
select col_not_null('public', 'api_tokens', 'id', 'Column api_tokens.id is NOT NULL.');
select is((select attidentity::text from pg_attribute where attrelid = 'public.api_tokens'::regclass and attname = 'id'), 'a',
    'Column api_tokens.id is an identity generated always.');
select col_type_is('public', 'api_tokens', 'name', 'text', 'Column api_tokens.name is text.');
select col_not_null('public', 'api_tokens', 'name', 'Column api_tokens.name is NOT NULL.');
select col_type_is('public', 'api_tokens', 'scope', 'text', 'Column api_tokens.scope is text.');
select col_not_null('public', 'api_tokens', 'scope', 'Column api_tokens.scope is NOT NULL.');
select col_type_is('public', 'api_tokens', 'token_hash', 'text', 'Column api_tokens.token_hash is text.');
select col_not_null('public', 'api_tokens', 'token_hash', 'Column api_tokens.token_hash is NOT NULL.');
select col_type_is('public', 'api_tokens', 'created_at', 'timestamp with time zone', 'Column api_tokens.created_at is timestamp with time zone.');
select col_not_null('public', 'api_tokens', 'created_at', 'Column api_tokens.created_at is NOT NULL.');
select col_default_is('public', 'api_tokens', 'created_at', 'now()'::text, 'Column api_tokens.created_at defaults to now().');
select col_type_is('public', 'api_tokens', 'last_used_at', 'timestamp with time zone', 'Column api_tokens.last_used_at is timestamp with time zone.');
select col_is_null('public', 'api_tokens', 'last_used_at', 'Column api_tokens.last_used_at is nullable.');
select col_type_is('public', 'api_tokens', 'revoked_at', 'timestamp with time zone', 'Column api_tokens.revoked_at is timestamp with time zone.');
select col_is_null('public', 'api_tokens', 'revoked_at', 'Column api_tokens.revoked_at is nullable.');
select col_type_is('public', 'api_tokens', 'expires_at', 'timestamp with time zone', 'Column api_tokens.expires_at is timestamp with time zone.');
select col_is_null('public', 'api_tokens', 'expires_at', 'Column api_tokens.expires_at is nullable (a token may never expire).');
select col_type_is('public', 'api_tokens', 'principals', 'text[]', 'Column api_tokens.principals is text[].');
select col_is_null('public', 'api_tokens', 'principals', 'Column api_tokens.principals is nullable (only search tokens are bound).');
select has_pk('public', 'api_tokens', 'Table api_tokens has a primary key.');
select col_is_pk('public', 'api_tokens', array['id'], 'The primary key of api_tokens is (id).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.api_tokens'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('api_tokens_scope_check', 'c'),
        ('api_tokens_name_present', 'c'),
        ('api_tokens_search_principals', 'c'),
        ('api_tokens_pkey', 'p'),
        ('api_tokens_token_hash_key', 'u')$$,
    'Table api_tokens has exactly the expected named constraints.');
select indexes_are('public', 'api_tokens', array['api_tokens_pkey', 'api_tokens_token_hash_key', 'api_tokens_live_name_key'], 'Table api_tokens has exactly the expected indexes.');
select col_is_unique('public', 'api_tokens', array['token_hash'], 'Token hashes are unique.');

select index_is_unique('public', 'api_tokens', 'api_tokens_live_name_key', 'The live-name index is unique.');
select is((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'public.api_tokens_live_name_key'::regclass),
    '(revoked_at IS NULL)', 'The live-name index covers unrevoked tokens only, so a revoked name may be reused.');

select * from finish();
rollback;
