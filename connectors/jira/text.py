"""Jira rich text -> clean text: ADF (Cloud, REST v3) and wiki markup (Server/DC, REST v2).

Clean text keeps the words, the links (``text (url)``), mentions as ``@Name`` and block structure as
blank-line separated blocks (list items on their own lines, table cells joined by `` | ``); it drops
formatting, macros and colours. Both functions are pure and never raise on odd input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from connectors.payload import JSON_OBJECT

_CONTAINERS = frozenset(
    {
        "doc",
        "blockquote",
        "layoutSection",
        "layoutColumn",
        "bodiedExtension",
        "mediaGroup",
        "extensionFrame",
        "multiBodiedExtension",
    }
)
_TEXT_BLOCKS = frozenset({"paragraph", "heading", "decisionItem", "taskItem", "caption"})
_LIST_BLOCKS = frozenset({"bulletList", "orderedList", "taskList", "decisionList"})


def to_text(value: Any) -> str:
    """ADF document, wiki string or None -> clean text."""
    if value is None:
        return ""
    if isinstance(value, JSON_OBJECT):
        return adf_to_text(value)
    if isinstance(value, str):
        return wiki_to_text(value)
    return ""


def adf_to_text(doc: Mapping[str, Any]) -> str:
    """Atlassian Document Format -> clean text. Every node type the ADF spec lists is rendered; an
    unknown node keeps the text of its children; a truncated document renders what is there."""
    blocks: list[str] = []
    _adf_block(doc, blocks)
    return _normalise("\n\n".join(b for b in blocks if b.strip()))


def mention_targets(value: Any) -> list[str]:
    """Who a rich text mentions, as the source names them: ADF ``mention`` ids (Cloud account ids) and
    wiki ``[~accountid:…]`` / ``[~name]`` targets, in order, without repeats."""
    found: list[str] = []
    if isinstance(value, str):
        found = [m.group(1) for m in _WIKI_MENTION_RE.finditer(value)]
    elif isinstance(value, JSON_OBJECT):
        # Depth-first in document order: children pushed reversed onto the end of the stack (popping
        # the front of a list and splicing into it is quadratic in a long document).
        # Only objects that can hold a mention are pushed (a mention, or a node with content): most nodes
        # are text leaves, read once here instead of pushed and popped (-13 % of the walk, decision 97).
        stack: list[Mapping[str, Any]] = [value]
        while stack:
            node = stack.pop()
            if node.get("type") == "mention" and _attrs(node).get("id"):
                found.append(str(_attrs(node)["id"]))
            content = node.get("content")
            if isinstance(content, list):
                for child in reversed(content):
                    if isinstance(child, JSON_OBJECT) and (
                        child.get("content") is not None or child.get("type") == "mention"
                    ):
                        stack.append(child)
    return list(dict.fromkeys(f for f in found if f))


def _children(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = node.get("content")
    return [c for c in content if isinstance(c, JSON_OBJECT)] if isinstance(content, list) else []


def _attrs(node: Mapping[str, Any]) -> Mapping[str, Any]:
    attrs = node.get("attrs")
    # Most nodes have none: None is answered before the Mapping ABC's Python-level check.
    return attrs if attrs is not None and isinstance(attrs, JSON_OBJECT) else {}


def _adf_block(node: Mapping[str, Any], out: list[str]) -> None:
    kind = node.get("type")
    attrs = _attrs(node)
    if kind in _LIST_BLOCKS:
        out.append("\n".join(_list_lines(node, 0)))
    elif kind == "table":
        rows = []
        for row in _children(node):
            cells = [_block_text(cell).replace("\n", " ").strip() for cell in _children(row)]
            rows.append(" | ".join(cells))
        out.append("\n".join(rows))
    elif kind == "codeBlock":
        lang = str(attrs.get("language") or "")
        out.append(f"```{lang}\n{_inline_all(node)}\n```")
    elif kind == "panel":
        # Its content as a block of its own; no "Info:" label, which wiki markup's panels do not carry
        # either (the same issue must read the same through REST v2 and v3).
        out.append(_block_text(node))
    elif kind in ("expand", "nestedExpand"):
        title = str(attrs.get("title") or "").strip()
        body = _block_text(node)
        out.append(f"{title}\n{body}" if title else body)
    elif kind in ("blockCard", "embedCard"):
        url = str(attrs.get("url") or _dig_url(attrs) or "")
        if url:
            out.append(f"Link: {url}")
    elif kind in ("mediaSingle", "media", "mediaInline"):
        text = _media(node)
        if text:
            out.append(text)
    elif kind in ("rule", "extension"):
        return
    elif kind in _CONTAINERS or kind is None or (kind not in _TEXT_BLOCKS and _has_block_child(node)):
        for child in _children(node):
            if _is_block(child):
                _adf_block(child, out)
            else:
                out.append(_inline(child))
    else:
        # paragraph, heading, and any unknown node: its inline text.
        out.append(_inline_all(node) if node.get("type") != "text" else _inline(node))


def _block_text(node: Mapping[str, Any]) -> str:
    parts: list[str] = []
    _adf_block({"type": "doc", "content": _children(node)}, parts)
    return "\n".join(p for p in parts if p.strip())


def _has_block_child(node: Mapping[str, Any]) -> bool:
    return any(_is_block(c) for c in _children(node))


def _is_block(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind in _CONTAINERS or kind in _TEXT_BLOCKS or kind in _LIST_BLOCKS or kind in _BLOCK_ONLY


_BLOCK_ONLY = frozenset(
    {"table", "rule", "listItem", "codeBlock", "panel", "expand", "nestedExpand", "blockCard", "embedCard",
     "mediaSingle", "mediaGroup", "extension"}
)  # fmt: skip


def _list_lines(node: Mapping[str, Any], depth: int) -> list[str]:
    kind = node.get("type")
    start = _attrs(node).get("order")
    number = start if isinstance(start, int) and start >= 0 else 1
    lines: list[str] = []
    for item in _children(node):
        if kind == "orderedList":
            marker = f"{number}."
            number += 1
        elif item.get("type") == "taskItem":
            marker = "- [x]" if _attrs(item).get("state") == "DONE" else "- [ ]"
        elif item.get("type") == "decisionItem":
            marker = "- Decision:"
        else:
            marker = "-"
        text_parts: list[str] = []
        nested: list[str] = []
        if item.get("type") in ("taskItem", "decisionItem"):
            text_parts.append(_inline_all(item))
        else:
            for child in _children(item):
                if child.get("type") in _LIST_BLOCKS:
                    nested.extend(_list_lines(child, depth + 1))
                elif _is_block(child) and child.get("type") not in _TEXT_BLOCKS:
                    text_parts.append(_block_text(child))
                else:
                    text_parts.append(_inline_all(child))
        lines.append("  " * depth + marker + " " + " ".join(p.strip() for p in text_parts if p.strip()))
        lines.extend(nested)
    return lines


def _inline_all(node: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for child in _children(node):
        kind = child.get("type")
        if kind == "text":
            # Most inline nodes: plain text without marks is its own rendering (what _inline returns for
            # it), read here without a call per node (decision 99).
            text = child.get("text")
            parts.append(text if child.get("marks") is None and type(text) is str else _inline(child))
        elif kind in _TEXT_BLOCKS:
            parts.append(_inline_all(child) + "\n")
        elif not isinstance(child.get("content"), list):
            parts.append(_inline(child))
        else:
            parts.append(_inline_all(child))
    return _space_cards("".join(parts)).strip("\n")


_CARD_MARK = "\x00"


def _space_cards(text: str) -> str:
    """Inline cards and statuses sit between words without spaces in ADF; give them one on each side."""
    if _CARD_MARK not in text:
        return text  # every pattern below needs a mark; a scan for one char is far cheaper than three
    text = re.sub(rf"(^|\n)[ ]*{_CARD_MARK}+[ ]*", r"\1", text)
    text = re.sub(rf"[ ]*{_CARD_MARK}+[ ]*(?=\n|$)", "", text)
    return re.sub(rf"[ ]*{_CARD_MARK}+[ ]*", " ", text)


def _inline(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    if kind == "text":  # most inline nodes: no attributes to read
        text = str(node.get("text") or "")
        marks = node.get("marks")
        for mark in marks if isinstance(marks, list) else []:
            if isinstance(mark, JSON_OBJECT) and mark.get("type") == "link":
                href = str(_attrs(mark).get("href") or "")
                if href and href != text:
                    text = f"{text} ({href})"
        return text
    if kind == "hardBreak":
        return "\n"
    attrs = _attrs(node)
    if kind == "mention":
        label = str(attrs.get("text") or attrs.get("id") or "")
        return label if label.startswith("@") else f"@{label}"
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName") or "")
    if kind in ("inlineCard", "blockCard", "embedCard"):
        url = str(attrs.get("url") or _dig_url(attrs) or "")
        return f"{_CARD_MARK}{url}{_CARD_MARK}" if url else ""
    if kind == "status":
        text = str(attrs.get("text") or "")
        return f"{_CARD_MARK}[{text}]{_CARD_MARK}" if text else ""
    if kind == "placeholder":
        return ""  # an editor hint ("Type here..."), not content
    if kind == "date":
        return _adf_date(attrs.get("timestamp"))
    if kind in ("media", "mediaInline"):
        return _media(node)
    if kind in ("inlineExtension", "extension"):
        return str(attrs.get("text") or "")
    if isinstance(node.get("content"), list):
        return _inline_all(node)
    return str(node.get("text") or "") if isinstance(node.get("text"), str) else ""


def _media(node: Mapping[str, Any]) -> str:
    for child in [node, *_children(node)]:
        attrs = _attrs(child)
        label = attrs.get("alt") or attrs.get("name") or attrs.get("filename")
        if label:
            return f"[{child.get('type') or 'media'}: {label}]"
        if child.get("type") == "caption":
            return _inline_all(child)
    return ""


def _dig_url(attrs: Mapping[str, Any]) -> str | None:
    data = attrs.get("data")
    if isinstance(data, JSON_OBJECT):
        url = data.get("url") or data.get("@id")
        return str(url) if url else None
    return None


def _adf_date(value: Any) -> str:
    """ADF date nodes carry epoch milliseconds; wiki shows the same date as YYYY-MM-DD."""
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC).date().isoformat()
    except (TypeError, ValueError, OverflowError, OSError):
        return str(value or "")


# ---------------------------------------------------------------- wiki markup

_WIKI_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\{(?:code|noformat)(?::[^}]*)?\}"), ""),
    (
        re.compile(r"\{(?:panel|quote|color|expand|section|column|anchor|info|note|tip|warning)(?::[^}]*)?\}"),
        "",
    ),
    (re.compile(r"\{\{([^}]*)\}\}"), r"\1"),
    (re.compile(r"\[~(?:accountid:)?([^\]]+)\]"), r"@\1"),
    (re.compile(r"\[([^\]|\[]+)\|([^\]\[]+)\]"), r"\1 (\2)"),
    (re.compile(r"\[((?:https?|mailto):[^\]\[]+)\]"), r"\1"),
    (re.compile(r"![^!\s][^!\n]*!"), ""),
    (re.compile(r"^h[1-6]\.\s*", re.MULTILINE), ""),
    (re.compile(r"^bq\.\s*", re.MULTILINE), ""),
    (re.compile(r"^----+\s*$", re.MULTILINE), ""),
    (re.compile(r"\*(?<![\w*]\*)(\S(?:[^*\n]*\S)?)\*(?![\w*])"), r"\1"),
    (re.compile(r"_(?<![\w_]_)(\S(?:[^_\n]*\S)?)_(?![\w_])"), r"\1"),
    (re.compile(r"\+(?<![\w+]\+)(\S(?:[^+\n]*\S)?)\+(?![\w+])"), r"\1"),
    (re.compile(r"\?(?<![\w?]\?)\?(\S(?:[^?\n]*\S)?)\?\?(?![\w?])"), r"\1"),
    (re.compile(r"-(?<!\S-)(\S(?:[^-\n]*\S)?)-(?!\S)"), r"\1"),
    (re.compile(r"\\\\"), "\n"),
    (re.compile(r"\\([-*_+?{}\[\]!|#^~])"), r"\1"),
)
_TABLE_RE = re.compile(r"^\s*\|\|?(.*?)\|?\|?\s*$")
_WIKI_MENTION_RE = re.compile(r"\[~((?:accountid:)?[^\]\s|]+)\]")


_WIKI_CODE_RE = re.compile(r"\{code(?::([^}]*))?\}\n?(.*?)\n?\{code\}", re.DOTALL)
_WIKI_LIST_RE = re.compile(r"^\s*([*#-]+)\s+(.*)$")


def _wiki_code(match: re.Match[str]) -> str:
    """``{code:python}…{code}`` -> a fenced block, as ADF's codeBlock renders (language kept)."""
    params = match.group(1) or ""
    lang = next((p.split("=", 1)[1] for p in params.split("|") if p.startswith("language=")), None)
    if lang is None and params and "=" not in params:
        lang = params.split("|", 1)[0]
    return f"```{lang or ''}\n{match.group(2)}\n```"


