"""Confluence storage format (XHTML + ``ac:``/``ri:`` macros) -> readable plain text.

Pure, stdlib only: expat reads a body that is plain XML (nearly all: storage format is XHTML),
``html.parser`` any other, with the same result (decision 75). Structure is kept as blank-line
separated blocks, as ``Entity.text`` asks: headings become ``## Heading``, list items ``- item`` /
``1. item`` (indented when nested), table rows ``cell | cell``, code macros keep their lines verbatim
inside a fenced block.

Besides the text, the parse collects what the mapping turns into edges and refs: links to other
pages (``<ac:link><ri:page .../>``), plain URLs, Jira macro keys, attachment names, user mentions.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from html.entities import html5
from html.parser import HTMLParser
from xml.parsers import expat

_BLOCKS = {"p", "div", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "table", "hr"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Elements whose text is never content: editor placeholders ("Type your summary here") and tasks'
# bookkeeping; a task renders as "- [x] body" / "- [ ] body" from its status.
_HIDDEN = frozenset({"ac:placeholder", "ac:task-id", "ac:task-status", "ac:task-uuid"})
# Macros whose body is code/preformatted text: their lines are kept as they are.
_CODE_MACROS = {"code", "noformat"}
# Macros that render as their own block; any other macro (jira, status, anchor...) is inline.
_BLOCK_MACROS = _CODE_MACROS | {"info", "note", "warning", "tip", "panel", "expand", "excerpt", "details"}


@dataclass(slots=True)
class StorageText:
    text: str
    page_links: list[tuple[str | None, str]] = field(default_factory=list)  # (space key, title)
    urls: list[str] = field(default_factory=list)
    jira_keys: list[str] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)  # account ids / user keys mentioned


class _Reader:
    """What a storage body says, built from its tags and text, whichever tokeniser reads them."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.line: list[str] = []
        self.out = StorageText(text="")
        self.lists: list[list[int]] = []  # stack of [is_ordered, counter]
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.macros: list[str] = []  # stack of open ac:structured-macro names
        self.param: str | None = None  # name of the ac:parameter being read, if any
        self.param_text: list[str] = []
        self.link_body: list[str] | None = None
        self.link_target: str | None = None
        self.href: str | None = None
        self.anchor_text: list[str] = []
        self.heading: int = 0
        self.in_list_block = False
        self.in_table_block = False
        # Depth inside elements whose text is not content: editor hints (ac:placeholder) and task
        # bookkeeping (ac:task-id, ac:task-status, ac:task-uuid).
        self.hidden = 0
        self.task_status: list[str] = []

    # -------------------------------------------------------------- helpers

    def _emit(self, s: str) -> None:
        if self.param is not None:
            self.param_text.append(s)
        elif self.link_body is not None:
            self.link_body.append(s)
        elif self.href is not None:
            self.anchor_text.append(s)
            self._text(s)
        else:
            self._text(s)

    def _text(self, s: str) -> None:
        if self.cell is not None:
            self.cell.append(s)
        else:
            self.line.append(s)

    def _flush(self) -> None:
        raw = "".join(self.line)
        self.line = []
        code = bool(self.macros) and self.macros[-1] in _CODE_MACROS
        text = raw.strip("\n") if code else " ".join(raw.split())
        if not text:
            return
        if code:
            text = f"```\n{text}\n```"
        if self.heading:
            text = "#" * self.heading + " " + text
        if self.lists:
            depth = len(self.lists) - 1
            kind = self.lists[-1]
            marker = f"{kind[1]}." if kind[0] else "-"
            text = "  " * depth + f"{marker} {text}"
            # the items of one list stay in one block
            if self.in_list_block and self.blocks:
                self.blocks[-1] += "\n" + text
                return
            self.in_list_block = True
        else:
            self.in_list_block = False
        self.blocks.append(text)

    # -------------------------------------------------------------- tags

    def start(self, tag: str, a: dict[str, str]) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
            if tag == "ac:task-status":
                self.task_status = []
            return
        if tag == "ac:task":
            self._flush()
            self.task_status = []
        elif tag == "ac:task-body":
            done = "".join(self.task_status).strip() == "complete"
            self._emit("- [x] " if done else "- [ ] ")
        elif tag == "ac:emoticon":
            self._emit(a.get("ac:emoji-fallback") or (f":{a['ac:name']}:" if a.get("ac:name") else ""))
        elif tag == "time" and a.get("datetime"):
            self._emit(a["datetime"])
        if tag in _HEADINGS:
            self._flush()
            self.heading = _HEADINGS[tag]
        elif tag in _BLOCKS:
            self._flush()
            if tag == "table":
                self.in_table_block = False
        elif tag in ("ul", "ol"):
            self._flush()
            self.lists.append([1 if tag == "ol" else 0, 0])
        elif tag == "li":
            self._flush()
            if self.lists:
                self.lists[-1][1] += 1
        elif tag == "tr":
            self._flush()
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "br":
            if self.cell is not None:
                self.cell.append(" ")
            elif self.macros and self.macros[-1] in _CODE_MACROS:
                self.line.append("\n")
            else:
                self._flush()
        elif tag == "a":
            self.href = a.get("href") or None
            self.anchor_text = []
        elif tag == "ac:structured-macro":
            name = a.get("ac:name", "")
            if name in _BLOCK_MACROS:
                self._flush()
            self.macros.append(name)
        elif tag == "ac:parameter":
            self.param = a.get("ac:name", "")
            self.param_text = []
        elif tag == "ac:link":
            self.link_body = []
            self.link_target = None
        elif tag == "ri:page":
            title = a.get("ri:content-title", "")
            if title:
                self.out.page_links.append((a.get("ri:space-key") or None, title))
                self.link_target = title
        elif tag == "ri:attachment":
            name = a.get("ri:filename", "")
            if name:
                self.out.attachments.append(name)
                self.link_target = self.link_target or name
        elif tag == "ri:user":
            uid = a.get("ri:account-id") or a.get("ri:userkey") or a.get("ri:username") or ""
            if uid:
                self.out.users.append(uid)
                self.link_target = "@" + uid
        elif tag == "ri:url":
            url = a.get("ri:value", "")
            if url:
                self.out.urls.append(url)
                self.link_target = url

    def end(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
            return
        if tag == "ac:task":
            self._flush()
        if tag in _HEADINGS:
            self._flush()
            self.heading = 0
        elif tag in _BLOCKS:
            self._flush()
        elif tag in ("ul", "ol"):
            self._flush()
            if self.lists:
                self.lists.pop()
            if not self.lists:
                self.in_list_block = False
        elif tag == "li":
            self._flush()
        elif tag in ("td", "th"):
            if self.cell is not None and self.row is not None:
                self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr":
            if self.row:
                line = " | ".join(self.row)
                if self.in_table_block and self.blocks:
                    self.blocks[-1] += "\n" + line
                else:
                    self.blocks.append(line)
                    self.in_table_block = True
            self.row = None
        elif tag == "a":
            text = " ".join("".join(self.anchor_text).split())
            href = self.href
            self.href = None
            if href:
                self.out.urls.append(href)
                if href != text:
                    self._text(f" ({href})" if text else href)
        elif tag == "ac:parameter":
            value = "".join(self.param_text).strip()
            name = self.param
            self.param = None
            if self.macros and self.macros[-1] == "jira" and name == "key" and value:
                self.out.jira_keys.append(value)
                self._emit(value)
            elif self.macros and self.macros[-1] == "status" and name == "title" and value:
                self._emit(f" [{value}] ")  # a status lozenge's label is content
            elif self.macros and self.macros[-1] in ("expand", "panel") and name == "title" and value:
                self._flush()
                self._emit(value)
                self._flush()
        elif tag == "ac:link":
            body = " ".join("".join(self.link_body or []).split())
            self.link_body = None
            shown = body or self.link_target or ""
            if shown:
                self._emit(shown)
            self.link_target = None
        elif tag == "ac:structured-macro":
            if self.macros and self.macros[-1] in _BLOCK_MACROS:
                self._flush()
            if self.macros:
                self.macros.pop()

    def data(self, data: str) -> None:
        if self.hidden:
            if self.task_status is not None:
                self.task_status.append(data)
            return
        self._emit(data)

    def cdata(self, body: str) -> None:
        """A ``<![CDATA[...]]>`` section's body (code macro bodies, plain-text link bodies); shown even
        inside hidden elements, as it always was."""
        if self.macros and self.macros[-1] in _CODE_MACROS and self.param is None:
            self.line.append(body)
        else:
            self._emit(body)

    def finish(self) -> StorageText:
        self._flush()
        out = self.out
        out.text = "\n\n".join(self.blocks)
        return out


class _Html(HTMLParser):
    """The lenient tokeniser, for a body that is not well-formed XML (or may read differently as XML)."""

    def __init__(self, reader: _Reader) -> None:
        super().__init__(convert_charrefs=True)
        self.reader = reader
        # Storage format is XML: ``<![CDATA[`` always opens a section that ends at ``]]>``. Newer
        # html.parser releases read it as HTML5 does outside <svg>/<math> unless told otherwise.
        support_cdata = getattr(self, "_set_support_cdata", None)
        if support_cdata is not None:
            support_cdata(True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.reader.start(tag, {k: (v or "") for k, v in attrs})

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "hr", "ri:page", "ri:attachment", "ri:user", "ri:url"):
            self.reader.end(tag)

    def handle_endtag(self, tag: str) -> None:
        self.reader.end(tag)

    def handle_data(self, data: str) -> None:
        self.reader.data(data)

    def unknown_decl(self, data: str) -> None:
        if data.startswith("CDATA["):
            self.reader.cdata(data[len("CDATA[") :])


class _NotPlainXml(Exception):
    """The body holds something the two tokenisers might read differently: read it as HTML."""


# What could make expat (an XML parser, in C) and html.parser read a well-formed body differently,
# found before parsing: a carriage return (XML folds CRLF), a processing instruction (XML ends it at
# "?>", HTML at ">"), a tab or newline inside an attribute value (XML turns them into spaces), a CDATA
# end with blanks inside (html.parser on Python 3.11 ends a section at "] ]>"). Other declarations
# ("<!DOCTYPE" in a body) are not well-formed XML: expat refuses them itself.
_DIFFERENT = re.compile(r"\r|<\?|=\s*(?:\"[^\"]*[\t\n]|'[^']*[\t\n])|\]\s+\]|\]\]\s+>")
_NAMED_REF = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_NUMERIC_REF = re.compile(r"&#(?:[xX]([0-9a-fA-F]+)|([0-9]+))")
_ASCII_LETTERS = frozenset(string.ascii_letters)  # what html.parser lets a tag name start with
_XML_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "apos"})
# Elements html.parser reads as raw text (script, style; title, textarea and more on newer releases).
_RAW_TEXT = frozenset(
    {"script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"}
)


