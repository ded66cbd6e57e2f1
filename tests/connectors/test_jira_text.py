"""Jira rich text -> clean text for every ADF node type, odd input, and mentions -> identities (issue 13)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.base import RawItem
from connectors.jira.context import JiraItemContext
from connectors.jira.mapping import map_item
from connectors.jira.text import _inline, _inline_all, _space_cards, adf_to_text, mention_targets, to_text


def p(*inline: Any) -> dict[str, Any]:
    return {"type": "paragraph", "content": list(inline)}


def t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def item(*content: Any) -> dict[str, Any]:
    return {"type": "listItem", "content": list(content)}


EVERY_NODE = {
    "type": "doc",
    "version": 1,
    "content": [
        {"type": "heading", "attrs": {"level": 1}, "content": [t("Title")]},
        {"type": "orderedList", "attrs": {"order": 3}, "content": [item(p(t("third"))), item(p(t("fourth")))]},
        {"type": "bulletList", "content": [item(p(t("a")), {"type": "bulletList", "content": [item(p(t("b")))]})]},
        p(t("see"), {"type": "inlineCard", "attrs": {"url": "https://x.example/1"}}, t("now")),
        {"type": "blockCard", "attrs": {"url": "https://x.example/2"}},
        {"type": "embedCard", "attrs": {"url": "https://x.example/3", "layout": "center"}},
        {"type": "codeBlock", "attrs": {"language": "python"}, "content": [t("print(1)")]},
        {"type": "panel", "attrs": {"panelType": "warning"}, "content": [p(t("careful"))]},
        {"type": "blockquote", "content": [p(t("quoted"))]},
        {"type": "rule"},
        p(
            {"type": "status", "attrs": {"text": "IN PROGRESS", "color": "blue"}},
            t(" due "),
            {"type": "date", "attrs": {"timestamp": "1700000000000"}},
            t(" "),
            {"type": "emoji", "attrs": {"shortName": ":smile:", "text": "😄"}},
            {"type": "hardBreak"},
            {"type": "mention", "attrs": {"id": "5b10a2844c20165700ede21g", "text": "@Mia Krystof"}},
            {"type": "placeholder", "attrs": {"text": "Type something"}},
        ),
        {
            "type": "table",
            "content": [
                {"type": "tableRow", "content": [{"type": "tableHeader", "content": [p(t("h1"))]}, {"type": "tableHeader", "content": [p(t("h2"))]}]},  # noqa: E501
                {"type": "tableRow", "content": [{"type": "tableCell", "content": [p(t("c1"))]}, {"type": "tableCell", "content": [p(t("c2"))]}]},  # noqa: E501
            ],
        },
        {"type": "taskList", "content": [{"type": "taskItem", "attrs": {"state": "DONE"}, "content": [t("shipped")]}, {"type": "taskItem", "attrs": {"state": "TODO"}, "content": [t("announce")]}]},  # noqa: E501
        {"type": "decisionList", "content": [{"type": "decisionItem", "attrs": {"state": "DECIDED"}, "content": [t("use ADF")]}]},  # noqa: E501
        {"type": "expand", "attrs": {"title": "Details"}, "content": [p(t("hidden"))]},
        {"type": "layoutSection", "content": [{"type": "layoutColumn", "content": [p(t("left"))]}, {"type": "layoutColumn", "content": [p(t("right"))]}]},  # noqa: E501
        {"type": "mediaSingle", "content": [{"type": "media", "attrs": {"id": "m1", "type": "file", "alt": "diagram.png"}}]},  # noqa: E501
        {"type": "bodiedExtension", "attrs": {"extensionKey": "x"}, "content": [p(t("macro body"))]},
        {"type": "hologram", "content": [p(t("future node keeps its text"))]},
    ],
}


def test_every_adf_node_type_renders_clean_text() -> None:
    assert adf_to_text(EVERY_NODE) == (
        "Title\n\n3. third\n4. fourth\n\n- a\n  - b\n\nsee https://x.example/1 now\n\nLink: https://x.example/2\n\n"
        "Link: https://x.example/3\n\n```python\nprint(1)\n```\n\ncareful\n\nquoted\n\n"
        "[IN PROGRESS] due 2023-11-14 😄\n@Mia Krystof\n\nh1 | h2\nc1 | c2\n\n- [x] shipped\n- [ ] announce\n\n"
        "- Decision: use ADF\n\nDetails\nhidden\n\nleft\n\nright\n\n[media: diagram.png]\n\nmacro body\n\n"
        "future node keeps its text"
    )


def test_truncated_and_odd_adf_never_raises_and_keeps_the_text() -> None:
    odd: list[Any] = [
        {"type": "doc", "content": "truncated"},
        {"type": "doc", "content": [None, 3, {"type": "paragraph", "content": 7}, p(t("kept"))]},
        {"type": "doc", "content": [{"type": "table", "content": [None, {"type": "tableRow", "content": "x"}]}]},
        {"type": "doc", "content": [{"type": "text", "text": "bare text"}, {"type": "date", "attrs": []}]},
        {"type": "doc", "content": [{"type": "orderedList", "attrs": {"order": "x"}, "content": [item(p(t("one")))]}]},
    ]
    texts = [adf_to_text(doc) for doc in odd]
    assert texts[1] == "kept" and texts[3].startswith("bare text") and texts[4] == "1. one"
    assert to_text(12) == "" and to_text(None) == ""


def test_mentions_in_adf_and_wiki_resolve_to_the_same_person() -> None:
    assert mention_targets(EVERY_NODE) == ["5b10a2844c20165700ede21g"]
    assert mention_targets("ping [~accountid:5b10a2844c20165700ede21g] and [~jdoe]") == [
        "accountid:5b10a2844c20165700ede21g",
        "jdoe",
    ]
    mia = {"accountId": "5b10a2844c20165700ede21g", "emailAddress": "Mia@Example.com", "displayName": "Mia"}
    fields = {"summary": "s", "description": EVERY_NODE, "reporter": mia}
    v3 = map_item(RawItem("ticket", "1", {"id": "1", "key": "P-1", "fields": fields}, datetime.now(UTC), context=JiraItemContext()))  # noqa: E501
    wiki = {**fields, "description": "cc [~accountid:5b10a2844c20165700ede21g]"}
    v2 = map_item(RawItem("ticket", "1", {"id": "1", "key": "P-1", "fields": wiki}, datetime.now(UTC), context=JiraItemContext()))  # noqa: E501
    expected = ["user:accountid:5b10a2844c20165700ede21g", "user:mia@example.com"]
    assert v3.metadata["mentions"] == v2.metadata["mentions"] == expected
    assert v3.metadata["reporter_identities"] == ["user:mia@example.com", "user:accountid:5b10a2844c20165700ede21g"]


def _mentions_recursive(node: object) -> list[str]:
    """The plain reading of mention_targets' contract: every mention id, depth-first in document order."""
    if not isinstance(node, dict):
        return []
    attrs = node.get("attrs")
    own = [str(attrs["id"])] if node.get("type") == "mention" and isinstance(attrs, dict) and attrs.get("id") else []
    content = node.get("content")
    return own + [m for child in (content if isinstance(content, list) else []) for m in _mentions_recursive(child)]


