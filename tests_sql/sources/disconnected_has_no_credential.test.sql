-- A disconnected source holds no credential (seed 000 §1: credential_enc is NULL when disconnected).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type, credential_enc) values ('Connected', 'jira', 'v1:k1:abc') returning id as source_id \gset

-- Test
select throws_ok(
    format($$update sources set state = 'disconnected' where id = %s$$, :source_id),
    '23514', 'new row for relation "sources" violates check constraint "sources_disconnected_has_no_credential"',
    'Disconnecting a source while keeping its credential is rejected.');
select lives_ok(
    format($$update sources set state = 'disconnected', credential_enc = null where id = %s$$, :source_id),
    'Disconnecting a source together with dropping its credential is accepted.');

select * from finish();
rollback;
