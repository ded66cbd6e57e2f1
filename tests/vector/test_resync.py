"""Re-embedding only what changed, through the real pipeline against the Jira emulator (issue 5, tests)."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from app.vector.stage import VectorStage
from tests.sync.conftest import JiraFactory
from tests.vector.conftest import add_source, sync_with
from tests.vector.fakes import CountingEmbedder, HashEmbedder


def _chunks(probe: psycopg.Connection[Any], source_id: int) -> dict[tuple[str, int], tuple[int, str, Any]]:
    rows = probe.execute(
        "select e.source_entity_id, c.ordinal, c.id, c.content_hash, c.updated_at"
        " from entity_chunks c join entities e on e.id = c.entity_id where e.source_id = %s",
        (source_id,),
    ).fetchall()
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


def test_resync_of_an_unchanged_source_makes_zero_embedding_calls(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(40)
    source_id = add_source(conn, keyring, jira)
    embedder = CountingEmbedder(HashEmbedder())

    _, first = sync_with(conn, keyring, source_id, "full", VectorStage(embedder))
    assert first.state == "succeeded"
    before = _chunks(probe, source_id)
    assert len(before) >= 40 and embedder.calls > 0
    assert probe.execute("select count(*) from entity_chunks where embedding is null").fetchone() == (0,)
    models = probe.execute("select distinct embedding_model from entity_chunks").fetchall()
    assert models == [("fake-hash-384",)]

    embedder.reset()
    for mode in ("full", "reconciliation", "incremental"):
        _, again = sync_with(conn, keyring, source_id, mode, VectorStage(embedder))
        assert again.state == "succeeded"
    assert embedder.calls == 0 and embedder.texts == []
    assert _chunks(probe, source_id) == before  # same ids, hashes and updated_at: no row was touched


def test_editing_one_paragraph_re_embeds_exactly_that_chunk(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(40)
    source_id = add_source(conn, keyring, jira)
    embedder = CountingEmbedder(HashEmbedder())
    sync_with(conn, keyring, source_id, "full", VectorStage(embedder))
    before = _chunks(probe, source_id)
    # An issue with comments: its description and each comment are separate chunks.
    counts: dict[str, int] = {}
    for entity_id, _ in before:
        counts[entity_id] = counts.get(entity_id, 0) + 1
    target = next(e for e, n in sorted(counts.items()) if n >= 3)
    key = probe.execute("select natural_key from entities where source_entity_id = %s", (target,)).fetchone()
    assert key is not None

    embedder.reset()
    jira.patch(key[0], description="When the export runs against staging the billing step now fails at once.")
    stage = VectorStage(embedder)
    _, run = sync_with(conn, keyring, source_id, "incremental", stage)
    assert run.state == "succeeded"

    after = _chunks(probe, source_id)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {(target, 0)}, changed
    assert len(embedder.texts) == 1 and "now fails at once" in embedder.texts[0]
    assert after.keys() == before.keys()
    assert (stage.stats.embedded, stage.stats.written, stage.stats.unchanged) == (1, 1, counts[target] - 1)


def _stored(probe: psycopg.Connection[Any], source_id: int, key: str) -> list[tuple[int, str, str]]:
    """(ordinal, body, hash) of one issue's chunks, in order."""
    return [
        (r[0], r[1], r[2])
        for r in probe.execute(
            "select c.ordinal, c.body, c.content_hash from entity_chunks c join entities e on e.id = c.entity_id"
            " where e.source_id = %s and e.natural_key = %s order by c.ordinal",
            (source_id, key),
        ).fetchall()
    ]


