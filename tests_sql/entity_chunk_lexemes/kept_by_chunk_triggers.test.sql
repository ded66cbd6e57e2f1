-- Triggers _310_lexemes_insert and _310_lexemes_update on entity_chunks (decision 113): every chunk has
-- its text's lexemes under the `russian` configuration (Russian stems for Cyrillic, English for Latin
-- words), whoever writes it (INSERT, INSERT ... SELECT, COPY), again when its text changes and only then,
-- and none once it is deleted.
begin;
select plan(12);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (id, source_id, source_type, source_entity_id, status, content_hash, acl_principals)
overriding system value values (987654321, :source_id, 'ticket', '1', 'final', 'h', '{group:jira:all}');
insert into entity_chunks (entity_id, ordinal, body, content_hash)
values (987654321, 0, 'Пользователи не могут войти после обновления', 'c0'),
       (987654321, 1, 'Migrations are failing on staging', 'c1');
create temp view matching as
select c.ordinal, q.words
from entity_chunk_lexemes l join entity_chunks c on c.id = l.chunk_id,
     (values ('пользователь вошёл обновление'), ('пользователь обновлением'), ('migration failed'),
             ('schema rollback'), ('deployment')) as q(words)
where l.lexemes @@ plainto_tsquery('russian'::regconfig, q.words);

-- Test
select is((select count(*)::integer from entity_chunks c
           where not exists (select from entity_chunk_lexemes l
                             where l.chunk_id = c.id and l.lexemes = to_tsvector('russian'::regconfig, c.body))),
    0, 'Every inserted chunk has the lexemes of its text under the russian configuration.');
select is((select ordinal from matching where words = 'пользователь вошёл обновление'), null::integer,
    'All lexemes of a plain query must match: вошёл is not a form of войти.');
select is((select ordinal from matching where words = 'пользователь обновлением'), 0,
    'Russian word forms match the stems of a Russian chunk.');
select is((select ordinal from matching where words = 'migration failed'), 1,
    'English word forms match the stems of an English chunk under the same configuration.');

update entity_chunks set body = 'Rollbacks of the schema are rare', content_hash = 'c1b'
where entity_id = 987654321 and ordinal = 1;
select is((select ordinal from matching where words = 'migration failed'), null::integer,
    'A rewritten text no longer matches the words it lost.');
select is((select ordinal from matching where words = 'schema rollback'), 1, 'A rewritten text matches its new words.');

update entity_chunk_lexemes set lexemes = 'untouched'::tsvector
where chunk_id = (select id from entity_chunks where entity_id = 987654321 and ordinal = 0);
update entity_chunks set acl_principals = '{group:other}', content_hash = 'c0b', body = body
where entity_id = 987654321 and ordinal = 0;
select is((select l.lexemes from entity_chunk_lexemes l join entity_chunks c on c.id = l.chunk_id
           where c.entity_id = 987654321 and c.ordinal = 0), 'untouched'::tsvector,
    'An update that leaves the text as it was (even setting it) does not parse it again.');

-- COPY's data lines are not interpolated by psql: hence the fixed entity id.
copy entity_chunks (entity_id, ordinal, body, content_hash) from stdin;
987654321	2	Deployments were rolled back	c2
\.
select is((select ordinal from matching where words = 'deployment'), 2, 'A chunk written by COPY has its lexemes.');
insert into entity_chunks (entity_id, ordinal, body, content_hash)
select entity_id, 3, 'Квартальный отчёт готов', 'c3' from entity_chunks where entity_id = 987654321 and ordinal = 2;
select is((select l.lexemes from entity_chunk_lexemes l join entity_chunks c on c.id = l.chunk_id
           where c.entity_id = 987654321 and c.ordinal = 3), to_tsvector('russian'::regconfig, 'Квартальный отчёт готов'),
    'A chunk written by INSERT ... SELECT has its lexemes.');

insert into entity_chunks (entity_id, ordinal, body, content_hash)
values (987654321, 4, 'A chunk', 'c4a')
on conflict on constraint entity_chunks_entity_ordinal_key do update set body = excluded.body;
insert into entity_chunks (entity_id, ordinal, body, content_hash)
values (987654321, 4, 'A longer chunk', 'c4b')
on conflict on constraint entity_chunks_entity_ordinal_key do update set body = excluded.body;
select is((select l.lexemes from entity_chunk_lexemes l join entity_chunks c on c.id = l.chunk_id
           where c.entity_id = 987654321 and c.ordinal = 4), to_tsvector('russian'::regconfig, 'A longer chunk'),
    'An upsert that inserts and then one that updates the text (UpsertChunks'' statement) keep one current row.');

delete from entity_chunks where entity_id = 987654321 and ordinal >= 2;
select is((select count(*)::integer from entity_chunk_lexemes l
           where not exists (select from entity_chunks c where c.id = l.chunk_id)),
    0, 'A deleted chunk takes its lexemes with it.');
select is((select count(*)::integer from entity_chunk_lexemes), (select count(*)::integer from entity_chunks),
    'One row of lexemes per chunk.');

select * from finish();
rollback;
