-- Triggers _310_lexemes_insert and _310_lexemes_update on entity_chunks also keep entity_chunk_repeats
-- (decision 115): every chunk has one row of the lexemes its text holds more than once, whoever writes it
-- (INSERT, COPY), again when its text changes, and none once it is deleted. The repeats step of the
-- full-text half relies on one more thing checked here: over the stored (unweighted) lexemes, ts_rank_cd
-- of one term is 0.1 for each occurrence, so a chunk holding a term once has the lowest rank there is.
begin;
select plan(9);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (id, source_id, source_type, source_entity_id, status, content_hash, acl_principals)
overriding system value values (987654322, :source_id, 'ticket', '1', 'final', 'h', '{group:jira:all}');
insert into entity_chunks (entity_id, ordinal, body, content_hash)
values (987654322, 0, 'Migrations fail; the migration failed again on staging', 'c0'),
       (987654322, 1, 'Отчёт готов, отчёты готов', 'c1'),
       (987654322, 2, 'Nothing repeats here', 'c2');
create temp view repeated as
select c.ordinal, r.lexemes
from entity_chunk_repeats r join entity_chunks c on c.id = r.chunk_id
where c.entity_id = 987654322;

-- Test
select is((select lexemes from repeated where ordinal = 0), '''fail'' ''migrat'''::tsvector,
    'The repeats of a chunk are its lexemes held more than once, across word forms.');
select is((select lexemes from repeated where ordinal = 1), '''гот'' ''отчет'''::tsvector,
    'Russian word forms repeat by their stems.');
select is((select lexemes from repeated where ordinal = 2), ''::tsvector,
    'A chunk that repeats nothing has an empty row, so the fill finds no chunk without one.');

update entity_chunks set body = 'Rollbacks of the schema are rare', content_hash = 'c0b'
where entity_id = 987654322 and ordinal = 0;
select is((select lexemes from repeated where ordinal = 0), ''::tsvector, 'A rewritten text loses the repeats it lost.');
update entity_chunks set body = 'Deploy, deploy and deploy', content_hash = 'c2b'
where entity_id = 987654322 and ordinal = 2;
select is((select lexemes from repeated where ordinal = 2), '''deploy 3'''::tsvector, 'A rewritten text gets its new repeats (three times: marked " 3").');

copy entity_chunks (entity_id, ordinal, body, content_hash) from stdin;
987654322	3	Backups and more backups	c3
\.
select is((select lexemes from repeated where ordinal = 3), '''backup'''::tsvector, 'A chunk written by COPY has its repeats.');

select is((select count(*)::integer from entity_chunk_repeats r
           where r.lexemes <> harvester_repeated_lexemes((select l.lexemes from entity_chunk_lexemes l where l.chunk_id = r.chunk_id))),
    0, 'Every row of repeats is derived from the chunk''s stored lexemes.');

select is((select array_agg(ts_rank_cd(l.lexemes, 'backup'::tsquery) order by c.ordinal)
           from entity_chunk_lexemes l join entity_chunks c on c.id = l.chunk_id
           where c.entity_id = 987654322 and c.ordinal = 3),
    array[0.2]::real[], 'ts_rank_cd of one term over stored lexemes is 0.1 an occurrence (two here).');

delete from entity_chunks where entity_id = 987654322 and ordinal >= 2;
select is((select count(*)::integer from entity_chunk_repeats), (select count(*)::integer from entity_chunks),
    'One row of repeats per chunk; a deleted chunk takes its row with it.');

select * from finish();
rollback;
