"""Chunking: size bounds, structure, determinism, and edits that stay local (issue 5, item 1)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import chunking
from app.chunking import Chunk, chunk_entity, distinct_chunks, split_sections


def words(text: str) -> int:
    """A WordPiece-like counter: tokens never cross whitespace; 2 special tokens per input."""
    return len(text.split()) + 2


def bytes_estimate(text: str) -> int:
    """A byte-based estimator like the remote embedder's (no tokenizer available)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


TITLE = "T0 title"


# ---------------------------------------------------------------- generated documents
# Every word names its block ("b12w3"), so which chunks hold a block is read off the chunk text.


@dataclass(frozen=True)
class Block:
    bid: int
    kind: str  # paragraph | heading | item | code
    sentences: tuple[int, ...]  # words per sentence
    tag: str = "b"  # "e" once edited: new words, same block

    def render(self) -> str:
        names = iter(range(10_000))
        sentences = [" ".join(f"{self.tag}{self.bid}w{next(names)}" for _ in range(n)) + "." for n in self.sentences]
        body = " ".join(sentences)
        if self.kind == "heading":
            return f"# {body}"
        if self.kind == "item":
            return f"- {body}"
        if self.kind == "code":
            return "```\n" + "\n\n".join(sentences) + "\n```"
        return body

    def marker(self) -> re.Pattern[str]:
        return re.compile(rf"\b{self.tag}{self.bid}w\d")


Doc = tuple[tuple[Block, ...], ...]  # sections of blocks


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    sentence = st.integers(min_value=1, max_value=25)
    kinds = st.sampled_from(["paragraph"] * 6 + ["heading", "item", "item", "code"])
    counter = iter(range(10_000))
    sections = []
    for _ in range(draw(st.integers(1, 4))):
        blocks = []
        for _ in range(draw(st.integers(1, 12))):
            kind = draw(kinds)
            n_sentences = 1 if kind == "heading" else draw(st.integers(1, 6))
            lengths = tuple(draw(sentence) for _ in range(n_sentences))
            if kind == "heading":
                lengths = (min(lengths[0], 8),)
            blocks.append(Block(next(counter), kind, lengths))
        sections.append(tuple(blocks))
    return tuple(sections)


def render(doc: Doc) -> tuple[str, list[str]]:
    sections = ["\n\n".join(b.render() for b in blocks) for blocks in doc]
    return "\n\n".join(sections), sections


def chunk(doc: Doc, max_tokens: int, count=words) -> list[Chunk]:  # type: ignore[no-untyped-def]
    text, sections = render(doc)
    return chunk_entity(TITLE, text, sections, max_tokens=max_tokens, count_tokens=count)


def edit(doc: Doc, section: int, index: int, sentences: tuple[int, ...] | None = None) -> Doc:
    blocks = list(doc[section])
    old = blocks[index]
    blocks[index] = replace(old, tag="e", sentences=sentences if sentences is not None else old.sentences)
    return (*doc[:section], tuple(blocks), *doc[section + 1 :])


def paragraph_positions(doc: Doc) -> list[tuple[int, int]]:
    return [(s, i) for s, blocks in enumerate(doc) for i, b in enumerate(blocks) if b.kind == "paragraph"]


budgets = st.sampled_from([24, 48, 64, 128, 256])


# ---------------------------------------------------------------- properties


@given(documents(), budgets)
@settings(max_examples=300, deadline=None)
def test_every_chunk_fits_the_model_window_title_included(doc: Doc, max_tokens: int) -> None:
    for count in (words, bytes_estimate):
        for c in chunk(doc, max_tokens, count):
            assert count(c.text) <= max_tokens
            assert c.text.startswith(TITLE + "\n\n")


@given(documents(), budgets)
@settings(max_examples=300, deadline=None)
def test_chunks_cover_the_text_once_in_order_and_are_hashed_as_embedded(doc: Doc, max_tokens: int) -> None:
    text, _ = render(doc)
    chunks = chunk(doc, max_tokens)
    # A long code block is re-fenced piece by piece: fences may repeat, nothing else may.
    body_words = [w for c in chunks for w in c.text.split()[len(TITLE.split()) :] if w != "```"]
    assert body_words == [w for w in text.split() if w != "```"]
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.content_hash == hashlib.sha256(c.text.encode()).hexdigest()


@given(documents(), budgets)
@settings(max_examples=200, deadline=None)
def test_a_chunk_never_spans_two_sections(doc: Doc, max_tokens: int) -> None:
    for c in chunk(doc, max_tokens):
        sections_seen = {s for s, blocks in enumerate(doc) for b in blocks if b.marker().search(c.text)}
        assert len(sections_seen) == 1


@given(documents(), budgets)
@settings(max_examples=100, deadline=None)
def test_chunking_is_deterministic(doc: Doc, max_tokens: int) -> None:
    assert chunk(doc, max_tokens) == chunk(doc, max_tokens)


