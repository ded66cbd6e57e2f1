-- harvester_collapse_duplicates finds pairs from the rows that list aliases, one index probe per alias,
-- not by comparing every pair of the source's rows (decision 79): on 3,000 freshly written, never analysed
-- entities (the state of a first reconciliation) with three alias holders, the step reads a few rows per
-- holder and per loop. The pair-comparing plan read 3,000 rows for each of the 3,000 (9 M).
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash, aliases)
select :source_id, 'ticket', g::text, 'K-' || g, 'final', 'h',
       case g when 10 then '{OLD-10}'::text[] when 20 then '{K-21}' when 30 then '{NOWHERE}' else '{}' end
from generate_series(1, 3000) g;
insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash)
values (:source_id, 'ticket', 'OLD-10', 'OLD-10', 'final', 'h');
create temporary table rows_read_before as
    select seq_tup_read + coalesce(idx_tup_fetch, 0) as n from pg_stat_xact_user_tables where relname = 'entities';
create temporary table outcome as select harvester_collapse_duplicates(:source_id, 5) as collapsed;
create temporary table rows_read_after as
    select seq_tup_read + coalesce(idx_tup_fetch, 0) as n from pg_stat_xact_user_tables where relname = 'entities';

-- Test
select is((select collapsed from outcome), 2,
    'The duplicate named by id (OLD-10) and the one named by key (K-21) are collapsed; NOWHERE names nothing.');
select set_eq(
    format($$select source_entity_id from entities where source_id = %s and deleted_reason = 'collapsed_duplicate'$$, :source_id),
    $$values ('OLD-10'), ('21')$$,
    'Exactly those two rows are folded.');
select cmp_ok((select n from rows_read_after) - (select n from rows_read_before), '<', 300::bigint,
    'Collapsing reads a few rows per alias holder and pass of the loop (three holders, three passes), not the source''s 3,001.');

select * from finish();
rollback;