_ADF_NODES = st.recursive(
    st.one_of(
        st.builds(
            lambda i: {"type": "mention", "attrs": {"id": i, "text": "@x"}}, st.sampled_from(["a", "b", "c", "", 7])
        ),
        st.just({"type": "mention"}),
        st.just({"type": "mention", "attrs": None}),
        st.just({"type": "text", "text": "hi"}),
        st.sampled_from(["stray string", 3, None]),
    ),
    lambda kids: st.builds(
        lambda kind, content: {"type": kind, "content": content},
        # "text" and "mention" with content are not valid ADF, and the walk must still look inside them.
        st.sampled_from(["doc", "paragraph", "bulletList", "listItem", "table", "extension", "text", "mention", None]),
        st.one_of(st.lists(kids, max_size=5), st.just("not a list"), st.none()),
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_ADF_NODES.filter(lambda n: isinstance(n, dict)))
def test_mention_targets_finds_every_mention_in_document_order_once(doc: dict[str, object]) -> None:
    assert mention_targets(doc) == list(dict.fromkeys(_mentions_recursive(doc)))


_TEXT_NODES = st.fixed_dictionaries(
    {"type": st.just("text")},
    optional={
        "text": st.one_of(st.text(max_size=8), st.none(), st.integers()),
        "marks": st.one_of(
            st.none(),
            st.just([]),
            st.just("not a list"),
            st.lists(
                st.one_of(
                    st.just({"type": "strong"}),
                    st.builds(
                        lambda h: {"type": "link", "attrs": {"href": h}}, st.sampled_from(["", "https://x", "hi"])
                    ),
                ),
                max_size=2,
            ),
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT_NODES, max_size=4))
def test_text_runs_render_as_each_text_node_does_alone(nodes: list[dict[str, object]]) -> None:
    # _inline_all reads a plain text node in place (decision 99): the same as rendering each with _inline.
    expected = _space_cards("".join(_inline(n) for n in nodes)).strip("\n")
    assert _inline_all({"type": "paragraph", "content": nodes}) == expected
