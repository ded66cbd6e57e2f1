"""Jira emulator: deterministic, lazy, control API."""

from __future__ import annotations

from itertools import pairwise

import httpx

from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import serve


def test_same_seed_same_data_other_seed_other_data() -> None:
    a, b, c = JiraEmulator(500, seed=3), JiraEmulator(500, seed=3), JiraEmulator(500, seed=4)
    assert [a.render(i, 3, "http://x") for i in range(0, 500, 37)] == [
        b.render(i, 3, "http://x") for i in range(0, 500, 37)
    ]
    assert a.render(1, 2, "http://x") != c.render(1, 2, "http://x")


def test_a_million_issues_start_lazily() -> None:
    emu = JiraEmulator(1_000_000, seed=1)
    assert not emu.edits and not emu.deleted
    assert emu.count("project in (ALPHA, BETA) ORDER BY updated ASC") == 500_000
    last = emu.render(999_999, 3, "http://x")
    assert last["key"] == "OPS-250000" and last["id"] == "1009999"
    page = [i for _, i in zip(range(3), emu.iterate('project = CORE AND updated >= "2025/01/01 00:00"'), strict=False)]
    assert len(page) == 3 and all(i % emu.p == 2 for _, i in page)


def test_links_agree_on_both_ends() -> None:
    emu = JiraEmulator(300, seed=2)
    for i in range(300):
        for link in emu.links(i):
            other = emu.links(int(link["other"]))
            back = [x for x in other if x["other"] == i and x["type"] == link["type"]]
            assert back and back[0]["dir"] != link["dir"]


def test_control_api_edits_deletes_creates() -> None:
    with serve(JiraEmulator(12, seed=1)) as emu:
        base = f"{emu.base_url}/_emulator"
        assert httpx.get(f"{base}/issues").json()["count"] == 12
        assert httpx.delete(f"{base}/issues/ALPHA-1").status_code == 204
        created = httpx.post(f"{base}/issues", json={"project": "BETA", "summary": "new"}).json()
        assert httpx.patch(f"{base}/issues/BETA-1", json={"summary": "edited", "status": "Done"}).status_code == 200
        keys = httpx.get(f"{base}/issues").json()["keys"]
        assert "ALPHA-1" not in keys and created["key"] in keys
        search = httpx.get(f"{emu.base_url}/rest/api/2/search", params={"jql": "project = BETA"}).json()
        order = [i["key"] for i in search["issues"]]
        # Edited and created issues sort after the untouched ones (updated ASC).
        assert order[-2:] == [created["key"], "BETA-1"]
        assert search["issues"][-1]["fields"]["status"]["statusCategory"]["key"] == "done"
        assert httpx.get(f"{emu.base_url}/rest/api/3/issue/ALPHA-1").status_code == 404
        assert httpx.patch(f"{base}/issues/BETA-2", json={"bogus": 1}).status_code == 400


def test_every_attachment_downloads_past_ten_thousand_issues() -> None:
    # The attachment ids are 20000 + i (a text file) and 30000 + i (a screenshot): past 10,000 issues
    # the ranges overlap, and the download route used to answer 404 for every text file there.
    app = JiraEmulator(12_000, seed=1)
    with serve(app) as emu:
        for i in (2, 10_002, 11_998):  # i % 4 == 2: a text file; 10,002 and 11,998 in the overlap
            rendered = app.render(i, 2, emu.base_url)
            texts = [a for a in rendered["fields"]["attachment"] if a["mimeType"] == "text/plain"]
            assert len(texts) == 1, rendered["fields"]["attachment"]
            got = httpx.get(texts[0]["content"])
            assert got.status_code == 200, (i, texts[0]["content"])
            assert got.text.startswith(f"Repro notes for {rendered['key']}"), got.text


def _paragraphs(node: object) -> list[list[dict[str, object]]]:
    if isinstance(node, list):
        return [p for child in node for p in _paragraphs(child)]
    if not isinstance(node, dict):
        return []
    own = [node["content"]] if node.get("type") == "paragraph" and isinstance(node.get("content"), list) else []
    return own + [p for value in node.values() for p in _paragraphs(value)]


def test_adf_paragraphs_hold_runs_of_text_as_jiras_editor_writes_them() -> None:
    # Jira's editor merges adjacent text with the same marks into one node (tests/fixtures/go-atlassian
    # holds whole sentences in one); a node per word made every benchmark's JSON and ADF walk costlier
    # than a real source's (decision 121). The text a node run renders stays word for word the same.
    emu = JiraEmulator(40, seed=1)
    paragraphs = [p for i in range(40) for p in _paragraphs(emu.render(i, 3, "http://x")["fields"])]
    assert paragraphs
    for content in paragraphs:
        plain = [n.get("type") == "text" and not n.get("marks") for n in content]
        assert not any(a and b for a, b in pairwise(plain)), content
    texts = [n["text"] for content in paragraphs for n in content if n.get("type") == "text" and not n.get("marks")]
    assert any(" " in str(t).strip() for t in texts)  # sentences, not words
    marked = [n for content in paragraphs for n in content if n.get("marks") or n.get("type") == "mention"]
    assert marked  # links and mentions keep nodes of their own
