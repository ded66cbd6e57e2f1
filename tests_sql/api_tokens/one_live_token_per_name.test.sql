-- Token names are unique among live tokens (api_tokens_live_name_key); revoking frees the name.
begin;
select plan(5);

-- Setup
insert into api_tokens (name, scope, token_hash) values ('panel', 'admin', 'hash-1');

-- Test
select throws_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('panel', 'read', 'hash-2')$$,
    '23505', 'duplicate key value violates unique constraint "api_tokens_live_name_key"',
    'A second live token with the same name is rejected by api_tokens_live_name_key.');
select lives_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('panel', 'read', 'hash-3')
      on conflict (name) where revoked_at is null do nothing$$,
    'CreateToken''s ON CONFLICT target, repeating the index predicate, skips a duplicate live name without an error.');
select is((select count(*)::int from api_tokens where name = 'panel'), 1,
    'The skipped duplicate wrote nothing.');
update api_tokens set revoked_at = now() where name = 'panel';
select lives_ok(
    $$insert into api_tokens (name, scope, token_hash) values ('panel', 'read', 'hash-4')$$,
    'Once the token is revoked, its name can be given to a new token.');
select is((select count(*)::int from api_tokens where name = 'panel'), 2,
    'The revoked token stays on record beside the new one.');

select * from finish();
rollback;
