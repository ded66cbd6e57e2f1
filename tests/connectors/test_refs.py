"""Cross-source mention extraction (connectors/refs.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors import refs
from connectors.base import Ref
from connectors.jira import text as jira_text
from connectors.refs import dedup, extract_refs, jira_keys


def test_every_family_is_recognised_in_order_of_appearance() -> None:
    text = (
        "Blocked by PROJ-12, see https://acme.atlassian.net/wiki/spaces/ENG/pages/98765/Design+Doc and "
        "https://acme.atlassian.net/browse/OPS-7. Thread: "
        "https://acme.slack.com/archives/C01ABCDEF/p1700000000123456 ; fix in "
        "https://gitlab.acme.io/group/sub/proj/-/merge_requests/42 and commit "
        "https://gitlab.acme.io/group/proj/-/commit/ABCDEF1234567 ; bug https://gitlab.acme.io/g/p/-/issues/9 "
        "old page http://wiki.local/pages/viewpage.action?pageId=555 cc @jdoe and [~asmith]."
    )
    assert extract_refs(text, mention_hint="jira") == (
        Ref("mentions", "issue", "PROJ-12", "jira"),
        Ref("mentions", "page", "98765", "confluence"),
        Ref("mentions", "issue", "OPS-7", "jira"),
        Ref("mentions", "message", "C01ABCDEF/1700000000.123456", "slack"),
        Ref("mentions", "mr", "group/sub/proj!42", "gitlab"),
        Ref("mentions", "commit", "abcdef1234567", "gitlab"),
        Ref("mentions", "issue", "g/p#9", "gitlab"),
        Ref("mentions", "page", "555", "confluence"),
        Ref("mentions", "user", "@jdoe", "jira"),
        Ref("mentions", "user", "@asmith", "jira"),
    )


def test_repeats_are_dropped_and_first_position_kept() -> None:
    refs = extract_refs("PROJ-1 then PROJ-2 then PROJ-1 again and https://x.atlassian.net/browse/PROJ-2")
    assert [r.target_ref for r in refs] == ["PROJ-1", "PROJ-2"]


def test_exclude_hints_drops_the_callers_own_family() -> None:
    refs = extract_refs("PROJ-1 and https://a.slack.com/archives/C1/p1700000000000001", exclude_hints={"jira"})
    assert refs == (Ref("mentions", "message", "C1/1700000000.000001", "slack"),)


def test_look_alike_tokens_are_not_issue_keys() -> None:
    text = "UTF-8, ISO-8601, SHA-256, CVE-2021-44228, mail bob@example.com, path /a/B-1, v1-2"
    assert extract_refs(text) == ()


def test_project_allow_list_restricts_keys() -> None:
    assert jira_keys("AB-1 CD-2 https://j/browse/CD-3", jira_projects={"CD"}) == ("CD-2", "CD-3")


def test_keys_inside_other_urls_are_not_mentions() -> None:
    text = "https://acme.atlassian.net/wiki/spaces/ENG/pages/1/PROJ-9+notes"
    assert extract_refs(text) == (Ref("mentions", "page", "1", "confluence"),)


def test_dedup_keeps_first() -> None:
    a, b = Ref("mentions", "user", "@a", None), Ref("mentions", "user", "@b", None)
    assert dedup([a, b, a]) == (a, b)


def _wiki_rule(opening: str) -> re.Pattern[str]:
    return next(pattern for pattern, _ in jira_text._WIKI_RULES if pattern.pattern.startswith(opening))


# The patterns as they were written before decision 93, lookbehind first: the reference for the rewritten
# ones, which check the character before a match after its first character (so the regex engine can skip
# ahead to that character) and must find exactly the same matches.
_LOOKBEHIND_FIRST = {
    "jira key": (
        r"(?<![A-Za-z0-9_/.-])([A-Z][A-Z0-9]+-[1-9][0-9]*)(?![A-Za-z0-9_-])",
        refs.JIRA_KEY_RE,
    ),
    "mention": (r"(?<![\w.@/+-])@([A-Za-z0-9](?:[\w.-]*[A-Za-z0-9_])?)", refs._MENTION_RE),
    "wiki bold": (r"(?<![\w*])\*(\S(?:[^*\n]*\S)?)\*(?![\w*])", _wiki_rule(r"\*(?<!")),
    "wiki italic": (r"(?<![\w_])_(\S(?:[^_\n]*\S)?)_(?![\w_])", _wiki_rule(r"_(?<!")),
    "wiki underline": (r"(?<![\w+])\+(\S(?:[^+\n]*\S)?)\+(?![\w+])", _wiki_rule(r"\+(?<!")),
    "wiki citation": (r"(?<![\w?])\?\?(\S(?:[^?\n]*\S)?)\?\?(?![\w?])", _wiki_rule(r"\?(?<!")),
    "wiki strike": (r"(?<!\S)-(\S(?:[^-\n]*\S)?)-(?!\S)", _wiki_rule(r"-(?<!")),
}

# Pieces the patterns match and every character their guards look at (\w also matches letters outside
# ASCII), joined in any order: a guard character right before a match comes up often.
_PIECES = ("PROJ-12", "AB-1", "X9-0", "@ann", "@b.c", "*b*", "_i_", "+u+", "??c??", "-s-", "a", "Z", "0", "é", "ж")
_GUARDS = tuple("/.-_@+*?!~[]|: \t\n")
_TEXT = st.lists(st.sampled_from(_PIECES + _GUARDS), max_size=16).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT)
def test_the_rewritten_patterns_find_what_the_lookbehind_first_ones_found(text: str) -> None:
    for name, (before, now) in _LOOKBEHIND_FIRST.items():
        old = re.compile(before)
        assert [(m.span(), m.groups()) for m in now.finditer(text)] == [
            (m.span(), m.groups()) for m in old.finditer(text)
        ], name
        assert now.sub(r"<\1>", text) == old.sub(r"<\1>", text), name


def test_the_rewritten_patterns_on_the_cases_that_matter() -> None:
    # Each guard is exercised: at the start of the text, after a guarded character, after a free one.
    assert jira_keys("PROJ-1 a/PROJ-2 .PROJ-3 -PROJ-4 xPROJ-5 (PROJ-6) é PROJ-7") == ("PROJ-1", "PROJ-6", "PROJ-7")
    assert [r.target_ref for r in extract_refs("@ann a@bob .@cy +@dee (@eve)")] == ["@ann", "@eve"]
    assert jira_text.wiki_to_text("*bold* a*no* _it_ -gone- x-y-z +u+ ??c??") == "bold a*no* it gone x-y-z u c"


# Pieces of every family's links and mentions, and the characters around them, joined in any order: the
# scans each family skips (no "/browse/", no "/pages/"..., a family the caller leaves out, decision 118)
# must never change what is found.
_LINK_PIECES = (
    "https://acme.atlassian.net/browse/",
    "https://acme.atlassian.net/wiki/spaces/ENG/pages/",
    "http://wiki.local/pages/viewpage.action?pageId=",
    "https://acme.slack.com/archives/C01ABC/p1700000000123456",
    "https://gitlab.acme.io/group/proj/-/merge_requests/",
    "https://gitlab.acme.io/g/p/-/issues/",
    "https://gitlab.acme.io/group/proj/-/commit/",
    "ABCDEF12",
    "PROJ-12",
    "OPS-7",
    "42",
    "@ann",
    "[~bob]",
    "/",
    " ",
    "\n",
    "(",
    ")",
    "-",
)
_LINK_TEXT = st.lists(st.sampled_from(_LINK_PIECES), max_size=12).map("".join)
_FAMILIES = (
    (refs._JIRA_BROWSE_RE, "jira"),
    (refs.JIRA_KEY_RE, "jira"),
    (refs._CONFLUENCE_PAGE_RE, "confluence"),
    (refs._CONFLUENCE_VIEWPAGE_RE, "confluence"),
    (refs._SLACK_RE, "slack"),
    (refs._GITLAB_RE, "gitlab"),
)


def _every_scan(text: str, skip: set[str], mention_hint: str | None, mentions: bool) -> tuple[Ref, ...]:
    """Every pattern run over the whole text, whatever it holds, and the results dropped afterwards: what
    extract_refs found before it learnt to skip scans."""
    spans = [m.span() for m in refs._URL_RE.finditer(text)]
    found: list[tuple[int, Ref]] = []
    for pattern, hint in _FAMILIES:
        for m in pattern.finditer(text):
            if pattern is refs.JIRA_KEY_RE:
                if refs._inside(m.start(), spans) or not refs._key_ok(m.group(1), None):
                    continue
                found.append((m.start(), Ref("mentions", "issue", m.group(1), hint)))
            elif pattern is refs._JIRA_BROWSE_RE:
                if refs._key_ok(m.group(1), None):
                    found.append((m.start(), Ref("mentions", "issue", m.group(1), hint)))
            elif hint == "confluence":
                found.append((m.start(), Ref("mentions", "page", m.group(1), hint)))
            elif hint == "slack":
                found.append((m.start(), Ref("mentions", "message", f"{m.group(1)}/{m.group(2)}.{m.group(3)}", hint)))
            else:
                project, what, ident = m.groups()
                if what == "merge_requests" and ident.isdigit():
                    found.append((m.start(), Ref("mentions", "mr", f"{project}!{ident}", hint)))
                elif what == "issues" and ident.isdigit():
                    found.append((m.start(), Ref("mentions", "issue", f"{project}#{ident}", hint)))
                elif what == "commit":
                    found.append((m.start(), Ref("mentions", "commit", ident.lower(), hint)))
    for m in refs._MENTION_RE.finditer(text):
        if not refs._inside(m.start(), spans):
            found.append((m.start(), Ref("mentions", "user", f"@{m.group(1)}", mention_hint)))
    for m in refs._WIKI_MENTION_RE.finditer(text):
        found.append((m.start(), Ref("mentions", "user", f"@{m.group(1)}", mention_hint)))
    kept = [
        (pos, r)
        for pos, r in found
        if (r.source_hint is None or r.source_hint not in skip) and (mentions or r.target_kind != "user")
    ]
    kept.sort(key=lambda pair: pair[0])
    return dedup(r for _, r in kept)


@settings(max_examples=500, deadline=None)
@given(
    text=_LINK_TEXT,
    skip=st.sets(st.sampled_from(("jira", "confluence", "slack", "gitlab"))),
    mention_hint=st.sampled_from((None, "jira", "slack")),
    mentions=st.booleans(),
)
def test_the_scans_skipped_change_nothing_found(
    text: str, skip: set[str], mention_hint: str | None, mentions: bool
) -> None:
    got = extract_refs(text, exclude_hints=skip, mention_hint=mention_hint, mentions=mentions)
    assert got == _every_scan(text, skip, mention_hint, mentions)


def test_mentions_false_leaves_people_out_and_keeps_the_rest() -> None:
    text = "@ann see PROJ-1 and [~bob] https://a.slack.com/archives/C1/p1700000000000001"
    assert extract_refs(text, mentions=False) == (
        Ref("mentions", "issue", "PROJ-1", "jira"),
        Ref("mentions", "message", "C1/1700000000.000001", "slack"),
    )
    assert [r.target_ref for r in extract_refs(text) if r.target_kind == "user"] == ["@ann", "@bob"]
