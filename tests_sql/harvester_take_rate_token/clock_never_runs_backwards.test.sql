-- harvester_take_rate_token: a budget last updated after the caller's transaction began (another run
-- refilled it while this one waited on the row lock) neither loses tokens nor goes negative.
begin;
select plan(3);

-- Setup
insert into rate_budgets (credential_key, capacity, refill_per_second, tokens, updated_at)
values (repeat('d', 64), 1, 10, 0.5, now() + interval '2 seconds');

-- Test
select ok(harvester_take_rate_token(repeat('d', 64)) between 0.04 and 0.06, 'Half a token at 10/s waits 0.05 s, not more.');
select is((select tokens from rate_budgets where credential_key = repeat('d', 64)), 0.5::float8, 'The tokens are kept as they were.');
select ok((select updated_at from rate_budgets where credential_key = repeat('d', 64)) >= now() + interval '2 seconds', 'The refill clock never moves back.');

select * from finish();
rollback;