@given(documents(), st.sampled_from([8, 12, 24, 48]))
@settings(max_examples=300, deadline=None)
def test_probing_a_long_piece_by_its_opening_cuts_the_same_chunks(doc: Doc, max_tokens: int) -> None:
    # Small budgets make the generated paragraphs long enough to be probed (16 characters a token).
    for count in (words, bytes_estimate):
        probed = chunk(doc, max_tokens, count)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(chunking, "PROBE_CHARS_PER_TOKEN", 10**9)
            exact = chunk(doc, max_tokens, count)
        assert probed == exact


def recording_lengths() -> tuple[Callable[[str], int], list[int]]:
    """``words``, noting the length of every piece it is asked to count."""
    seen: list[int] = []

    def counting(piece: str) -> int:
        seen.append(len(piece))
        return words(piece)

    return counting, seen


def test_a_whole_attachment_is_never_counted_at_once() -> None:
    """A 150 KiB text with no blank line is one block; the counter only ever sees pieces far shorter."""
    line = "Notes for Runbook 12 (page 100012), step by step.\n"
    text = (line * 4000)[:150_000]
    counting, seen = recording_lengths()
    chunks = chunk_entity(TITLE, text, [], max_tokens=256, count_tokens=counting)
    assert max(seen) <= 16 * 256
    assert chunks == chunk_entity(TITLE, text, [], max_tokens=256, count_tokens=words)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chunking, "PROBE_CHARS_PER_TOKEN", 10**9)
        seen.clear()
        assert chunk_entity(TITLE, text, [], max_tokens=256, count_tokens=counting) == chunks
        assert max(seen) == len(text.strip())  # without the probe: counted whole


def test_a_long_piece_of_sparse_tokens_still_gets_its_exact_count() -> None:
    # Long words: the opening's cost does not exceed the budget, so the piece is counted whole and fits.
    text = " ".join(["x" * 60] * 60)  # 3,659 characters, 60 tokens under ``words``
    counting, seen = recording_lengths()
    chunks = chunk_entity(TITLE, text, [], max_tokens=64, count_tokens=counting)
    assert len(seen) and max(seen) == len(text)
    assert [c.text for c in chunks] == [f"{TITLE}\n\n{text}"]


@given(documents(), budgets, st.data())
@settings(max_examples=500, deadline=None)
def test_rewording_a_paragraph_changes_exactly_the_chunks_that_hold_it(
    doc: Doc, max_tokens: int, data: st.DataObject
) -> None:
    positions = paragraph_positions(doc)
    if not positions:
        return
    s, i = data.draw(st.sampled_from(positions))
    before_block, after_doc = doc[s][i], edit(doc, s, i)
    after_block = after_doc[s][i]
    before, after = chunk(doc, max_tokens), chunk(after_doc, max_tokens)

    untouched_before = Counter(c.content_hash for c in before if not before_block.marker().search(c.text))
    untouched_after = Counter(c.content_hash for c in after if not after_block.marker().search(c.text))
    assert untouched_before == untouched_after
    old_hashes = {c.content_hash for c in before}
    assert all(c.content_hash not in old_hashes for c in after if after_block.marker().search(c.text))


@given(documents(), budgets, st.data())
@settings(max_examples=500, deadline=None)
def test_resizing_a_paragraph_never_both_drops_and_adds_chunks_that_do_not_hold_it(
    doc: Doc, max_tokens: int, data: st.DataObject
) -> None:
    """Growing a paragraph may split its range (new neighbours, none lost); shrinking may merge it
    (neighbours absorbed, none new); chunks outside the paragraph's heading group never change."""
    positions = paragraph_positions(doc)
    if not positions:
        return
    s, i = data.draw(st.sampled_from(positions))
    lengths = tuple(data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=8)))
    before_block, after_doc = doc[s][i], edit(doc, s, i, lengths)
    after_block = after_doc[s][i]
    before, after = chunk(doc, max_tokens), chunk(after_doc, max_tokens)

    untouched_before = {c.content_hash for c in before if not before_block.marker().search(c.text)}
    untouched_after = {c.content_hash for c in after if not after_block.marker().search(c.text)}
    assert untouched_before <= untouched_after or untouched_after <= untouched_before

    group = heading_group(doc, s, i)
    outside = [b for b in (blk for sec in doc for blk in sec) if b not in group]
    for c in before:
        if any(b.marker().search(c.text) for b in outside):
            assert c.content_hash in {a.content_hash for a in after}


def heading_group(doc: Doc, section: int, index: int) -> set[Block]:
    blocks = doc[section]
    start = max([j for j in range(index + 1) if blocks[j].kind == "heading"], default=0)
    end = next((j for j in range(index + 1, len(blocks)) if blocks[j].kind == "heading"), len(blocks))
    return set(blocks[start:end])


# ---------------------------------------------------------------- examples


