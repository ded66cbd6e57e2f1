"""Attachments as text (seed 000 "Вложения"; issue 12 §3): what is already text, and PDF, is fetched and
indexed as separate sections; everything else stays a link.

One policy for every connector (Jira, Confluence, Slack):

- a content-type allow-list (plain text, markdown, CSV, JSON, YAML, XML and source code; a generic
  octet-stream type is judged by the file name) plus PDF, whose text ``pypdf`` extracts;
- one size cap, :data:`MAX_BYTES`: an attachment declared larger is not requested; the body is
  streamed and reading stops at the cap (:meth:`connectors.http.SourceHttp.get_bytes_capped`), so
  nothing beyond it is ever held in memory; the text taken out of a PDF is cut to the same cap;
- the credential goes only to the source's own origin (Slack's file host is named by the connector), and
  never in clear text to a source reached over HTTPS (:meth:`connectors.http.SourceHttp.download_target`):
  a download link elsewhere stays a link.

An attachment refused by any rule, or that cannot be read, stays a link with the reason recorded
(:class:`AttachmentText.reason`, kept in the entity's metadata) and named in the run's notes
(``CallStats.note`` -> ``sync_runs.error_detail``); nothing else about the item changes, nothing is
dropped or deleted because of it. Binaries of a known kind (images, audio, video, archives, office
files) are ordinary links and only their metadata says why; an unknown type is noted once per type
and run, so a channel full of one odd type does not bury the other notes.
"""

from __future__ import annotations

import importlib
import io
import re
from collections.abc import Collection
from dataclasses import dataclass

from connectors.base import CallStats
from connectors.http import SourceHttp, decode_body

MAX_BYTES = 256 * 1024  # the manifests' attachments promise; one cap for every connector
_TEXT_TYPES = re.compile(
    r"^(text/(plain|markdown|x-markdown|csv|tab-separated-values|x-[\w.+-]+|[\w.+-]*(script|source|code)[\w.+-]*)"
    r"|application/(json|[\w.+-]+\+json|x-ndjson|xml|x-yaml|yaml|x-sh|x-python|javascript|x-javascript|sql|toml))$"
)
# File names whose extension says "source code or text" even when the source sends a generic type.
_TEXT_NAMES = re.compile(
    r"\.(txt|md|markdown|csv|tsv|json|ya?ml|xml|toml|ini|cfg|log|py|js|ts|go|rs|java|kt|c|h|cpp|hpp|cs|rb|php|sh|sql)$",
    re.IGNORECASE,
)
_GENERIC = ("", "application/octet-stream", "binary/octet-stream")
_PDF_NAME = re.compile(r"\.pdf$", re.IGNORECASE)
# Binaries everyone expects to stay links: no note for these, the metadata keeps the reason.
_KNOWN_BINARY = re.compile(
    r"^((image|audio|video|font)/.+|application/(octet-stream|zip|x-zip-compressed|gzip|x-gzip|x-tar|x-7z-compressed"
    r"|x-rar-compressed|vnd\.[\w.+-]+|msword|rtf|postscript|java-archive|x-msdownload)|binary/octet-stream)$"
)


def _kind(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_text(content_type: str | None, filename: str | None) -> bool:
    """On the allow-list: by declared type, or by file name when the type is a generic octet-stream."""
    kind = _kind(content_type)
    if _TEXT_TYPES.match(kind):
        return True
    return kind in _GENERIC and bool(_TEXT_NAMES.search(filename or ""))


def is_pdf(content_type: str | None, filename: str | None) -> bool:
    kind = _kind(content_type)
    return kind == "application/pdf" or (kind in _GENERIC and bool(_PDF_NAME.search(filename or "")))


@dataclass(frozen=True, slots=True)
class AttachmentText:
    """The attachment's text, or None with the reason it stays a link."""

    text: str | None
    reason: str | None = None


def load_readers() -> None:
    """Imports now what reading a PDF needs, which :func:`pdf_text` otherwise imports at the first PDF it
    meets: pypdf, ~50-70 ms of CPU. For a process that forks the processes that list sources
    (``app.pipeline.source_preload``): each of them would otherwise import it again at its first PDF."""
    importlib.import_module("pypdf")


def pdf_text(data: bytes, limit: int = MAX_BYTES) -> str:
    """Text of every page of a PDF, pages separated by blank lines, cut to ``limit`` characters.

    Raises ``ValueError`` when the bytes are not a PDF pypdf can read."""
    # Imported here: pypdf is only needed when a PDF attachment is met (it is a declared dependency).
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            text = (page.extract_text() or "").strip()
            if text:
                parts.append(text)
                size += len(text) + 2
            if size > limit:
                break
    except (PyPdfError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError) as exc:
        raise ValueError(f"not a readable PDF ({type(exc).__name__})") from exc
    return "\n\n".join(parts)[:limit]


class AttachmentReader:
    """Reads attachments for one connector and run: allow-list, cap, host check, reasons noted."""

    def __init__(
        self, http: SourceHttp, stats: CallStats, connector: str, *, extra_hosts: Collection[str] = ()
    ) -> None:
        self.http = http
        self.stats = stats
        self.connector = connector
        self.extra_hosts = frozenset(h.lower() for h in extra_hosts)

    def read(
        self, item: str, url: str | None, *, content_type: str | None, filename: str | None, size: int | None
    ) -> AttachmentText:
        """The text of the attachment ``filename`` of ``item`` (an id or key, for the run's notes)."""
        name = filename or "(unnamed)"
        pdf = is_pdf(content_type, filename)
        if not pdf and not is_text(content_type, filename):
            kind = _kind(content_type) or "no type"
            if not _KNOWN_BINARY.match(kind):
                # One note per unknown type and run (a known binary is an ordinary link).
                self.stats.note(f"{self.connector}: attachments of unknown type {kind} kept as links")
                return AttachmentText(None, f"unknown type {kind}")
            return AttachmentText(None, f"type {kind} is not text or PDF")
        if size is not None and size > MAX_BYTES:
            return self._link(item, name, f"over the {MAX_BYTES // 1024} KiB cap ({size} bytes)")
        if not url:
            return self._link(item, name, "no download link")
        target, refused = self.http.download_target(url, self.extra_hosts)
        if target is None:
            return self._link(item, name, refused)
        body, encoding, why = self.http.get_bytes_capped(target, MAX_BYTES)
        if body is None:
            if why == "over the size cap":
                why = f"over the {MAX_BYTES // 1024} KiB cap"
            return self._link(item, name, why)
        if pdf:
            try:
                return AttachmentText(pdf_text(body))
            except ValueError as exc:
                return self._link(item, name, str(exc))
        return AttachmentText(decode_body(body, encoding))

    def _link(self, item: str, name: str, reason: str) -> AttachmentText:
        self.stats.note(f"{self.connector} {item}: attachment {name} kept as a link: {reason}")
        return AttachmentText(None, reason)
