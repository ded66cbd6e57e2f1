"""Slack mrkdwn and Block Kit -> clean text (issue 13, item 4), and blocks-only messages reach the entity."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.base import RawItem
from connectors.slack.context import SlackItemContext
from connectors.slack.mapping import map_item
from connectors.slack.text import render_blocks, render_mrkdwn
from tests.connectors.conftest import FIXTURES

USERS = {"U1": {"email": "Jane@Acme.example", "name": "jane"}}
CHANNELS = {"C9": "deploys"}
PUBLIC = {"id": "C1", "name": "general", "is_private": False}


def test_mrkdwn_leaves_no_markup_residue_and_reads_as_a_person_would() -> None:
    text = (
        "*Deploy* _today_ ~not~ `now` <@U1> in <#C9> and <#C7|ops>, <!subteam^S1|@oncall>, <!here>, "
        "<!date^1392734382^{date_short}|Feb 18, 2014>, <https://x.example/a|the doc>\n&gt; quoted\n```\ncode\n```"
    )
    out = render_mrkdwn(text, USERS, CHANNELS)
    assert out.text == (
        "Deploy today not now @jane in #deploys and #ops, @oncall, @here, Feb 18, 2014, the doc (https://x.example/a)\n"
        "quoted\ncode"
    )
    assert (out.users, out.channels, out.links) == (["U1"], ["C9", "C7"], ["https://x.example/a"])


def test_blocks_render_rich_text_lists_tables_context_and_unknown_types() -> None:
    blocks: list[Any] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Release 2.1"}},
        {
            "type": "rich_text",
            "elements": [
                {
                    "type": "rich_text_section",
                    "elements": [{"type": "text", "text": "Steps for "}, {"type": "user", "user_id": "U1"}],
                },
                {
                    "type": "rich_text_list",
                    "style": "ordered",
                    "elements": [
                        {"type": "rich_text_section", "elements": [{"type": "text", "text": "build"}]},
                        {
                            "type": "rich_text_section",
                            "elements": [{"type": "link", "url": "https://ci.example", "text": "ci"}],
                        },
                    ],
                },
                {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "make all"}]},
            ],
        },
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "*Owner:* <#C9>"},
            "fields": [{"type": "plain_text", "text": "P1"}],
        },
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": "_by_ bot"}, {"type": "image", "alt_text": "logo"}],
        },
        {"type": "table", "rows": [[{"type": "raw_text", "text": "a"}, {"type": "raw_text", "text": "b"}]]},
        {"type": "divider"},
        {"type": "hologram", "payload": {"text": "kept anyway"}},
        "garbage",
    ]
    out = render_blocks(blocks, USERS, CHANNELS)
    assert out.text == (
        "Release 2.1\n\nSteps for @jane\n1. build\n2. ci (https://ci.example)\nmake all\n\nOwner: #deploys\nP1\n\n"
        "by bot logo\n\na | b\n\nkept anyway"
    )
    assert out.users == ["U1"] and out.channels == ["C9"]


def _raw(msg: dict[str, Any]) -> RawItem:
    ctx = SlackItemContext(channel=PUBLIC, team_id="T1", users=USERS, channels=CHANNELS)
    return RawItem("message", f"C1:{msg['ts']}", msg, datetime.now(UTC), container="C1", context=ctx)


def test_blocks_only_message_keeps_its_content_and_duplicates_are_not_repeated() -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Incident *resolved* by <@U1>"}}]
    only = map_item(_raw({"ts": "1700000000.000100", "text": "", "blocks": blocks, "bot_id": "B1"}))
    assert only.text == "Incident resolved by @jane"
    assert only.metadata["mentions"] == ["user:jane@acme.example", "user:slack:U1"]
    shown = "This content can't be displayed."
    fallback = map_item(_raw({"ts": "1700000000.000200", "text": shown, "blocks": blocks}))
    assert fallback.text == "Incident resolved by @jane"
    section = {"type": "rich_text_section", "elements": [{"type": "text", "text": "hello all"}]}
    same = [{"type": "rich_text", "elements": [section]}]
    assert map_item(_raw({"ts": "1700000000.000300", "text": "hello *all*", "blocks": same})).text == "hello all"


def test_every_sdk_sample_message_with_blocks_maps_without_error() -> None:
    history = json.loads((FIXTURES / "java-slack-sdk/json-logs/samples/api/conversations.history.json").read_text())
    messages = [m for m in history["messages"] if isinstance(m, dict) and m.get("ts")]
    assert messages
    for m in messages:
        msg = {**m, "ts": "1700000000.000100", "text": m.get("text") or ""}
        assert map_item(_raw(msg)).source_entity_id == "C1:1700000000.000100"


# mrkdwn as it was rendered before decision 96, kept as the reference: the style patterns opened with their
# lookbehind, every pass ran on every text, and each group went through a function.
_OLD_STYLES = tuple(
    re.compile(rf"(?<![\w{m}]){re.escape(m)}(?=\S)([^{m}\n]*?\S){re.escape(m)}(?![\w{m}])") for m in "*_~"
)
_OLD_FENCE = re.compile(r"```\n?(.*?)\n?```", re.DOTALL)
_OLD_CODE = re.compile(r"`([^`\n]+)`")
_OLD_QUOTE = re.compile(r"^>\s?", re.MULTILINE)


def old_markup_passes(clean: str) -> str:
    clean = _OLD_FENCE.sub(lambda m: m.group(1), clean)
    clean = _OLD_CODE.sub(lambda m: m.group(1), clean)
    for pattern in _OLD_STYLES:
        clean = pattern.sub(lambda m: m.group(1), clean)
    return html.unescape(_OLD_QUOTE.sub("", clean.replace("&gt;", ">"))).strip()


# Texts joined from what the passes match and what their guards look at: markers next to words, blanks,
# newlines, other markers and each other; fences, code spans, quotes and escapes.
_PIECES = st.sampled_from(
    ["*", "_", "~", "`", "```", "```\n", "\n", " ", ">", "> ", "&gt;", "&amp;", "&lt;", "a", "b1", "x_y", "é",
     ".", "-", "*a*", "_b_", "~c~", "`d`", "**", "__", "~~", "*_", "_*", "\t", "&gt; q", "&#42;"]
)  # fmt: skip
_MRKDWN = st.lists(_PIECES, max_size=24).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=_MRKDWN)
def test_mrkdwn_passes_render_what_they_rendered_before(text: str) -> None:
    assert render_mrkdwn(text, USERS, CHANNELS).text == old_markup_passes(text)


def test_style_markers_by_the_guard() -> None:
    # The character before an opening marker decides: start of text, a blank and punctuation open; a word
    # character or the same marker does not.
    assert render_mrkdwn("*a*", {}).text == "a"
    assert render_mrkdwn("x *a* y", {}).text == "x a y"
    assert render_mrkdwn("(*a*)", {}).text == "(a)"
    assert render_mrkdwn("x*a* y", {}).text == "x*a* y"
    assert render_mrkdwn("**a**", {}).text == "**a**"
    assert render_mrkdwn("snake_case_name", {}).text == "snake_case_name"
    assert render_mrkdwn("~a~_b_", {}).text == "~a~b"  # underscores first; then "~a~" sits before a word