def test_title_change_rehashes_every_chunk() -> None:
    text = "First paragraph here.\n\nSecond paragraph here."
    a = chunk_entity("Old", text, [], max_tokens=8, count_tokens=words)
    b = chunk_entity("New", text, [], max_tokens=8, count_tokens=words)
    assert len(a) == len(b) == 2
    assert not {c.content_hash for c in a} & {c.content_hash for c in b}


def test_short_thread_replies_are_one_chunk_each() -> None:
    replies = ["Deploy is failing on staging.", "Which job?", "The migrate step, log attached."]
    text = "\n\n".join(replies)
    chunks = chunk_entity("#ops thread", text, replies, max_tokens=256, count_tokens=words)
    assert [c.text for c in chunks] == [f"#ops thread\n\n{r}" for r in replies]


def test_a_comment_boundary_splits_even_when_both_would_fit_together() -> None:
    description = "The login page returns 500."
    comment = "Reproduced on Firefox too."
    text = f"{description}\n\n{comment}"
    chunks = chunk_entity("PROJ-1 Login broken", text, [comment], max_tokens=256, count_tokens=words)
    assert [c.text.split("\n\n", 1)[1] for c in chunks] == [description, comment]


def test_a_fenced_code_block_with_blank_lines_stays_whole() -> None:
    code = "```python\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n```"
    text = f"Intro paragraph.\n\n{code}\n\nOutro paragraph."
    chunks = chunk_entity("T", text, [], max_tokens=256, count_tokens=words)
    assert len(chunks) == 1 and code in chunks[0].text


def test_headings_start_a_new_chunk_only_when_the_section_does_not_fit() -> None:
    text = "# A\n\none two three\n\n# B\n\nfour five six"
    assert len(chunk_entity("T", text, [], max_tokens=256, count_tokens=words)) == 2
    assert split_sections(text, []) == [text]


def test_an_overlong_paragraph_is_cut_at_sentence_ends() -> None:
    sentences = [f"Sentence {n} has exactly seven words here." for n in range(30)]
    text = " ".join(sentences)
    chunks = chunk_entity("T", text, [], max_tokens=40, count_tokens=words)
    assert len(chunks) > 1
    for c in chunks:
        body = c.text.split("\n\n", 1)[1]
        assert body.endswith(".") and body.startswith("Sentence")


def test_a_giant_token_is_cut_by_characters_within_budget() -> None:
    blob = "x" * 5000
    chunks = chunk_entity("T", f"Attached:\n\n{blob}", [], max_tokens=64, count_tokens=bytes_estimate)
    assert all(bytes_estimate(c.text) <= 64 for c in chunks)
    assert "".join(c.text.split("\n\n", 1)[1] for c in chunks[1:]) == blob


def test_a_long_title_is_shortened_to_leave_room_for_content() -> None:
    title = " ".join(f"word{n}" for n in range(100))
    chunks = chunk_entity(title, "Body text.", [], max_tokens=32, count_tokens=words)
    assert len(chunks) == 1 and chunks[0].text.endswith("Body text.") and words(chunks[0].text) <= 32


def test_sections_not_found_in_the_text_are_ignored_and_sections_stand_in_for_empty_text() -> None:
    assert split_sections("alpha\n\nbeta", ["missing", "beta"]) == ["alpha", "beta"]
    chunks = chunk_entity("T", "", ["one reply", "another reply"], max_tokens=64, count_tokens=words)
    assert [c.text for c in chunks] == ["T\n\none reply", "T\n\nanother reply"]


def test_empty_entity_has_no_chunks() -> None:
    assert chunk_entity("T", "  \n\n ", [], max_tokens=64, count_tokens=words) == []


@given(st.lists(st.sampled_from(["T\n\na", "T\n\nb", "T\n\nc", "T\n\nd"]), max_size=12))
def test_distinct_chunks_keep_each_text_once_at_its_first_place(texts: list[str]) -> None:
    chunks = [Chunk(i, t, hashlib.sha256(t.encode()).hexdigest()) for i, t in enumerate(texts)]
    kept = distinct_chunks(chunks)
    assert [c.text for c in kept] == list(dict.fromkeys(texts))
    assert [c.ordinal for c in kept] == list(range(len(kept)))
    assert all(c.content_hash == hashlib.sha256(c.text.encode()).hexdigest() for c in kept)
    assert distinct_chunks(kept) == kept


def test_a_log_repeating_one_line_is_a_few_distinct_chunks() -> None:
    """The shape of a log or export attachment: one line thousands of times packs into identical chunks."""
    line = "2024-05-01 WARN replica lag above threshold on db-2\n"
    chunks = chunk_entity(TITLE, line * 3000, [], max_tokens=64, count_tokens=words)
    kept = distinct_chunks(chunks)
    assert len(chunks) > 100 and len(kept) <= 3
    assert {c.text for c in kept} == {c.text for c in chunks}
