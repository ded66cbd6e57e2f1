"""Slack message text -> clean text (issue 13, item 4): mrkdwn and Block Kit ``blocks``. Pure; never raises.

mrkdwn (https://api.slack.com/reference/surfaces/formatting): ``<@U…|name>`` -> ``@Name`` (the user's
name from the directory first), ``<#C…|name>`` -> ``#name`` (a label-less one from the channel
directory, else the id; kept as a channel mention either way), ``<!subteam^S…|@team>`` -> ``@team``,
``<!date^…^…|fallback>`` -> the fallback, ``<!here>`` / ``<!channel>`` / ``<!everyone>`` -> ``@here``...,
links -> ``label (url)``; ``*bold*``, ``_italic_``, ``~strike~``, inline code and fences lose their
markers; ``&gt;`` quote markers and HTML escapes are undone.

Blocks (https://api.slack.com/reference/block-kit/blocks): ``rich_text`` (sections, lists numbered when
ordered, preformatted, quotes; text, link, user, channel, usergroup, broadcast, emoji, date elements),
``section`` (text and fields), ``header``, ``context``, ``table``, ``image``, ``video``, ``markdown``;
an unknown block type degrades to every ``text`` string found inside it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectors.payload import JSON_OBJECT

_ANGLE_RE = re.compile(r"<([^<>]+)>")
_FENCE_RE = re.compile(r"```\n?(.*?)\n?```", re.DOTALL)
_CODE_RE = re.compile(r"`([^`\n]+)`")
# Each opens with its marker and checks the character before it after it: a pattern that opens with a
# lookbehind is tried at every position of the text, one that opens with a literal lets the regex engine
# skip ahead to the next marker, with the same matches (tests/connectors/test_slack_text.py, against the
# lookbehind-first form; decisions 93 and 96).
_STYLES = tuple(
    (m, re.compile(rf"{re.escape(m)}(?<![\w{m}]{re.escape(m)})(?=\S)([^{m}\n]*?\S){re.escape(m)}(?![\w{m}])"))
    for m in "*_~"
)
_QUOTE_RE = re.compile(r"^>\s?", re.MULTILINE)
_NON_WORD_RE = re.compile(r"\W+")
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}


@dataclass(slots=True)
class Rendered:
    """Clean text plus what it mentions (user ids, channel ids, URLs), in order, without repeats."""

    text: str = ""
    users: list[str] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def add(self, kind: list[str], value: str) -> None:
        if value and value not in kind:
            kind.append(value)


def render_mrkdwn(
    text: str,
    users: Mapping[str, Mapping[str, Any]],
    channels: Mapping[str, str] | None = None,
    out: Rendered | None = None,
) -> Rendered:
    """mrkdwn -> clean text; mentions collected into ``out`` (a new :class:`Rendered` if None)."""
    out = out if out is not None else Rendered()
    channels = channels or {}

    def repl(match: re.Match[str]) -> str:
        target, _, label = match.group(1).partition("|")
        if target.startswith("@"):
            uid = target[1:]
            out.add(out.users, uid)
            return "@" + (_name(users.get(uid)) or label.lstrip("@") or uid)
        if target.startswith("#"):
            cid = target[1:]
            out.add(out.channels, cid)
            return "#" + (label or channels.get(cid) or cid)
        if target.startswith("!"):
            return _special(target[1:], label)
        url = html.unescape(target)
        out.add(out.links, url)
        return f"{label} ({url})" if label and label != url else url

    # Each pass needs one character to match at all; most messages hold few of them, and a scan for one
    # character costs a fraction of a regex pass (decision 96). A group template is expanded in C, where a
    # function would be called in Python for every match.
    clean = _ANGLE_RE.sub(repl, text) if "<" in text else text
    if "`" in clean:
        clean = _FENCE_RE.sub(r"\1", clean)
        clean = _CODE_RE.sub(r"\1", clean)
    for marker, pattern in _STYLES:
        if marker in clean:
            clean = pattern.sub(r"\1", clean)
    clean = clean.replace("&gt;", ">")
    if ">" in clean:
        clean = _QUOTE_RE.sub("", clean)
    clean = html.unescape(clean)
    out.text = clean.strip()
    return out


def render_blocks(
    blocks: Any,
    users: Mapping[str, Mapping[str, Any]],
    channels: Mapping[str, str] | None = None,
    out: Rendered | None = None,
) -> Rendered:
    """Block Kit blocks -> clean text (blank-line separated blocks); mentions collected into ``out``."""
    out = out if out is not None else Rendered()
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, JSON_OBJECT):
            text = _block(block, users, channels or {}, out).strip()
            if text:
                parts.append(text)
    out.text = "\n\n".join(parts)
    return out


def _block(
    block: Mapping[str, Any], users: Mapping[str, Mapping[str, Any]], ch: Mapping[str, str], out: Rendered
) -> str:
    kind = block.get("type")
    if kind == "rich_text":
        return "\n".join(_rich(e, users, ch, out) for e in _list(block.get("elements")))
    if kind in ("section", "header"):
        texts = [_text_obj(block.get("text"), users, ch, out)]
        texts += [_text_obj(f, users, ch, out) for f in _list(block.get("fields"))]
        return "\n".join(t for t in texts if t)
    if kind == "context":
        return " ".join(t for t in (_element(e, users, ch, out) for e in _list(block.get("elements"))) if t)
    if kind == "markdown":
        return render_mrkdwn(str(block.get("text") or ""), users, ch, Rendered(users=out.users)).text
    if kind == "table":
        rows = []
        for row in _list(block.get("rows")):
            cells = [_cell(c, users, ch, out) for c in _list(row)]
            rows.append(" | ".join(cells))
        return "\n".join(rows)
    if kind in ("image", "video"):
        return " ".join(s for s in (_text_obj(block.get("title"), users, ch, out), _str(block.get("alt_text"))) if s)
    if kind in ("divider", "actions", "input", "file", "call"):
        return ""
    return " ".join(_strings(block))  # unknown block: keep whatever text it carries


def _rich(node: Any, users: Mapping[str, Mapping[str, Any]], ch: Mapping[str, str], out: Rendered) -> str:
    if not isinstance(node, JSON_OBJECT):
        return ""
    kind = node.get("type")
    elements = _list(node.get("elements"))
    if kind == "rich_text_list":
        ordered = node.get("style") == "ordered"
        offset, depth = node.get("offset"), node.get("indent")
        start = offset if isinstance(offset, int) else 0
        indent = "  " * (depth if isinstance(depth, int) else 0)
        lines = []
        for n, item in enumerate(elements, start=start + 1):
            marker = f"{n}." if ordered else "-"
            lines.append(f"{indent}{marker} {_rich(item, users, ch, out).strip()}")
        return "\n".join(lines)
    if kind in ("rich_text_section", "rich_text_preformatted", "rich_text_quote"):
        return "".join(_element(e, users, ch, out) for e in elements)
    return _element(node, users, ch, out)


def _element(e: Any, users: Mapping[str, Mapping[str, Any]], ch: Mapping[str, str], out: Rendered) -> str:
    if not isinstance(e, JSON_OBJECT):
        return ""
    kind = e.get("type")
    if kind in ("text", "plain_text", "mrkdwn"):
        if kind == "mrkdwn":
            return render_mrkdwn(str(e.get("text") or ""), users, ch, _share(out)).text
        return str(e.get("text") or "")
    if kind == "link":
        url = str(e.get("url") or "")
        out.add(out.links, url)
        label = _str(e.get("text"))
        return f"{label} ({url})" if label and label != url else url
    if kind == "user":
        uid = str(e.get("user_id") or "")
        out.add(out.users, uid)
        return "@" + (_name(users.get(uid)) or uid)
    if kind == "channel":
        cid = str(e.get("channel_id") or "")
        out.add(out.channels, cid)
        return "#" + (ch.get(cid) or cid)
    if kind == "usergroup":
        return "@" + str(e.get("usergroup_id") or "group")
    if kind == "broadcast":
        return "@" + str(e.get("range") or "here")
    if kind == "emoji":
        unicode = _emoji(str(e.get("unicode") or ""))
        return unicode or f":{e.get('name') or ''}:"
    if kind == "date":
        return _str(e.get("fallback")) or str(e.get("timestamp") or "")
    if kind == "image":
        return _str(e.get("alt_text")) or ""
    if kind in ("rich_text_section", "rich_text_list", "rich_text_preformatted", "rich_text_quote"):
        return _rich(e, users, ch, out)
    return " ".join(_strings(e))


def _cell(cell: Any, users: Mapping[str, Mapping[str, Any]], ch: Mapping[str, str], out: Rendered) -> str:
    if not isinstance(cell, JSON_OBJECT):
        return str(cell) if isinstance(cell, str | int | float) else ""
    if cell.get("type") == "raw_text":
        return str(cell.get("text") or "")
    if cell.get("type") == "rich_text":
        return " ".join(_rich(e, users, ch, out) for e in _list(cell.get("elements"))).strip()
    return _element(cell, users, ch, out)


def _text_obj(obj: Any, users: Mapping[str, Mapping[str, Any]], ch: Mapping[str, str], out: Rendered) -> str:
    if not isinstance(obj, JSON_OBJECT):
        return ""
    text = str(obj.get("text") or "")
    if obj.get("type") == "mrkdwn":
        return render_mrkdwn(text, users, ch, _share(out)).text
    return text


def _share(out: Rendered) -> Rendered:
    """A Rendered that collects into ``out``'s lists but has its own text."""
    return Rendered(users=out.users, channels=out.channels, links=out.links)


