"""The chunk text's stored lexemes (decision 113): filled for the chunks an installation already holds
when the migration lands, kept by trigger for every later write, and what the full-text half of hybrid
search matches and ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from app.db.migrate import load_migrations, migrate
from app.secrets import Keyring
from app.vector.search import SearchFilters, repeated, text_search
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

LEXEMES = "0037"  # the migration that adds entity_chunk_lexemes
REPEATS = "0038"  # the migration that adds entity_chunk_repeats
MARKS = "0039"  # the migration that marks the repeated lexemes by count instead of weighting them

UNMATCHED = """
select count(*) from entity_chunks c
where not exists (select from entity_chunk_lexemes l
                  where l.chunk_id = c.id and l.lexemes = to_tsvector('russian'::regconfig, c.body))
"""


def _old_entity(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(source id, entity id) of one entity written straight into an older schema."""
    source_id = conn.execute(
        "insert into sources (name, connector_type) values ('old', 'jira') returning id"
    ).fetchone()[0]  # type: ignore[index]
    entity_id = conn.execute(
        "insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)"
        " values (%s, 'ticket', '1', 'final', 'h', '{group:all}') returning id",
        (source_id,),
    ).fetchone()[0]  # type: ignore[index]
    return int(source_id), int(entity_id)


def _version(suffix: str) -> str:
    """The version of the migration whose version ends with ``suffix``."""
    (version,) = [m.version for m in load_migrations() if m.version.endswith(suffix)]
    return version


def _before(suffix: str) -> str:
    """The version before that migration's."""
    versions = [m.version for m in load_migrations()]
    return versions[versions.index(_version(suffix)) - 1]


def _old_chunk(conn: psycopg.Connection[Any], source_id: int, entity_id: int, ordinal: int, body: str) -> int:
    """A chunk and its lexemes, as an older version's trigger stored them (a target stops before the
    trigger files); its id."""
    chunk_id = conn.execute(
        "insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, acl_principals,"
        " entity_status) values (%s, %s, %s, %s, %s, '{group:all}', 'final') returning id",
        (entity_id, ordinal, body, f"c{ordinal}", source_id),
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into entity_chunk_lexemes (chunk_id, lexemes) values (%s, to_tsvector('russian', %s))", (chunk_id, body)
    )
    return int(chunk_id)


