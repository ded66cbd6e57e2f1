"""Entity text -> embeddable chunks (seed 000: content is embedded per fragment with a content hash).

Pure and deterministic: the same title, text, sections and token budget always give the same chunks,
so a chunk's ``content_hash`` decides on re-sync whether it must be re-embedded.

How boundaries are chosen, and why:

1. ``sections`` (comment boundaries in a ticket, replies in a thread) split the text first; no chunk
   ever spans two sections, so a new comment never disturbs the chunks of the others.
2. Inside a section the text is cut into blocks: paragraphs, headings, list items and fenced code
   blocks (a code block stays whole even when it contains blank lines).
3. A heading starts a new group; the blocks of a group are packed into one chunk when they fit.
4. A group that does not fit is halved *by block index* (not by size) and each half is packed the
   same way, recursively. Because split points depend on block positions, never on their sizes,
   an edit to block k can only change chunks of the ranges on k's own path: every chunk elsewhere
   keeps its exact text and hash. Greedy size-based packing would let an edit shift every later
   boundary of the section. The price is a few more, somewhat smaller chunks than greedy packing.
5. A single block over budget is cut at sentence ends (lines for code), then at words, then (one
   giant token such as a base64 blob) at characters, and those pieces are packed greedily: they all
   belong to the edited block anyway.

Every chunk's text is ``"<title>\\n\\n<body>"`` (the title gives a short reply its context) and
``content_hash`` is the sha256 of exactly that text, so renaming an entity re-embeds it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.digest import sha256_hex

CountTokens = Callable[[str], int]

_SEP = "\n\n"
# A piece over twice this many characters per token of the budget is first probed by its opening this
# long (_Budget._bound): English runs ~4-5 characters a token, Cyrillic under the local model ~2; a text
# sparser than 16 still gets its exact count.
PROBE_CHARS_PER_TOKEN = 16
# The title is context, not content: it may take at most this share of a chunk's budget.
_TITLE_SHARE = 4

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6}\s+\S|h[1-6]\.\s)")
_LIST_ITEM = re.compile(r"^\s{0,3}([-*+•]|\d{1,9}[.)])\s+\S")
# A sentence ends at . ! ? … (optionally closed by quotes/brackets) followed by whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+")
_WORD_GAP = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    ordinal: int  # position within the entity, from 0
    text: str  # exactly what is embedded: title, blank line, body
    content_hash: str  # sha256 hex of ``text``


Identity = tuple[str, str]  # an entity's (source_type, source_entity_id)


@dataclass(slots=True)
class Ready:
    """Chunks cut and vectors computed ahead of a page's transaction (app/vector/stage.py ``prepare``),
    handed to the transaction's ``apply`` so it neither cuts nor embeds them again."""

    vectors: dict[str, str] = field(default_factory=dict)  # content hash -> pgvector text
    cut: dict[Identity, list[Chunk]] = field(default_factory=dict)  # per entity: its last sighting's chunks

    def merge(self, other: Ready) -> None:
        self.vectors.update(other.vectors)
        self.cut.update(other.cut)


