-- Structure of rate_budgets: one shared rate budget per credential, keyed by a SHA-256 (issue 12).
begin;
select plan(8);

-- Test
select has_table('public', 'rate_budgets', 'Table rate_budgets exists.');
select columns_are('public', 'rate_budgets', array['credential_key', 'capacity', 'refill_per_second', 'tokens', 'paused_until', 'updated_at'],
    'Table rate_budgets has exactly the expected columns.');
select col_is_pk('public', 'rate_budgets', array['credential_key'], 'The primary key of rate_budgets is (credential_key).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.rate_budgets'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('rate_budgets_pkey', 'p'), ('rate_budgets_key_is_sha256', 'c'), ('rate_budgets_nonnegative', 'c')$$,
    'Table rate_budgets has exactly the expected named constraints.');
select indexes_are('public', 'rate_budgets', array['rate_budgets_pkey'], 'Table rate_budgets has exactly the expected indexes.');
select throws_ok(
    $$insert into rate_budgets (credential_key) values ('bot@example.com:token')$$,
    '23514', 'new row for relation "rate_budgets" violates check constraint "rate_budgets_key_is_sha256"',
    'A key that is not a SHA-256 hex digest (a credential, say) is rejected.');
select throws_ok(
    format($$insert into rate_budgets (credential_key, tokens) values (%L, -1)$$, repeat('a', 64)),
    '23514', 'new row for relation "rate_budgets" violates check constraint "rate_budgets_nonnegative"',
    'Negative tokens are rejected.');
select table_privs_are('public', 'rate_budgets', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes rate_budgets.');

select * from finish();
rollback;