def _wiki_lists(text: str) -> str:
    """``#`` lists numbered (1., 2., per depth) and ``*``/``-`` lists as ``-``, nested by indent."""
    counters: list[int] = []
    lines = []
    for line in text.split("\n"):
        m = _WIKI_LIST_RE.match(line)
        if not m or (m.group(1) == "-" * len(m.group(1)) and len(m.group(1)) > 1):
            counters = []
            lines.append(line)
            continue
        marks = m.group(1)
        depth = len(marks) - 1
        counters = counters[: depth + 1] + [0] * (depth + 1 - len(counters))
        if marks.endswith("#"):
            counters[depth] += 1
            lines.append(f"{'  ' * depth}{counters[depth]}. {m.group(2)}")
        else:
            lines.append(f"{'  ' * depth}- {m.group(2)}")
    return "\n".join(lines)


def wiki_to_text(markup: str) -> str:
    """Jira wiki markup -> clean text."""
    text = _WIKI_CODE_RE.sub(_wiki_code, markup.replace("\r\n", "\n"))
    text = _wiki_lists(text)
    for pattern, repl in _WIKI_RULES:
        text = pattern.sub(repl, text)
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in re.split(r"\|\|?", line.strip().strip("|"))]
            line = " | ".join(c for c in cells if c)
        lines.append(line)
    return _normalise("\n".join(lines))


def _normalise(text: str) -> str:
    text = text.replace("\u00a0", " ")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
