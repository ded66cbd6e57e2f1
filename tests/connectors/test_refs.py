"""Cross-source mention extraction (connectors/refs.py)."""

from __future__ import annotations

from connectors.base import Ref
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
