"""Confluence storage format -> clean text (issue 13, item 4): editor hints dropped, macro content kept."""

from __future__ import annotations

from connectors.confluence.storage import storage_to_text

STORAGE = (
    '<p><ac:placeholder>Type your summary here</ac:placeholder>Real text <ac:emoticon ac:name="smile" '
    'ac:emoji-fallback="🙂"/> due <time datetime="2024-03-01"/></p>'
    "<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status>"
    "<ac:task-body>ship it</ac:task-body></ac:task><ac:task><ac:task-id>2</ac:task-id>"
    "<ac:task-status>incomplete</ac:task-status><ac:task-body>announce</ac:task-body></ac:task></ac:task-list>"
    '<p>State <ac:structured-macro ac:name="status"><ac:parameter ac:name="colour">Green</ac:parameter>'
    '<ac:parameter ac:name="title">DONE</ac:parameter></ac:structured-macro> now</p>'
    '<ac:structured-macro ac:name="expand"><ac:parameter ac:name="title">Details</ac:parameter>'
    "<ac:rich-text-body><p>hidden body</p></ac:rich-text-body></ac:structured-macro>"
    '<ac:structured-macro ac:name="unknown-thing"><ac:parameter ac:name="x">param</ac:parameter>'
    "<ac:rich-text-body><p>macro body text</p></ac:rich-text-body></ac:structured-macro><p>truncated"
)


def test_placeholders_and_task_bookkeeping_are_dropped_and_macro_content_is_kept() -> None:
    assert storage_to_text(STORAGE).text == (
        "Real text 🙂 due 2024-03-01\n\n- [x] ship it\n\n- [ ] announce\n\nState [DONE] now\n\n"
        "Details\n\nhidden body\n\nmacro body text\n\ntruncated"
    )
