-- A search token is bound to the principals it may search as; admin and read tokens to none
-- (api_tokens_scope_check, api_tokens_search_principals; issue 14 §4).
begin;
select plan(6);

-- Test
select lives_ok(
    $$insert into api_tokens (name, scope, token_hash, principals)
      values ('portal-anna', 'search', 'hash-s1', array['user:anna@example.com', 'group:jira:alpha-team'])$$,
    'A search token bound to a user and a group is accepted.');
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('portal-nobody', 'search', 'hash-s2')$$,
    '23514', 'new row for relation "api_tokens" violates check constraint "api_tokens_search_principals"',
    'A search token without principals is rejected: it could otherwise search as no one or, worse, be read as anyone.');
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash, principals) values ('portal-empty', 'search', 'hash-s3', '{}')$$,
    '23514', 'new row for relation "api_tokens" violates check constraint "api_tokens_search_principals"',
    'A search token bound to an empty list is rejected.');
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash, principals) values ('ci', 'read', 'hash-s4', array['user:x'])$$,
    '23514', 'new row for relation "api_tokens" violates check constraint "api_tokens_search_principals"',
    'A read token cannot carry principals: only search tokens are limited to some.');
select lives_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('panel', 'admin', 'hash-s5')$$,
    'An admin token carries no principals.');
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('odd', 'write', 'hash-s6')$$,
    '23514', 'new row for relation "api_tokens" violates check constraint "api_tokens_scope_check"',
    'A scope other than admin, read or search is rejected.');

select * from finish();
rollback;
