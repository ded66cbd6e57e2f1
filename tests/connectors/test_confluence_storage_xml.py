"""Confluence storage bodies are read by expat when they are plain XML, else by html.parser (decision 75).

The text of every body must not depend on which one read it: each content hash is made from it, and a
different text would re-embed every page once. So the property compares the two on generated bodies:
well-formed storage markup, and the same with the pieces where XML and HTML readers part ways
(entities, CDATA ends, attribute whitespace, raw-text elements, unclosed tags, stray ``<`` and ``&``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.confluence import storage
from connectors.confluence.storage import StorageText, storage_to_text
from tests.connectors.conftest import FIXTURES


def _by_html(body: str) -> StorageText:
    reader = storage._Reader()
    parser = storage._Html(reader)
    parser.feed(body)
    parser.close()
    return reader.finish()


def _by_xml(body: str) -> StorageText:
    reader = storage._Reader()
    storage._read_xml(body, reader)
    return reader.finish()


# Text and attribute pieces of well-formed storage markup.
_PLAIN_TEXT = st.sampled_from(
    [
        "Deploy",
        " the ",
        "service",
        "\n",
        "\t",
        "  ",
        "DEMO-12",
        "see https://x.example/a?b=1&amp;c=2",
        "@ana",
        "&amp;",
        "&lt;b&gt;",
        "&quot;",
        "&apos;",
        "&nbsp;",
        "&eacute;",
        "&frac12;",
        "&#160;",
        "&#x1F600;",
        "&#65;",
        "naïve ",
        "日本",
        "a > b",
        'x = "y"',
        "[a] [b]",
        "]",
    ]
)
_PLAIN_VALUE = st.sampled_from(
    [
        "Home",
        "Design &amp; plan",
        "a > b",
        "it's",
        'say "hi"',
        "&nbsp;x",
        "&#233;t&#xE9;",
        "",
        "ENG",
        "code",
        "jira",
        "status",
        "title",
        "key",
        "https://x.example/p?q=1&amp;r=2",
        "557058:abc",
        "ünïcode",
    ]
)
# What XML and HTML readers may read differently (or one refuses): the bodies holding them must still
# come out the same, through html.parser.
_ODD_TEXT_PIECES = [
    "a & b",
    "AT&T",
    "&bogus;",
    "&amp",
    "&#128;",
    "&#150;",
    "&#0;",
    "&#x7F;",
    "&#xD800;",
    "&#1114112;",
    "&LT;",
    "&Tab;",
    "&NewLine;",
    "1 < 2",
    "<",
    "]]>",
    "a]\xa0]>",
    "\r\n",
    "\r",
    "\x0c",
    "\x00",
    "\x85",
    "<!-- note -->",
    "<!-- a -- b -->",
    "<!DOCTYPE html>",
    "<?php x ?>",
    "<![CDATA[a]] >b]]>",
    "</>",
    "<br>",
    "<P>x</p>",
    "<_x>y</_x>",
    "<\u212a>z</\u212a>",
    "<script>a<b>c</script>",
    "<title>t<i>u</i></title>",
    "<textarea>q<b>r</b></textarea>",
    "<style>s<i>t</i></style>",
    "<p",
    "<a href=x>y</a>",
    '<a href="1" href="2">d</a>',
    '<a href="t\tab">e</a>',
    '<a HREF="up">h</a>',
    '<ac:link><ri:page RI:Content-Title="Up"/></ac:link>',
    '<a href="n\newline">f</a>',
    "<td nowrap>g</td>",
    "\ud800",
]
_ODD_VALUE_PIECES = ["a\tb", "a\nb", "&LT;", "&Tab;x", "&bogus;", "a & b", "&#150;", "a<b"]
_ODD_TEXT = st.sampled_from(_ODD_TEXT_PIECES)
_ODD_VALUE = st.sampled_from(_ODD_VALUE_PIECES)

_BLOCK_TAGS = [
    "p",
    "h1",
    "h2",
    "h3",
    "div",
    "blockquote",
    "pre",
    "li",
    "td",
    "th",
    "tr",
    "table",
    "ul",
    "ol",
    "ac:rich-text-body",
    "ac:task-list",
    "ac:task",
    "ac:task-body",
    "ac:placeholder",
    "span",
    "strong",
]
_MACROS = ["code", "noformat", "jira", "status", "expand", "panel", "info", "unknown-thing", "anchor"]
_PARAMS = ["title", "key", "language", "colour", "x"]


def _quote(value: str) -> str:
    return f'"{value}"' if '"' not in value else f"'{value}'"


@st.composite
def _leaf(draw: st.DrawFn, text: st.SearchStrategy[str], value: st.SearchStrategy[str]) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from(["<br/>", "<br />", "<hr/>", "<br></br>", "<hr></hr>"]))
    if kind == 1:
        target = draw(
            st.sampled_from(
                [
                    f"<ri:page ri:content-title={_quote(draw(value))} ri:space-key={_quote(draw(value))}/>",
                    f"<ri:attachment ri:filename={_quote(draw(value))}/>",
                    f"<ri:user ri:account-id={_quote(draw(value))}/>",
                    f"<ri:url ri:value={_quote(draw(value))}></ri:url>",
                ]
            )
        )
        body = draw(
            st.sampled_from(["", f"<ac:plain-text-link-body><![CDATA[{draw(text)}]]></ac:plain-text-link-body>"])
        )
        return f"<ac:link>{target}{body}</ac:link>"
    if kind == 2:
        return f"<ac:emoticon ac:name={_quote(draw(value))} ac:emoji-fallback={_quote(draw(value))}/>"
    if kind == 3:
        return f"<time datetime={_quote(draw(value))}/>"
    if kind == 4:
        return f"<a href={_quote(draw(value))}>{draw(text)}</a>"
    if kind == 5:
        cdata = draw(st.sampled_from(["x < y && z > 0", "if a]]b", "", "line1\nline2", "<p>not a tag</p>"]))
        return f"<![CDATA[{cdata}]]>"
    if kind == 6:
        return f"<ac:task-status>{draw(st.sampled_from(['complete', 'incomplete', ' complete ']))}</ac:task-status>"
    if kind == 7:
        return f"<!--{draw(st.sampled_from([' a comment ', '', 'x-y']))}-->"
    return draw(text)


def _bodies(text: st.SearchStrategy[str], value: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def wrap(children: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
        @st.composite
        def element(draw: st.DrawFn) -> str:
            inner = "".join(draw(children))
            if draw(st.booleans()):
                tag = draw(st.sampled_from(_BLOCK_TAGS))
                return f"<{tag}>{inner}</{tag}>"
            macro = draw(st.sampled_from(_MACROS))
            param = f"<ac:parameter ac:name={_quote(draw(st.sampled_from(_PARAMS)))}>{draw(text)}</ac:parameter>"
            body = draw(
                st.sampled_from(
                    [
                        f"<ac:plain-text-body><![CDATA[{draw(text)}]]></ac:plain-text-body>",
                        f"<ac:rich-text-body>{inner}</ac:rich-text-body>",
                        inner,
                    ]
                )
            )
            return f"<ac:structured-macro ac:name={_quote(macro)}>{param}{body}</ac:structured-macro>"

        return element()

    tree = st.recursive(_leaf(text, value), lambda kids: wrap(st.lists(kids, max_size=4)), max_leaves=25)
    return st.lists(tree, min_size=1, max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(_bodies(_PLAIN_TEXT, _PLAIN_VALUE))
def test_a_well_formed_body_is_read_by_expat_with_html_parsers_result(body: str) -> None:
    # Raises if expat refused the body or found something to hand back: the fast path must be the usual one.
    assert _by_xml(body) == _by_html(body)
    assert storage_to_text(body) == _by_html(body)


@settings(max_examples=600, deadline=None)
@given(_bodies(st.one_of(_PLAIN_TEXT, _ODD_TEXT), st.one_of(_PLAIN_VALUE, _ODD_VALUE)))
def test_any_body_reads_the_same_as_html_parser_reads_it(body: str) -> None:
    assert storage_to_text(body) == _by_html(body)


# Each odd piece in each place a body can hold it: text, an attribute value, a code body, a parameter.
_PLACES = (
    "<p>before {t} after</p><ul><li>x</li></ul>",
    '<p><a href="{v}">link</a> <ac:link><ri:page ri:content-title="{v}"/></ac:link></p>',
    '<ac:structured-macro ac:name="code"><ac:plain-text-body><![CDATA[{t}]]></ac:plain-text-body>'
    "</ac:structured-macro><p>tail</p>",
    '<ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">K-{t}</ac:parameter></ac:structured-macro>',
)


@pytest.mark.parametrize("piece", _ODD_TEXT_PIECES + _ODD_VALUE_PIECES)
@pytest.mark.parametrize("place", _PLACES)
def test_each_odd_piece_reads_the_same_in_each_place(piece: str, place: str) -> None:
    body = place.format(t=piece, v=piece.replace('"', "&quot;"))
    assert storage_to_text(body) == _by_html(body)


def test_code_keeps_markup_characters_and_entities_resolve_in_text_and_attributes() -> None:
    body = (
        '<p>Caf&eacute; &amp; bar&nbsp;&#8212; <a href="https://x.example/?a=1&amp;b=2">x</a></p>'
        '<ac:structured-macro ac:name="code"><ac:plain-text-body><![CDATA[if a < b && c > d:\n    go()]]>'
        "</ac:plain-text-body></ac:structured-macro><ul><li>one</li><li>two<ol><li>deep</li></ol></li></ul>"
        '<p><ac:link><ri:page ri:space-key="ENG" ri:content-title="Caf&eacute; plan"/></ac:link></p>'
    )
    out = _by_xml(body)
    assert out == _by_html(body)
    assert out.text == (
        "Café & bar — x (https://x.example/?a=1&b=2)\n\n```\nif a < b && c > d:\n    go()\n```\n\n"
        "- one\n- two\n  1. deep\n\nCafé plan"
    )
    assert out.page_links == [("ENG", "Café plan")]
    assert out.urls == ["https://x.example/?a=1&b=2"]


def test_a_body_expat_refuses_is_read_leniently() -> None:
    body = "<p>AT&T <b>unclosed<p>1 < 2<br>next"
    assert storage_to_text(body).text == "AT&T unclosed\n\n1 < 2\n\nnext"


# Page bodies a real publisher (kovetskiy/mark) writes to Confluence (tests/fixtures/README.md). One holds
# KaTeX's SVG, whose path attributes carry newlines (XML would make them spaces): html.parser reads it.
_PUBLISHED = sorted((FIXTURES / "mark" / "testdata").glob("*.html"))
_READ_AS_HTML = {"math-katex.html"}


@pytest.mark.parametrize("path", _PUBLISHED, ids=lambda p: p.name)
def test_a_published_body_reads_the_same_and_expat_reads_it(path: Path) -> None:
    body = path.read_text(encoding="utf-8")
    assert storage_to_text(body) == _by_html(body)
    if path.name in _READ_AS_HTML:
        with pytest.raises(storage._NotPlainXml):
            _by_xml(body)
    else:
        assert _by_xml(body).text  # expat took it (it raises otherwise), and there is text


def test_the_published_bodies_are_there() -> None:
    assert len(_PUBLISHED) == 42
