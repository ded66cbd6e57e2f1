-- harvester_take_rate_token: 0 for an undescribed credential, the pause left while paused, tokens from a
-- full bucket, then the wait for the next token (issue 12 rate budget).
begin;
select plan(5);

-- Setup
insert into rate_budgets (credential_key, capacity, refill_per_second, tokens)
values (repeat('b', 64), 2, 1, 2);
insert into rate_budgets (credential_key, paused_until) values (repeat('c', 64), now() + interval '30 seconds');

-- Test
select is(harvester_take_rate_token(repeat('a', 64)), 0::float8, 'A credential the source never described may always go.');
select ok(harvester_take_rate_token(repeat('c', 64)) between 29 and 30, 'A paused credential waits out the pause.');
select is(harvester_take_rate_token(repeat('b', 64)), 0::float8, 'The first token of a full bucket is free.');
select is(harvester_take_rate_token(repeat('b', 64)), 0::float8, 'The second token of a bucket of two is free.');
select ok(harvester_take_rate_token(repeat('b', 64)) between 0.9 and 1, 'An empty bucket refilled at 1/s waits about a second.');

select * from finish();
rollback;
