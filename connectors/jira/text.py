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

_BLOCKS = frozenset(
    {
        "doc",
        "paragraph",
        "heading",
        "blockquote",
        "codeBlock",
        "panel",
        "expand",
        "nestedExpand",
        "layoutSection",
        "layoutColumn",
        "bodiedExtension",
        "decisionList",
        "taskList",
        "mediaSingle",
        "mediaGroup",
    }
)


def to_text(value: Any) -> str:
    """ADF document, wiki string or None -> clean text."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return adf_to_text(value)
    if isinstance(value, str):
        return wiki_to_text(value)
    return ""


def adf_to_text(doc: Mapping[str, Any]) -> str:
    """Atlassian Document Format -> clean text."""
    blocks: list[str] = []
    _adf_block(doc, blocks)
    return _normalise("\n\n".join(b for b in blocks if b.strip()))


def _adf_block(node: Mapping[str, Any], out: list[str]) -> None:
    kind = node.get("type")
    content = node.get("content") or []
    if kind in ("bulletList", "orderedList"):
        out.append("\n".join(_list_lines(node, 0)))
    elif kind == "table":
        rows = []
        for row in content:
            cells = [_inline_all(cell).replace("\n", " ").strip() for cell in row.get("content") or []]
            rows.append(" | ".join(c for c in cells))
        out.append("\n".join(rows))
    elif kind == "rule":
        return
    elif kind in _BLOCKS or kind is None:
        if any(isinstance(c, Mapping) and _is_block(c) for c in content):
            for child in content:
                if isinstance(child, Mapping):
                    if _is_block(child):
                        _adf_block(child, out)
                    else:
                        out.append(_inline(child))
        else:
            out.append(_inline_all(node))
    else:
        out.append(_inline(node))


def _is_block(node: Mapping[str, Any]) -> bool:
    return node.get("type") in _BLOCKS or node.get("type") in (
        "bulletList",
        "orderedList",
        "table",
        "rule",
        "listItem",
    )


def _list_lines(node: Mapping[str, Any], depth: int) -> list[str]:
    lines: list[str] = []
    for item in node.get("content") or []:
        if not isinstance(item, Mapping):
            continue
        text_parts: list[str] = []
        nested: list[str] = []
        for child in item.get("content") or []:
            if not isinstance(child, Mapping):
                continue
            if child.get("type") in ("bulletList", "orderedList"):
                nested.extend(_list_lines(child, depth + 1))
            else:
                text_parts.append(_inline_all(child))
        lines.append("  " * depth + "- " + " ".join(p.strip() for p in text_parts if p.strip()))
        lines.extend(nested)
    return lines


def _inline_all(node: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for child in node.get("content") or []:
        if isinstance(child, Mapping):
            if child.get("type") in ("paragraph", "heading"):
                parts.append(_inline_all(child) + "\n")
            elif child.get("content") is not None and child.get("type") not in ("text",):
                parts.append(_inline_all(child))
            else:
                parts.append(_inline(child))
    return "".join(parts).strip("\n")


def _inline(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    attrs = node.get("attrs") or {}
    if kind == "text":
        text = str(node.get("text") or "")
        for mark in node.get("marks") or []:
            if isinstance(mark, Mapping) and mark.get("type") == "link":
                href = str((mark.get("attrs") or {}).get("href") or "")
                if href and href != text:
                    text = f"{text} ({href})"
        return text
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        label = str(attrs.get("text") or attrs.get("id") or "")
        return label if label.startswith("@") else f"@{label}"
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName") or "")
    if kind in ("inlineCard", "blockCard", "embedCard"):
        return str(attrs.get("url") or "")
    if kind in ("status", "placeholder"):
        return str(attrs.get("text") or "")
    if kind == "date":
        return _adf_date(attrs.get("timestamp"))
    if node.get("content"):
        return _inline_all(node)
    return ""


def _adf_date(value: Any) -> str:
    """ADF date nodes carry epoch milliseconds; wiki shows the same date as YYYY-MM-DD."""
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC).date().isoformat()
    except (TypeError, ValueError, OverflowError):
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
    (re.compile(r"^\s*[*#-]+\s+", re.MULTILINE), "- "),
    (re.compile(r"^----+\s*$", re.MULTILINE), ""),
    (re.compile(r"(?<![\w*])\*(\S(?:[^*\n]*\S)?)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w_])_(\S(?:[^_\n]*\S)?)_(?![\w_])"), r"\1"),
    (re.compile(r"(?<![\w+])\+(\S(?:[^+\n]*\S)?)\+(?![\w+])"), r"\1"),
    (re.compile(r"(?<![\w?])\?\?(\S(?:[^?\n]*\S)?)\?\?(?![\w?])"), r"\1"),
    (re.compile(r"(?<!\S)-(\S(?:[^-\n]*\S)?)-(?!\S)"), r"\1"),
    (re.compile(r"\\\\"), "\n"),
    (re.compile(r"\\([-*_+?{}\[\]!|#^~])"), r"\1"),
)
_TABLE_RE = re.compile(r"^\s*\|\|?(.*?)\|?\|?\s*$")


def wiki_to_text(markup: str) -> str:
    """Jira wiki markup -> clean text."""
    text = markup.replace("\r\n", "\n")
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