def _same_as_html(code: int) -> bool:
    """A numeric character reference expat and ``html.unescape`` turn into the same character (the
    latter maps C1 controls through windows-1252 and drops non-characters; expat refuses most)."""
    return (
        code in (9, 10)
        or 0x20 <= code < 0x7F
        or 0xA0 <= code < 0xD800
        or 0xE000 <= code < 0xFDD0
        or 0xFDF0 <= code < 0xFFFE
        or (0x10000 <= code <= 0x10FFFF and code & 0xFFFF < 0xFFFE)
    )


def _dtd(storage: str) -> str:
    """An internal DTD declaring the HTML named references the body uses, as html.unescape reads them."""
    decls = []
    for name in set(_NAMED_REF.findall(storage)) - _XML_ENTITIES:
        value = html5.get(name + ";")
        if value is None:
            raise _NotPlainXml(name)  # html.unescape keeps an unknown reference as text; expat refuses it
        # "&#38;#N;": the replacement text is the reference "&#N;", read where the entity is used, so a
        # "<" stays text and a newline in an attribute value stays a newline (a literal one would not).
        decls.append(f'<!ENTITY {name} "{"".join(f"&#38;#{ord(c)};" for c in value)}">')
    return f"<!DOCTYPE r [{''.join(decls)}]>" if decls else ""