def chunk_entity(
    title: str,
    text: str,
    sections: Sequence[str],
    *,
    max_tokens: int,
    count_tokens: CountTokens,
) -> list[Chunk]:
    """Split an entity into chunks of at most ``max_tokens`` model tokens each (title included).

    ``count_tokens`` is the embedding model's counter (special tokens included); ``sections`` are
    substrings of ``text`` at whose start the text is split, in order. A section not found in
    ``text`` is ignored (``text`` is what gets embedded); when ``text`` is empty the sections
    themselves are the text.
    """
    if max_tokens < 8:
        raise ValueError("max_tokens must leave room for a title and some text")
    budget = _Budget(count_tokens, max_tokens)
    prefix = _title_prefix(title.strip(), budget, max_tokens // _TITLE_SHARE)
    body_budget = max_tokens - budget.overhead - (budget.cost(prefix) + budget.sep if prefix else 0)

    if not text.strip() and sections:
        text = _SEP.join(sections)
    bodies: list[str] = []
    for section in split_sections(text, sections):
        for group in _groups(_blocks(section)):
            bodies.extend(_pack_range(group, budget, body_budget))
    chunks: list[Chunk] = []
    for body in bodies:
        embedded = f"{prefix}{_SEP}{body}" if prefix else body
        digest = sha256_hex(embedded.encode("utf-8"))  # keeps the interpreter lock (app/digest.py)
        chunks.append(Chunk(ordinal=len(chunks), text=embedded, content_hash=digest))
    return chunks


def distinct_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` with each text once, at its first place, renumbered from 0 (decision 128).

    A text repeated inside one entity (a log or export attachment repeating its lines, a template
    pasted twice) packs into identical chunks: each would be stored with the same vector and cost
    the vector index an insert, and a query near that text would find several copies of one entity
    among its nearest neighbours instead of other entities. One copy answers every query the others
    would. Ordinals stay dense, so the stored tail past the last one is still what a shorter text
    drops (app/vector/stage.py).
    """
    seen: set[str] = set()
    out: list[Chunk] = []
    for c in chunks:
        if c.content_hash in seen:
            continue
        seen.add(c.content_hash)
        out.append(c if c.ordinal == len(out) else Chunk(len(out), c.text, c.content_hash))
    return out


def split_sections(text: str, sections: Sequence[str]) -> list[str]:
    """``text`` cut at the start of each section found in it (searched in order), blanks dropped."""
    cuts = [0]
    cursor = 0
    for section in sections:
        needle = section.strip()
        if not needle:
            continue
        found = text.find(needle, cursor)
        if found < 0:
            continue
        cuts.append(found)
        cursor = found + len(needle)
    cuts.append(len(text))
    parts = (text[a:b].strip() for a, b in itertools.pairwise(cuts))
    return [part for part in parts if part]


# ---------------------------------------------------------------- token accounting


class _Budget:
    """Token costs of text pieces without the model's fixed per-input overhead ([CLS]/[SEP]).

    Pieces are joined at whitespace, and WordPiece/BPE tokens do not cross whitespace, so the cost of
    a join is (to within a token per separator, counted conservatively) the sum of its parts: the
    tokenizer runs once per piece instead of once per candidate chunk.
    """

    def __init__(self, count_tokens: CountTokens, max_tokens: int) -> None:
        self._count = count_tokens
        self.max_tokens = max_tokens
        self.overhead = count_tokens("")
        self.sep = max(0, count_tokens(_SEP) - self.overhead)
        self._cache: dict[str, int] = {}
        self._probe = PROBE_CHARS_PER_TOKEN * max_tokens

    def cost(self, piece: str) -> int:
        """The piece's exact cost when that is at most ``max_tokens``; above it, a lower bound that is
        itself above ``max_tokens``. Every limit the chunker compares a cost or a sum of costs with is at
        most ``max_tokens``, so each comparison comes out as it would with the exact count."""
        cached = self._cache.get(piece)
        if cached is None:
            cached = self._bound(piece) if len(piece) > 2 * self._probe else None
            if cached is None:
                cached = max(0, self._count(piece) - self.overhead)
            self._cache[piece] = cached
        return cached

    def _bound(self, piece: str) -> int | None:
        """The cost of the piece's opening words when they alone exceed ``max_tokens``, else None.

        A whole attachment (up to 256 KiB, one paragraph when it has no blank line) is only ever asked
        whether it fits; a tokenizer takes ~0.5 ms a KiB to say no, holding the interpreter lock (74 ms for
        150 KiB with the local model) while the run's fetch and writes wait. Cut before a whitespace
        character, the opening's tokens are the first tokens of the whole (tokens do not cross whitespace),
        so its cost is a lower bound of the whole's."""
        window = piece[: self._probe]
        cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        if cut <= 0:
            return None  # one giant token (base64): counted whole, as it tokenizes on its own terms
        opening = max(0, self._count(piece[:cut]) - self.overhead)
        return opening if opening > self.max_tokens else None

    def cost_uncached(self, piece: str) -> int:
        return max(0, self._count(piece) - self.overhead)

    def joined(self, pieces: Sequence[str], sep_cost: int) -> int:
        return sum(self.cost(p) for p in pieces) + sep_cost * max(0, len(pieces) - 1)


def _title_prefix(title: str, budget: _Budget, limit: int) -> str:
    if not title or budget.cost(title) <= limit:
        return title
    words = title.split()
    kept = _longest_prefix(len(words), lambda n: budget.cost_uncached(" ".join(words[:n])) <= limit)
    if kept:
        return " ".join(words[:kept])
    return title[: _longest_prefix(len(title), lambda n: budget.cost_uncached(title[:n]) <= limit)]


def _longest_prefix(size: int, fits: Callable[[int], bool]) -> int:
    """Largest n in [0, size] with fits(n), for fits monotone (binary search)."""
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---------------------------------------------------------------- blocks and groups


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    kind: str  # paragraph | heading | list_item | code


def _blocks(section: str) -> list[_Block]:
    """Paragraphs, headings, list items and fenced code blocks, in order."""
    blocks: list[_Block] = []
    lines: list[str] = []
    kind = "paragraph"

    def flush() -> None:
        nonlocal lines, kind
        body = "\n".join(lines).strip("\n")
        if body.strip():
            blocks.append(_Block(body, kind))
        lines, kind = [], "paragraph"

    in_code = False
    fence = ""
    for line in section.splitlines():
        if in_code:
            lines.append(line)
            if line.strip().startswith(fence):
                in_code = False
                flush()
            continue
        opening = _FENCE.match(line)
        if opening:
            flush()
            in_code, fence, kind = True, opening.group(1), "code"
            lines.append(line)
        elif not line.strip():
            flush()
        elif _HEADING.match(line):
            flush()
            blocks.append(_Block(line.strip(), "heading"))
        elif _LIST_ITEM.match(line):
            flush()
            kind = "list_item"
            lines.append(line)
        else:
            lines.append(line)
    flush()  # an unclosed fence runs to the end of the section
    return blocks


def _groups(blocks: list[_Block]) -> list[list[str]]:
    """Runs of blocks, each heading opening a new run (a heading stays with what it introduces)."""
    groups: list[list[str]] = []
    for block in blocks:
        if block.kind == "heading" or not groups:
            groups.append([])
        groups[-1].append(block.text)
    return groups


# ---------------------------------------------------------------- packing


def _pack_range(blocks: Sequence[str], budget: _Budget, limit: int) -> list[str]:
    """One body for the blocks if they fit, else each index-half packed the same way."""
    if budget.joined(blocks, budget.sep) <= limit:
        return [_SEP.join(blocks)]
    if len(blocks) == 1:
        return _split_block(blocks[0], budget, limit)
    middle = (len(blocks) + 1) // 2
    return _pack_range(blocks[:middle], budget, limit) + _pack_range(blocks[middle:], budget, limit)


def _split_block(block: str, budget: _Budget, limit: int) -> list[str]:
    """An over-long block cut at sentence ends (lines in code), then words, packed greedily."""
    lines = block.split("\n")
    if _FENCE.match(lines[0]) and len(lines) > 1:
        # Each piece of a long code block is re-fenced, so every chunk still reads as code.
        opening = lines[0]
        closing = lines[-1] if _FENCE.match(lines[-1]) else ""
        inner = "\n".join(lines[1:-1] if closing else lines[1:])
        frame = budget.cost(opening) + budget.cost(closing) + 2 * budget.sep
        pieces = _split_text(inner, re.compile(r"\n"), budget, max(1, limit - frame))
        return [f"{opening}\n{piece}\n{closing}".rstrip("\n") for piece in pieces]
    return _split_text(block, _SENTENCE_END, budget, limit)


def _split_text(block: str, boundary: re.Pattern[str], budget: _Budget, limit: int) -> list[str]:
    units: list[tuple[str, bool]] = []  # (substring with its trailing whitespace, may be merged)
    for sentence in _cut(block, boundary):
        # Costs include the trailing whitespace: free for WordPiece, counted by byte-based estimators.
        if budget.cost(sentence) <= limit:
            units.append((sentence, True))
            continue
        for word in _cut(sentence, _WORD_GAP):
            if budget.cost(word) <= limit:
                units.append((word, True))
            else:
                # Glued back together the character runs would tokenize differently: keep them apart.
                units.extend((run, False) for run in _split_chars(word.strip(), budget, limit))
    runs: list[str] = []
    current, current_cost, mergeable = "", 0, True
    for unit, unit_mergeable in units:
        cost = budget.cost(unit)
        if current and (current_cost + cost > limit or not (mergeable and unit_mergeable)):
            runs.append(_trim(current))
            current, current_cost = "", 0
        current += unit
        current_cost += cost
        mergeable = unit_mergeable
    if current.strip():
        runs.append(_trim(current))
    return runs


def _trim(run: str) -> str:
    # Leading spaces are kept: in code they are indentation.
    return run.rstrip().lstrip("\n")


def _cut(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Substrings of ``text`` ending where ``pattern`` matches (the separator stays with the left)."""
    pieces: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


def _split_chars(word: str, budget: _Budget, limit: int) -> list[str]:
    """A single token-dense string (URL, base64) cut into the longest fitting character runs."""
    out: list[str] = []
    start = 0
    while start < len(word):
        # No token is wider than a few dozen characters, so a piece never needs a longer window.
        rest = word[start : start + 32 * limit]

        def fits(n: int, rest: str = rest) -> bool:
            return budget.cost_uncached(rest[:n]) <= limit

        size = max(1, _longest_prefix(len(rest), fits))
        out.append(rest[:size])
        start += size
    return out
