"""Confluence storage format (XHTML + ``ac:``/``ri:`` macros) -> readable plain text.

Pure, stdlib only (``html.parser``). Structure is kept as blank-line separated blocks, as
``Entity.text`` asks: headings become ``## Heading``, list items ``- item`` / ``1. item`` (indented
when nested), table rows ``cell | cell``, code macros keep their lines verbatim inside a fenced block.

Besides the text, the parse collects what the mapping turns into edges and refs: links to other
pages (``<ac:link><ri:page .../>``), plain URLs, Jira macro keys, attachment names, user mentions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

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


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
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

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
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

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "hr", "ri:page", "ri:attachment", "ri:user", "ri:url"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
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

    def handle_data(self, data: str) -> None:
        if self.hidden:
            if self.task_status is not None:
                self.task_status.append(data)
            return
        self._emit(data)

    def unknown_decl(self, data: str) -> None:
        # html.parser hands ``<![CDATA[...]]>`` (code macro bodies, plain-text link bodies) here.
        if data.startswith("CDATA["):
            body = data[len("CDATA[") :]
            if self.macros and self.macros[-1] in _CODE_MACROS and self.param is None:
                self.line.append(body)
            else:
                self._emit(body)

    def finish(self) -> StorageText:
        self.close()
        self._flush()
        out = self.out
        out.text = "\n\n".join(self.blocks)
        return out


def storage_to_text(storage: str) -> StorageText:
    """Parse a storage-format body. Never raises on odd markup: html.parser is lenient by design."""
    parser = _Parser()
    parser.feed(storage)
    return parser.finish()
