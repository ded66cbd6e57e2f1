"""Cross-source mentions found in text -> :class:`Ref` claims (seed 000 "Формат refs").

Pure functions, shared by every connector. What is recognised and what ``target_ref`` holds:

=====================================================  ===========  ==========================  ==========
text                                                   target_kind  target_ref                  hint
=====================================================  ===========  ==========================  ==========
``PROJ-12``, ``https://x/browse/PROJ-12``              issue        ``PROJ-12``                 jira
``.../wiki/spaces/ENG/pages/123/Title``,               page         ``123`` (the page id)       confluence
``.../pages/viewpage.action?pageId=123``
``https://x.slack.com/archives/C01/p1700000000123456``  message      ``C01/1700000000.123456``   slack
``https://gl/group/proj/-/merge_requests/7``           mr           ``group/proj!7``            gitlab
``https://gl/group/proj/-/issues/7``                   issue        ``group/proj#7``            gitlab
``https://gl/group/proj/-/commit/<sha>``               commit       ``<sha>``                   gitlab
``@jdoe``, Jira wiki ``[~jdoe]``                       user         ``@jdoe``                   caller's
=====================================================  ===========  ==========================  ==========

Target refs are the natural ids the target connector uses as ``source_entity_id``/``natural_key``
(Confluence page id, Slack ``channel/ts``, Jira key), so the knowledge store can resolve a claim
by a plain lookup. Results keep the order of first appearance and are de-duplicated.

``exclude_hints`` drops whole families (a connector decides its own source's links itself, e.g. the
Jira mapping turns issuelinks into edges and passes the remaining keys through).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable
from operator import itemgetter

from connectors.base import Ref

MENTIONS = "mentions"

# Jira project keys: upper-case letter then upper-case letters/digits (Jira's default key pattern).
# Not preceded by a key-ish character; the check comes *after* the first letter (a lookbehind over it and
# the character before it): a pattern that opens with a lookbehind is tried at every position of the text,
# one that opens with a character class lets the regex engine skip ahead to the next upper-case letter,
# with the same matches (tests/connectors/test_refs.py, against the lookbehind-first form) at a third of the
# time (decision 93). _MENTION_RE and the wiki markup patterns of connectors/jira/text.py do the same.
JIRA_KEY_RE = re.compile(r"([A-Z](?<![A-Za-z0-9_/.-][A-Z])[A-Z0-9]+-[1-9][0-9]*)(?![A-Za-z0-9_-])")
_JIRA_BROWSE_RE = re.compile(r"https?://[^\s<>\"'|\]]+?/browse/([A-Z][A-Z0-9]+-[1-9][0-9]*)")
_CONFLUENCE_PAGE_RE = re.compile(r"https?://[^\s<>\"'|\]]*?/(?:wiki/)?spaces/[^/\s<>\"'|\]]+/pages/(\d+)")
_CONFLUENCE_VIEWPAGE_RE = re.compile(
    r"https?://[^\s<>\"'|\]]*?/pages/viewpage\.action\?(?:[^\s<>\"'|\]]*&)?pageId=(\d+)"
)
_SLACK_RE = re.compile(r"https?://[\w.-]+\.slack\.com/archives/([CGD][A-Z0-9]+)/p(\d{10})(\d{6})")
_GITLAB_RE = re.compile(
    r"https?://[^\s/<>\"'|\]]+/((?:[\w.-]+/)+[\w.-]+)/-/(merge_requests|issues|commit)/([0-9a-fA-F]+|\d+)"
)
_MENTION_RE = re.compile(r"@(?<![\w.@/+-]@)([A-Za-z0-9](?:[\w.-]*[A-Za-z0-9_])?)")
_WIKI_MENTION_RE = re.compile(r"\[~(?:accountid:)?([^\]\s]+)\]")
_URL_RE = re.compile(r"https?://[^\s<>\"'|\]]+")

# Upper-case tokens that look like issue keys but are standards, encodings, hashes...
_NOT_PROJECTS = frozenset(
    {"UTF", "ISO", "SHA", "MD", "CVE", "RFC", "COVID", "HTTP", "TLS", "SSL", "AES", "PEP", "GPT", "IEC", "CP"}
)


def extract_refs(
    text: str,
    *,
    exclude_hints: Collection[str] = (),
    jira_projects: Collection[str] | None = None,
    mention_hint: str | None = None,
    mentions: bool = True,
) -> tuple[Ref, ...]:
    """All mentions in ``text``, in order of appearance, de-duplicated.

    ``exclude_hints``: source hints to leave out (``{"jira"}`` drops issue keys and browse URLs).
    ``jira_projects``: when given, only keys of these projects count as Jira keys (fewer false hits).
    ``mention_hint``: source hint for ``@user`` mentions (the user lives in the caller's source).
    ``mentions``: False leaves ``@user`` mentions out (a caller that knows its users from the markup).
    """
    # Each match is kept as (position, kind, target, hint): a tuple is built, hashed and compared in C,
    # where a Ref (a frozen dataclass) costs a Python-level __init__ and __hash__. Refs are made once, for
    # the claims left after sorting and de-duplication (49 -> 43 µs over the Jira texts, decision 120).
    found: list[tuple[int, str, str, str | None]] = []
    append = found.append
    skip = exclude_hints if isinstance(exclude_hints, frozenset | set) else set(exclude_hints)
    # Each family below needs one literal ("://" for every URL pattern, "-" in an issue key, "@" or "[~" in a
    # mention): a text without it skips that family's scans, with the same result and a fraction of the
    # time (most texts hold no URL at all). A family the caller leaves out is not scanned either: its
    # every match would be dropped (a scan costs ~2 µs a chat message, decision 118). So no match found
    # below needs its hint checked against ``skip`` again.
    urls = "://" in text
    jira = "jira" not in skip
    mentions = mentions and mention_hint not in skip
    # Where the URLs are: a key or an @name inside one is part of the URL, not a mention of its own.
    url_spans = [m.span() for m in _URL_RE.finditer(text)] if urls and (jira or mentions) else []

    # Past "://", each URL family needs its own path literal as well ("/browse/", "/pages/", "/archives/",
    # "/-/"): a text that mentions one kind of link is not scanned for the other four.
    if urls and jira and "/browse/" in text:
        for m in _JIRA_BROWSE_RE.finditer(text):
            key = m.group(1)
            if _key_ok(key, jira_projects):
                append((m.start(), "issue", key, "jira"))
    if jira and "-" in text:
        for m in JIRA_KEY_RE.finditer(text):
            key = m.group(1)
            if _key_ok(key, jira_projects) and not _inside(m.start(), url_spans):
                append((m.start(), "issue", key, "jira"))
    if urls:
        if "confluence" not in skip and "/pages/" in text:
            for m in _CONFLUENCE_PAGE_RE.finditer(text):
                append((m.start(), "page", m.group(1), "confluence"))
            for m in _CONFLUENCE_VIEWPAGE_RE.finditer(text):
                append((m.start(), "page", m.group(1), "confluence"))
        if "slack" not in skip and "/archives/" in text:
            for m in _SLACK_RE.finditer(text):
                channel, seconds, micros = m.groups()
                append((m.start(), "message", f"{channel}/{seconds}.{micros}", "slack"))
        if "gitlab" not in skip and "/-/" in text:
            for m in _GITLAB_RE.finditer(text):
                project, what, ident = m.groups()
                if what == "merge_requests" and ident.isdigit():
                    append((m.start(), "mr", f"{project}!{ident}", "gitlab"))
                elif what == "issues" and ident.isdigit():
                    append((m.start(), "issue", f"{project}#{ident}", "gitlab"))
                elif what == "commit":
                    append((m.start(), "commit", ident.lower(), "gitlab"))
    if mentions and "@" in text:
        for m in _MENTION_RE.finditer(text):
            if not _inside(m.start(), url_spans):
                append((m.start(), "user", f"@{m.group(1)}", mention_hint))
    if mentions and "[~" in text:
        for m in _WIKI_MENTION_RE.finditer(text):
            append((m.start(), "user", f"@{m.group(1)}", mention_hint))
    if not found:
        return ()
    found.sort(key=itemgetter(0))  # stable: two claims at one position keep the order they were found in
    claims = dict.fromkeys(claim[1:] for claim in found)  # first occurrence kept, in order
    return tuple([Ref(MENTIONS, kind, ref, hint) for kind, ref, hint in claims])


def jira_keys(text: str, jira_projects: Collection[str] | None = None) -> tuple[str, ...]:
    """Issue keys mentioned in ``text`` (bare or in browse URLs), de-duplicated, in order."""
    return tuple(r.target_ref for r in extract_refs(text, jira_projects=jira_projects) if r.source_hint == "jira")


def dedup(refs: Iterable[Ref]) -> tuple[Ref, ...]:
    """Drop repeated refs, keeping the first occurrence's position."""
    seen: set[Ref] = set()
    out: list[Ref] = []
    for ref in refs:
        if ref not in seen:
            seen.add(ref)
            out.append(ref)
    return tuple(out)


def _key_ok(key: str, projects: Collection[str] | None) -> bool:
    project = key.rsplit("-", 1)[0]
    if projects is not None:
        return project in projects
    return project not in _NOT_PROJECTS


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``pos`` falls in one of ``spans`` (non-overlapping, in order: a regex's matches)."""
    if not spans:
        return False
    i = bisect.bisect_right(spans, pos, key=itemgetter(0)) - 1
    return i >= 0 and pos < spans[i][1]
