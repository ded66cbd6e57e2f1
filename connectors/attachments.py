"""Text attachments (seed 000 "Вложения", v1): what is already text is fetched and indexed; binaries
stay links (v2 parses PDF and docx).

One policy for every connector: a content-type allow-list (plain text, markdown, CSV, JSON, YAML, XML
and source code) and a size cap; the body is streamed and reading stops at the cap
(:meth:`connectors.http.SourceHttp.get_text_capped`). An attachment refused by either rule, or that
cannot be read, stays a link in the entity's metadata; nothing else about the item changes.
"""

from __future__ import annotations

import re

from connectors.http import SourceHttp

MAX_BYTES = 256 * 1024  # the Jira manifest's attachments_text promise; one cap for every connector
_TEXT_TYPES = re.compile(
    r"^(text/(plain|markdown|x-markdown|csv|tab-separated-values|x-[\w.+-]+|[\w.+-]*(script|source|code)[\w.+-]*)"
    r"|application/(json|[\w.+-]+\+json|x-ndjson|xml|x-yaml|yaml|x-sh|x-python|javascript|x-javascript|sql|toml))$"
)
# File names whose extension says "source code or text" even when the source sends a generic type.
_TEXT_NAMES = re.compile(
    r"\.(txt|md|markdown|csv|tsv|json|ya?ml|xml|toml|ini|cfg|log|py|js|ts|go|rs|java|kt|c|h|cpp|hpp|cs|rb|php|sh|sql)$",
    re.IGNORECASE,
)


def is_text(content_type: str | None, filename: str | None) -> bool:
    """On the allow-list: by declared type, or by file name when the type is a generic octet-stream."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if _TEXT_TYPES.match(kind):
        return True
    return kind in ("", "application/octet-stream", "binary/octet-stream") and bool(_TEXT_NAMES.search(filename or ""))


def fetch_text(
    http: SourceHttp, url: str, *, content_type: str | None, filename: str | None, size: int | None
) -> str | None:
    """The attachment's text, or None when it must stay a link (not text, over the cap, unreadable)."""
    if not is_text(content_type, filename):
        return None
    if size is not None and size > MAX_BYTES:
        return None
    text, _why = http.get_text_capped(url, MAX_BYTES)
    return text