def _read_xml(storage: str, reader: _Reader) -> None:
    """Tokenise ``storage`` with expat, handing ``reader`` the events html.parser would hand it.

    Raises :class:`_NotPlainXml` (or expat's error) when the body is not well-formed XML or holds
    something the two might read differently; ``reader`` is then spoiled.
    """
    if _DIFFERENT.search(storage):
        raise _NotPlainXml("construct")
    if "&#" in storage:
        for hexa, dec in _NUMERIC_REF.findall(storage):
            if not _same_as_html(int(hexa, 16) if hexa else int(dec)):
                raise _NotPlainXml("character reference")
    xml = expat.ParserCreate()
    xml.buffer_text = True  # one call per run of text, as html.parser makes
    in_cdata = False

    def start(name: str, attrs: dict[str, str]) -> None:
        tag = name.lower()
        if name[0] not in _ASCII_LETTERS or tag in _RAW_TEXT:
            raise _NotPlainXml(name)  # html.parser reads "<_x>" as text, "<script>"'s body as text
        reader.start(tag, {k.lower(): v for k, v in attrs.items()})

    def end(name: str) -> None:
        reader.end(name.lower())

    def text(data: str) -> None:
        if in_cdata:
            reader.cdata(data)
        else:
            reader.data(data)

    def cdata(inside: bool) -> None:
        nonlocal in_cdata
        in_cdata = inside

    xml.StartElementHandler = start
    xml.EndElementHandler = end
    xml.CharacterDataHandler = text
    xml.StartCdataSectionHandler = lambda: cdata(True)
    xml.EndCdataSectionHandler = lambda: cdata(False)
    # "r" (the wrapper that makes a body of several top-level elements one document) means nothing to
    # the reader: its start and end change no state.
    xml.Parse(f"{_dtd(storage)}<r>{storage}</r>", True)


def storage_to_text(storage: str) -> StorageText:
    """Parse a storage-format body. Never raises on odd markup.

    Storage format is XHTML, so a body is nearly always well-formed XML: expat (C) reads it, and the
    whole parse takes half the time it takes through html.parser. A body expat refuses, or that holds
    anything the two might read differently, is read by the lenient html.parser instead, which read
    every body before: either way the text, and so each content hash, is the same
    (tests/connectors/test_confluence_storage_xml.py compares them).
    """
    reader = _Reader()
    try:
        _read_xml(storage, reader)
    except (_NotPlainXml, expat.ExpatError, UnicodeEncodeError):
        reader = _Reader()
        parser = _Html(reader)
        parser.feed(storage)
        parser.close()
    return reader.finish()