def _stored_repeats(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """(chunk ordinal, its repeats as text), by ordinal."""
    return conn.execute(
        "select c.ordinal, r.lexemes::text from entity_chunk_repeats r join entity_chunks c on c.id = r.chunk_id"
        " order by c.ordinal"
    ).fetchall()


def test_chunks_stored_before_the_migration_get_their_lexemes_when_migrate_applies_the_triggers(
    empty_db_url: str, tmp_path: Path
) -> None:
    migrate(empty_db_url, tmp_path / "b", target=_before(LEXEMES))
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        source_id, entity_id = _old_entity(conn)
        # Without the trigger files (a target stops before them) nothing copies the entity's columns.
        for ordinal, body in enumerate(("Migrations are failing", "Deployments rolled back", "Отчёт готов")):
            conn.execute(
                "insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, acl_principals,"
                " entity_status) values (%s, %s, %s, %s, %s, '{group:all}', 'final')",
                (entity_id, ordinal, body, f"c{ordinal}", source_id),
            )

    migrate(empty_db_url, tmp_path / "b", target=_version(LEXEMES))
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        assert conn.execute("select count(*) from entity_chunk_lexemes").fetchone() == (0,)  # filled with the triggers
        assert conn.execute("select to_regclass('entity_chunks_body_fts_idx') is null").fetchone() == (True,)

    migrate(empty_db_url, tmp_path / "b")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        stored = sorted(r[0] for r in conn.execute("select lexemes::text from entity_chunk_lexemes"))
        assert stored == ["'back':3 'deploy':1 'roll':2", "'fail':3 'migrat':1", "'гот':2 'отчет':1"]
        assert conn.execute(UNMATCHED).fetchone() == (0,)
        # Lexemes lost by hand come back when migrate applies the file again; the others stay as they are.
        conn.execute("delete from entity_chunk_lexemes where lexemes @@ 'migrat'::tsquery")
        conn.execute("delete from schema_trigger_files where name = '310_chunk_lexemes.sql'")
    migrate(empty_db_url, tmp_path / "b")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        assert conn.execute("select count(*) from entity_chunk_lexemes").fetchone() == (3,)
        assert conn.execute(UNMATCHED).fetchone() == (0,)


def test_a_rewritten_text_is_found_by_its_new_words_only(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    source_id = plain_source(conn, keyring)
    stage = VectorStage(HashEmbedder())
    load_entities(conn, source_id, [entity(1, "Migrations are failing on staging.", ["group:all"], title="")], stage)
    tokens = ["group:all"]
    assert [r.natural_key for r in text_search(conn, "migration", tokens, 10, SearchFilters())] == ["IT-1"]

    # The same entity, its text changed: the loader rewrites the chunk (UpsertChunks' update of body).
    load_entities(conn, source_id, [entity(1, "Quarterly numbers are ready.", ["group:all"], title="")], stage)
    assert text_search(conn, "migration", tokens, 10, SearchFilters()) == []
    found = text_search(conn, "quarterly numbers", tokens, 10, SearchFilters())
    assert [r.natural_key for r in found] == ["IT-1"] and "Quarterly" in found[0].snippet


def test_chunks_stored_before_the_repeats_migration_get_their_repeats_when_migrate_applies_the_triggers(
    empty_db_url: str, tmp_path: Path
) -> None:
    """Migration 38 (decision 115): the trigger file derives every stored chunk's repeats from its lexemes."""
    migrate(empty_db_url, tmp_path / "b", target=_before(REPEATS))
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        source_id, entity_id = _old_entity(conn)
        for ordinal, body in enumerate(("Migrations fail, the migration failed", "Nothing repeats here")):
            _old_chunk(conn, source_id, entity_id, ordinal, body)
        assert conn.execute("select to_regclass('entity_chunk_repeats') is null").fetchone() == (True,)

    migrate(empty_db_url, tmp_path / "b")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        stored = _stored_repeats(conn)
        assert stored == [(0, "'fail' 'migrat'"), (1, "")]
        conn.execute("delete from entity_chunk_repeats where lexemes = ''")
        conn.execute("delete from schema_trigger_files where name = '310_chunk_lexemes.sql'")
    migrate(empty_db_url, tmp_path / "b")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        assert conn.execute("select count(*) from entity_chunk_repeats").fetchone() == (2,)  # the lost row is back


def test_the_marks_migration_derives_every_chunk_repeats_again(empty_db_url: str, tmp_path: Path) -> None:
    """Migration 39 (decision 116): repeats stored in migration 38's weighted form are derived again, each
    lexeme marked by its count, and a chunk that had no row gets one."""
    migrate(empty_db_url, tmp_path / "b", target=_before(MARKS))
    bodies = ("Deploy, deploy and deploy; the deploy", "Backups and more backups", "Nothing repeats here")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        source_id, entity_id = _old_entity(conn)
        chunk_ids = [_old_chunk(conn, source_id, entity_id, ordinal, body) for ordinal, body in enumerate(bodies)]
        # Migration 38's form: weighted positions (B: four to seven times, D: twice); the third chunk has none.
        for chunk_id, weighted in zip(chunk_ids, ("'deploy':1B", "'backup':1D"), strict=False):
            conn.execute(
                "insert into entity_chunk_repeats (chunk_id, lexemes) values (%s, %s::tsvector)", (chunk_id, weighted)
            )

    migrate(empty_db_url, tmp_path / "b")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        stored = _stored_repeats(conn)
        assert stored == [(0, "'deploy 3'"), (1, "'backup'"), (2, "")]
        # The search's tier of three times or more finds the chunk holding "deploy" four times.
        three_or_more = repeated("'deploy'", 3)
        assert conn.execute(
            "select count(*) from entity_chunk_repeats where lexemes @@ %s::tsquery", (three_or_more,)
        ).fetchone() == (1,)
        index = conn.execute("select pg_get_indexdef('entity_chunk_repeats_lexemes_idx'::regclass)").fetchone()
        assert index == (
            "CREATE INDEX entity_chunk_repeats_lexemes_idx ON public.entity_chunk_repeats USING gin (lexemes)",
        )
