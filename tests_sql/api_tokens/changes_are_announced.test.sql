-- A change that alters what a token look-up answers (revocation, scope, expiry, hash, name, deletion)
-- fires _900_notify, which NOTIFYs harvester_api_tokens for the API's token cache; last_used_at does not.
-- (Delivery happens at commit, which a rolled-back test cannot see: tests/api/test_token_cache.py does.)
begin;
select plan(4);

-- Test
select has_trigger('api_tokens', '_900_notify', 'api_tokens has the _900_notify trigger.');
select trigger_is('api_tokens', '_900_notify', 'tg_api_tokens__notify_change',
    'The trigger runs tg_api_tokens__notify_change.');
select ok(
    (select tgtype & 8 = 8 and tgtype & 16 = 16 from pg_trigger
     where tgrelid = 'api_tokens'::regclass and tgname = '_900_notify'),
    'The trigger fires on delete and on update.');
select ok(
    (select not (array(select a.attname::text from pg_trigger t, unnest(t.tgattr) as k(attnum)
                       join pg_attribute a on a.attrelid = 'api_tokens'::regclass and a.attnum = k.attnum
                       where t.tgrelid = 'api_tokens'::regclass and t.tgname = '_900_notify') @> array['last_used_at'])),
    'Marking a token used does not announce a change.');

select * from finish();
rollback;
