"""Meaningful-field coverage per connector on real captured payloads (issue 13, item 7).

For every real payload in ``tests/fixtures`` that a connector maps (Jira issues from search and
get-issue captures, v2 and v3; Confluence pages; Slack messages from history pages and events), each
non-empty leaf of the payload is checked against the mapped :class:`Entity` with
``tests.field_coverage`` (a leaf "reaches" the entity when its value appears there). Leaves under a
key in :data:`DROPPED` are not meaningful — the list says why each is deliberately not kept — and are
left out of the share; everything else counts. Goal: >= 95 % per connector.

    .venv/bin/python bench/field_coverage.py [--missed]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.base import Entity, RawItem
from connectors.confluence.context import ConfluenceItemContext
from connectors.confluence.mapping import map_item as confluence_map
from connectors.jira.context import JiraItemContext
from connectors.jira.mapping import map_item as jira_map
from connectors.slack.context import SlackItemContext
from connectors.slack.mapping import map_item as slack_map
from tests.field_coverage import ENVELOPE_KEYS, SKIP_KEYS
from tests.field_coverage import field_coverage as coverage

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"

# Keys whose values are deliberately not kept, with the reason (any depth of the payload).
DROPPED: dict[str, str] = {
    "self": "REST self-links: the API URL of an object, derivable, not content",
    "avatarUrls": "avatar image URLs of users and projects: presentation",
    "iconUrl": "icon image URLs of types, statuses and priorities: presentation",
    "expand": "which expansions the API offers: protocol, not data",
    "colorName": "status category colour: presentation",
    "avatarId": "avatar image id: presentation",
    "timeZone": "a user's time zone: profile, not the record (the client reads its own from /myself)",
    "active": "whether a user account is active: directory state, changes without the record changing",
    "accountType": "atlassian/app/customer: directory detail",
    "entityId": "issue type's internal entity uuid: duplicates the type id",
    "hierarchyLevel": "issue type hierarchy level: used to recognise epics, not stored",
    "icon": "Confluence space/user icon paths: presentation",
    "profilePicture": "Confluence profile picture: presentation",
    "_links": "Confluence hypermedia links: derivable from ids",
    "webui": "Confluence web UI path: the entity URL is built from it",
    "tinyui": "Confluence short link: duplicates the page URL",
    "editui": "Confluence edit link: derivable",
    "collectionName": "Confluence media collection of an attachment (contentId-<page id>): derived from the page",
    "image_24": "Slack avatar sizes: presentation",
    "image_32": "Slack avatar sizes: presentation",
    "image_48": "Slack avatar sizes: presentation",
    "image_72": "Slack avatar sizes: presentation",
    "image_192": "Slack avatar sizes: presentation",
    "image_512": "Slack avatar sizes: presentation",
    "image_1024": "Slack avatar sizes: presentation",
    "image_original": "Slack avatar sizes: presentation",
    "image_36": "Slack bot icon sizes: presentation",
    "icons": "Slack bot icons (emoji, image sizes): presentation",
    "avatar_hash": "Slack avatar hash: presentation",
    "color": "Slack attachment / user colour: presentation",
    "is_restricted": "Slack guest flag of the author profile: directory detail (ACL comes from the channel)",
    "is_ultra_restricted": "Slack guest flag of the author profile: directory detail",
    "block_id": "Slack block ids: layout bookkeeping",
    "style": "Slack rich-text styles (bold/italic): formatting, dropped by the clean text",
    "event_ts": "Slack Events envelope timestamp: duplicates ts",
    "channel_type": "Slack Events channel type: the channel facts come from conversations.info",
    "type": 'object type tags ("message", "user", "text"...): structure, not data',
    "representation": 'Confluence body representation name ("storage"): structure',
}


# Leaves deliberately not kept, by path (``fields.parent.fields.summary``) or value, with the reason.
DROPPED_PATHS: tuple[tuple[str, str], ...] = (
    (r"^fields\.(parent|subtasks\[\]|issuelinks\[\]\.(inward|outward)Issue)\.fields\.",
     "another issue's own fields (parent, sub-task, linked issue): that issue's entity holds them"),
    (r"^fields\.sub-tasks\[\]\.", "Server's legacy sub-task link list: sub-tasks are kept from fields.subtasks"),
    (r"\.(issuetype|resolution|status|priority)\.description$|(fixVersions|versions|components)\[\]\.(description|id)$",
     "descriptions and ids of schema objects (types, versions, components): project configuration, names kept"),
    (r"^fields\.customfield_\d+(\[\])?\.(id|child\.id)$", "ids of custom field options: the option's value is kept"),
    (r"nonEditableReason|hasEpicLinkFieldDependency|showField",
     "why a field is read-only for the API user: licence detail"),
    (r"\.attrs\.(?!(url|href|text|shortName|timestamp|title|alt)$)",
     "ADF node attributes (layout, local ids, colours): structure"),
    (r"(^|\.)(isWatching|lastViewed|hasVoted)$", "relative to the API user, not the issue"),
    (r"^fields\.(workratio|progress|aggregateprogress|aggregatetime\w*)(\.|$)", "derived from the time tracking kept"),
    (r"^fields\.timetracking\.(originalEstimate|remainingEstimate|timeSpent)$", "human strings of the seconds kept"),
    (r"^fields\.(worklog|comment)\.(maxResults|startAt|total)$", "paging envelope of embedded lists"),
    (r"\.statusCategory\.id$", "duplicates the status category key"),
    (r"^fields\.project\.insight\.", "project statistics, not the issue"),
    (r"^fields\.watcher\.", "the watcher list (the watcher count is kept)"),
    (r"thumbnail$", "attachment thumbnail URL: derived from the attachment"),
    (r"worklog(\.worklogs)?\[\]\.timeSpent$", "a worklog's human duration string: its seconds are kept"),
    (r"^fields\.subtasks\[\]\.id$", "sub-task ids: their keys are kept; each sub-task's own entity has its id"),
    (r"projectCategory\.description$", "a project category's description: project configuration"),
    (r"(^|\.)issueId$", "a worklog's issue id: the issue itself"),
    (r"(^|\.)body\.version$|^fields\.(description|environment)\.version$", "ADF format version: structure"),
    (r"^operations\[\]", "Confluence: what the API user may do with the page: relative to the caller"),
    (r"restrictions\.\w+\.operation$", "Confluence: a restriction list's operation name: structure"),
)  # fmt: skip
_RANK_OR_CHART = re.compile(r"^\d+\|[0-9a-z]+:|_\*:\*_|^\{\}$")


def dropped(path: str, value: Any) -> bool:
    if isinstance(value, str) and _RANK_OR_CHART.search(value):
        return True  # board rank, time-in-status charts, empty dev summary: change without the record changing
    return any(re.search(pattern, path) for pattern, _ in DROPPED_PATHS)


def _payloads() -> Iterator[tuple[str, Mapping[str, Any], Callable[[Mapping[str, Any]], Entity]]]:
    def load(*parts: str) -> Any:
        return json.loads(FIXTURES.joinpath(*parts).read_text(encoding="utf-8"))

    jira_ctx = JiraItemContext(project_principals=("group:jira:dev",))

    def jira(issue: Mapping[str, Any]) -> Entity:
        return jira_map(RawItem("ticket", str(issue.get("id")), issue, datetime.now(UTC), context=jira_ctx))

    for issue in load("go-atlassian", "jira", "v3", "mocks", "search-issues.json")["issues"]:
        yield "jira", issue, jira
    for issue in load("go-atlassian", "jira", "mocks", "issue-search-v2.json")["issues"]:
        yield "jira", issue, jira
    yield "jira", load("go-atlassian", "jira", "mocks", "get-issue.json"), jira
    yield "jira", load("go-atlassian", "jira", "v3", "mocks", "get-issue.json"), jira
    yield "jira", load("jira-to-matrix", "test", "fixtures", "jira-api-requests", "issue.json"), jira

    space = {"users": ["owner@acme.example"], "groups": ["confluence-users"], "anonymous": False}
    conf_ctx = ConfluenceItemContext(
        base_url="https://ctreminiom.atlassian.net/wiki", space_read=space, inherited_restrictions=[]
    )

    def confluence(page: Mapping[str, Any]) -> Entity:
        return confluence_map(RawItem("page", str(page.get("id")), page, datetime.now(UTC), context=conf_ctx))

    yield "confluence", load("go-atlassian", "confluence", "mocks", "get-content.json"), confluence
    # The same page with the expansions the client asks for, each from its own real capture.
    composed = dict(load("go-atlassian", "confluence", "mocks", "get-content.json"))
    children = load("go-atlassian", "confluence", "mocks", "get-content-children.json")
    composed["children"] = {
        "attachment": children["attachment"],
        "comment": load("go-atlassian", "confluence", "mocks", "get-content-comments.json"),
    }
    yield "confluence", composed, confluence
    for page in load("go-atlassian", "confluence", "mocks", "get-contents.json").get("results") or []:
        yield "confluence", page, confluence
    for hit in load("go-atlassian", "confluence", "mocks", "search-content.json").get("results") or []:
        if isinstance(hit.get("content"), Mapping):
            yield "confluence", hit["content"], confluence

    users = {"U01NK1K9L68": {"email": "jane@acme.example", "name": "jane"}}
    channel = {"id": "C01N9PM1D53", "name": "general", "is_private": False, "is_im": False}
    slack_ctx = SlackItemContext(
        channel=channel, team_id="T01ND2P8N91", team_url="https://acme.slack.com/", users=users
    )

    def slack(msg: Mapping[str, Any]) -> Entity:
        return slack_map(
            RawItem("message", "C01N9PM1D53:x", msg, datetime.now(UTC), container="C01N9PM1D53", context=slack_ctx)
        )

    ops = ("opsdroid", "opsdroid", "connector", "slack", "tests", "responses")
    for name in ("method_conversations.history_first_page.json", "method_conversations.history_second_page.json"):
        for msg in load(*ops, name).get("messages") or []:
            yield "slack", msg, slack
    for name in ("payload_message.json", "payload_message_bot_message.json"):
        yield "slack", load(*ops, name)["event"], slack
    yield "slack", load(*ops, "payload_message_message_changed.json")["event"]["message"], slack


# Markup bodies the mapping converts to clean text: their words reach the text, never the raw string.
CONVERTED = frozenset(
    {
        "body.storage.value",
        "children.comment.results[].body.storage.value",
        "fields.description",
        "fields.environment",
        "fields.comment.comments[].body",
        "fields.comment[].body",
        "fields.worklog.worklogs[].comment",
    }
)


def measure() -> dict[str, tuple[int, int, Counter[str]]]:
    result: dict[str, tuple[int, int, Counter[str]]] = {}
    skip = SKIP_KEYS | ENVELOPE_KEYS | frozenset(DROPPED)
    for connector, payload, mapper in _payloads():
        entity = mapper(payload)
        converted = CONVERTED | _rich_paths(payload)
        cov = coverage(payload, entity, converted=converted, skip=skip, dropped=dropped)
        reached, total, missed = result.get(connector, (0, 0, Counter()))
        missed.update(cov.missed)
        result[connector] = (reached + cov.reached, total + cov.total, missed)
    return result


def _rich_paths(payload: Mapping[str, Any]) -> frozenset[str]:
    """Wiki-markup strings are converted as a whole (their words are checked by the mapping tests);
    ADF and Block Kit leaves are not listed here: each text leaf must reach the entity's text."""
    return frozenset()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--missed", action="store_true", help="list the meaningful fields that did not reach the entity"
    )
    args = parser.parse_args(argv)
    for connector, (reached, total, missed) in measure().items():
        print(f"{connector:<11} {reached:>5}/{total:<5} = {reached / total:.1%} of meaningful non-empty payload fields")
        if args.missed:
            for path, n in missed.most_common():
                print(f"    missed {n:>3}x {path}")
    print("\nDeliberately not kept (not counted as meaningful):")
    for key, why in DROPPED.items():
        print(f"  key {key}: {why}")
    for pattern, why in DROPPED_PATHS:
        print(f"  path {pattern}: {why}")
    print(
        "  values like board ranks (0|i00073:), time-in-status charts (_*:*_), '{}': change without the record changing"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
