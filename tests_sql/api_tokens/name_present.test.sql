-- Every token has a non-blank name (api_tokens_name_present): audit events name their actor by it.
begin;
select plan(2);

-- Test
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('   ', 'admin', 'hash-blank')$$,
    '23514', 'new row for relation "api_tokens" violates check constraint "api_tokens_name_present"',
    'A blank-named token is rejected by api_tokens_name_present.');
select lives_ok(
    $$insert into api_tokens (name, scope, token_hash, expires_at) values ('ci', 'read', 'hash-ci', now() + interval '1 day')$$,
    'A named token with an expiry is accepted.');

select * from finish();
rollback;