def test_a_text_an_issue_repeats_is_stored_once_with_dense_ordinals(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    """Decision 128: a paragraph pasted five times is one chunk row of its issue, not five; another
    issue with the same paragraph keeps its own row (rights are per entity); edits keep ordinals dense."""
    jira = jira_factory(6)
    source_id = add_source(conn, keyring, jira)
    embedder = CountingEmbedder(HashEmbedder())
    sync_with(conn, keyring, source_id, "full", VectorStage(embedder))
    keys = [r[0] for r in probe.execute(
        "select natural_key from entities where source_id = %s order by natural_key", (source_id,)
    ).fetchall()]  # fmt: skip
    target, other = keys[0], keys[1]
    # One paragraph fills most of a chunk (80 words of HashEmbedder's 128 tokens): its copies pack alone.
    sentence = "lag on the standby grows while the nightly export holds its lock"
    paragraph = " ".join(f"replica{n} {sentence}" for n in range(8))
    for key in (target, other):
        jira.patch(key, description="\n\n".join([paragraph] * 5))

    embedder.reset()
    _, run = sync_with(conn, keyring, source_id, "incremental", VectorStage(embedder))
    assert run.state == "succeeded"
    text = probe.execute("select body from entities where natural_key = %s", (target,)).fetchone()
    assert text is not None and text[0].count(paragraph) == 5
    rows = _stored(probe, source_id, target)
    assert [o for o, _, _ in rows] == list(range(len(rows)))
    assert len({h for _, _, h in rows}) == len(rows)
    # A chunk's text is its entity's title, a blank line, its body (app/chunking.py).
    alone = [b for _, b, _ in rows if b.split("\n\n", 1)[1] == paragraph]
    assert len(alone) == 1, rows  # without decision 128: four identical rows
    assert [b for _, b, _ in _stored(probe, source_id, other) if b.split("\n\n", 1)[1] == paragraph]
    assert len(embedder.texts) == len(set(embedder.texts))

    # A new opening paragraph, the copies after it: still each text once, ordinals from 0.
    jira.patch(target, description="The export was moved to 02:00.\n\n" + "\n\n".join([paragraph] * 5))
    sync_with(conn, keyring, source_id, "incremental", VectorStage(embedder))
    rows = _stored(probe, source_id, target)
    assert [o for o, _, _ in rows] == list(range(len(rows))) and len({h for _, _, h in rows}) == len(rows)
    assert any("02:00" in b for _, b, _ in rows)

    # A shorter text: the stored tail past the new last ordinal goes.
    before = len(rows)
    jira.patch(target, description="Fixed.")
    sync_with(conn, keyring, source_id, "incremental", VectorStage(embedder))
    rows = _stored(probe, source_id, target)
    assert [o for o, _, _ in rows] == list(range(len(rows))) and len(rows) < before
    assert not any("replica0" in b for _, b, _ in rows)


def test_the_copies_an_entity_stored_before_decision_128_go_and_its_gapped_ordinals_heal_on_the_next_change(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    """Decision 130 (migration 42): ``harvester_distinct_chunks()`` removes the copies rows stored before
    decision 128 hold and leaves gaps in the ordinals; an unchanged re-sync then writes and embeds nothing,
    and the next change of the text stores its chunks densely again, with no stale row left in a gap."""
    jira = jira_factory(3)
    source_id = add_source(conn, keyring, jira)
    embedder = CountingEmbedder(HashEmbedder())
    sync_with(conn, keyring, source_id, "full", VectorStage(embedder))
    row = probe.execute("select natural_key from entities where source_id = %s order by 1 limit 1", (source_id,))
    (key,) = row.fetchone() or ("",)
    parts = [f"part{n} " + " ".join(f"word{n}x{w}" for w in range(70)) for n in range(3)]
    jira.patch(key, description="\n\n".join(parts))
    sync_with(conn, keyring, source_id, "incremental", VectorStage(embedder))
    dense = _stored(probe, source_id, key)
    assert len(dense) >= 3, dense
    # The layout the stage wrote before decision 128: each text followed by a copy of it.
    (entity_id,) = probe.execute(
        "select id from entities where source_id = %s and natural_key = %s", (source_id, key)
    ).fetchone() or (0,)
    probe.execute("update entity_chunks set ordinal = ordinal * 2 + 1000 where entity_id = %s", (entity_id,))
    probe.execute("update entity_chunks set ordinal = ordinal - 1000 where entity_id = %s", (entity_id,))
    probe.execute(
        "insert into entity_chunks (entity_id, ordinal, body, content_hash, embedding, embedding_model)"
        " select entity_id, ordinal + 1, body, content_hash, embedding, embedding_model from entity_chunks"
        " where entity_id = %s",
        (entity_id,),
    )
    assert len(_stored(probe, source_id, key)) == 2 * len(dense)

    assert probe.execute("select harvester_distinct_chunks()").fetchone() == (len(dense),)
    gapped = _stored(probe, source_id, key)
    assert [o for o, _, _ in gapped] == [2 * n for n in range(len(dense))]
    assert [(b, h) for _, b, h in gapped] == [(b, h) for _, b, h in dense]

    embedder.reset()
    before = _chunks(probe, source_id)
    _, run = sync_with(conn, keyring, source_id, "full", VectorStage(embedder))
    assert run.state == "succeeded" and embedder.texts == []
    assert _chunks(probe, source_id) == before  # nothing rewritten over the gaps

    jira.patch(key, description="\n\n".join(["A new opening paragraph.", *parts[1:]]))
    _, run = sync_with(conn, keyring, source_id, "incremental", VectorStage(embedder))
    assert run.state == "succeeded"
    healed = _stored(probe, source_id, key)
    assert [o for o, _, _ in healed] == list(range(len(healed)))
    assert len({h for _, _, h in healed}) == len(healed)
    assert any("A new opening paragraph." in b for _, b, _ in healed)
    assert not any("part0" in b for _, b, _ in healed)