def _special(target: str, label: str) -> str:
    name = target.split("^", 1)[0]
    if name in _SPECIAL:
        return _SPECIAL[name]
    if name == "subteam":
        return label if label.startswith("@") else "@" + (label or target.split("^", 1)[-1])
    if name == "date":
        return label or target.split("^")[-1]
    return label or "@" + name


def _emoji(code: str) -> str:
    if not code:
        return ""
    try:
        return "".join(chr(int(part, 16)) for part in code.split("-"))
    except ValueError:
        return ""


def _strings(value: Any) -> list[str]:
    """Every ``text`` string inside an unknown structure (graceful degradation)."""
    found: list[str] = []
    if isinstance(value, JSON_OBJECT):
        for k, v in value.items():
            if k == "text" and isinstance(v, str) and v.strip():
                found.append(v.strip())
            else:
                found.extend(_strings(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_strings(v))
    return found


def _name(user: Any) -> str | None:
    if not isinstance(user, JSON_OBJECT):
        return None
    return _str(user.get("name")) or _str(user.get("real_name"))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def same_content(text: str, blocks_text: str) -> bool:
    """True when the blocks say what ``text`` already says (Slack sends both for ordinary messages)."""
    a = _NON_WORD_RE.sub("", text).lower()
    b = _NON_WORD_RE.sub("", blocks_text).lower()
    return not b or b in a
