"""Slack client against the Slack emulator over real HTTP: paging, threads, since, errors, resume."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from connectors.base import (
    Acl,
    CallStats,
    Checkpoint,
    Emitted,
    ItemError,
    ItemGone,
    MalformedPayload,
    RawItem,
    SourceAuthFailed,
    SourceConfig,
)
from connectors.emulators.kit import RunningEmulator, serve
from connectors.emulators.slack import SlackEmulator
from connectors.slack import CONNECTOR
from connectors.slack.client import SlackConnector, SlackError, classify_slack_error

TOKEN = "xoxb-test"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    running = serve(SlackEmulator(messages=70, seed=5, token=TOKEN))
    yield running
    running.stop()


def connector(emu: RunningEmulator, stats: CallStats | None = None, **kw: Any) -> SlackConnector:
    config = SourceConfig(1, emu.base_url, kw.pop("token", TOKEN), kw.pop("scope_mode", "all"),
                          tuple(kw.pop("scope_list", ())), {"direct_messages": True})  # fmt: skip
    return SlackConnector(config, stats or CallStats(), page_size=4, max_wait=0.01)


def control(emu: RunningEmulator, method: str, path: str, body: Any = None) -> Any:
    resp = httpx.request(method, emu.base_url + "/_emulator/" + path, json=body)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def raws(items: list[Emitted] | list[Any]) -> dict[str, RawItem]:
    return {i.source_entity_id: i for i in items if isinstance(i, RawItem)}


def test_full_run_reads_every_message_and_thread_reply(emu: RunningEmulator) -> None:
    stats = CallStats()
    conn = connector(emu, stats)
    items = list(conn.enumerate(None, None))
    conn.close()
    found = raws(items)
    assert sorted(found) == sorted(control(emu, "GET", "messages")["messages"])
    assert sum(isinstance(i, Checkpoint) for i in items) > 7
    entities = [CONNECTOR.map_item(r) for r in found.values()]
    replies = [e for e in entities if e.edges and e.edges[0].relation == "reply_to"]
    assert replies and all(e.edges[0].target_id in found for e in replies)
    acls = {e.container: e.acl for e in entities}
    assert acls["C0GENERAL"] == Acl(("group:slack:T0DEMO:members",))
    assert acls["G0LEADERS"].principals is not None and "user:alice.ng@demo.example" in acls["G0LEADERS"].principals
    assert all(e.author and "@" in e.author for e in entities if e.metadata.get("user_id"))


def test_scope_selected_channels_by_id_or_name(emu: RunningEmulator) -> None:
    conn = connector(emu, scope_mode="selected", scope_list=["#incidents", "G0HRTEAM"])
    found = raws(list(conn.enumerate(None, None)))
    conn.close()
    assert {r.container for r in found.values()} == {"C0INCIDENT", "G0HRTEAM"}


def test_incremental_since_sees_new_posts_edits_and_new_replies_to_old_threads(emu: RunningEmulator) -> None:
    conn = connector(emu)
    everything = raws(list(conn.enumerate(None, None)))
    parent = next(r for r in everything.values() if r.payload.get("reply_count") and r.container == "C0GENERAL")
    since = datetime.now(UTC) - timedelta(seconds=1)
    posted = control(emu, "POST", "messages", {"channel": "C0RANDOM", "text": "new DEMO-3"})
    reply = control(
        emu, "POST", "messages", {"channel": "C0GENERAL", "text": "late", "thread_ts": parent.payload["ts"]}
    )
    old = next(k for k in everything if k.startswith("C0ENGINEER:"))
    control(emu, "PATCH", "messages/" + old.replace(":", "/"), {"text": "edited"})
    # the generated data is from 2023: look back far enough to reach the old thread and the edit
    conn.lookback = timedelta(days=3650)
    delta = raws(list(conn.enumerate(since, None)))
    assert conn.has_delta(since)
    conn.close()
    assert {posted["id"], reply["id"], old, parent.source_entity_id} <= set(delta)
    assert len(delta) < len(everything) / 2
    assert CONNECTOR.map_item(delta[old]).text == "edited"


def test_rate_limits_429_retry_after(emu: RunningEmulator) -> None:
    control(emu, "POST", "faults", {"status": 429, "count": 4, "retry_after": 0})
    stats = CallStats()
    conn = connector(emu, stats)
    items = list(conn.enumerate(None, None))
    conn.close()
    assert stats.rate_limited == 4 and not [i for i in items if isinstance(i, ItemError)]


def test_channel_and_item_errors_go_to_the_dlq_and_the_run_goes_on(emu: RunningEmulator) -> None:
    control(emu, "POST", "faults", {"status": 403, "keys": ["C0RANDOM"]})
    ids = control(emu, "GET", "messages?channel=C0GENERAL")["messages"]
    control(emu, "POST", "faults", {"malformed": True, "keys": [ids[0]]})
    conn = connector(emu)
    items = list(conn.enumerate(None, None))
    errors = [i for i in items if isinstance(i, ItemError)]
    # The error covers the whole channel: reconciliation must not take its messages for deleted.
    assert errors == [ItemError("message", "C0RANDOM:*", "permission", "slack error: not_in_channel", "C0RANDOM")]
    with pytest.raises(MalformedPayload):
        CONNECTOR.map_item(raws(items)[ids[0]])
    control(emu, "DELETE", "faults")
    control(emu, "DELETE", "messages/" + ids[1].replace(":", "/"))
    out = list(conn.fetch([("message", ids[1]), ("message", "C0NOPE:1.000100"), ("message", "C0RANDOM:*")]))
    conn.close()
    assert ItemGone("message", ids[1]) in out and ItemGone("message", "C0NOPE:1.000100") in out
    assert {r.container for r in raws(out).values()} == {"C0RANDOM"}  # the whole channel re-read


def test_fetch_of_a_thread_parent_brings_the_whole_thread(emu: RunningEmulator) -> None:
    conn = connector(emu)
    everything = raws(list(conn.enumerate(None, None)))
    parent = next(r for r in everything.values() if r.payload.get("reply_count", 0) >= 2)
    out = raws(list(conn.fetch([("message", parent.source_entity_id)])))
    conn.close()
    assert parent.source_entity_id in out and len(out) == 1 + parent.payload["reply_count"]


def test_checkpoint_resume(emu: RunningEmulator) -> None:
    conn = connector(emu)
    total = raws(list(conn.enumerate(None, None)))
    first: list[Emitted] = []
    position = None
    for item in conn.enumerate(None, None):
        first.append(item)
        if isinstance(item, Checkpoint) and len(raws(first)) > 30:
            position = item.position
            break
    assert position is not None
    rest = raws(list(conn.enumerate(None, position)))
    conn.close()
    assert set(raws(first)) | set(rest) == set(total)
    assert not set(raws(first)) & set(rest)


def test_no_two_checkpoints_come_in_a_row(emu: RunningEmulator) -> None:
    """A channel's last page is closed by the checkpoint past the channel alone: a second one with nothing
    between them would cost the run a transaction of its own (decision 124)."""
    conn = connector(emu)
    items = list(conn.enumerate(None, None))
    kinds = ["cp" if isinstance(i, Checkpoint) else "item" for i in items]
    assert kinds.count("cp") > 7
    assert not [n for n in range(1, len(kinds)) if kinds[n] == kinds[n - 1] == "cp"]
    # Every channel is still closed by the checkpoint past it: a resume from there reads the next channel.
    ends = [i.position for i in items if isinstance(i, Checkpoint) and i.position["cursor"] is None]
    assert [p["channel"] for p in ends] == list(range(1, len(ends) + 1))
    conn.close()


def test_a_checkpoint_taken_after_a_channel_s_last_page_resumes_with_the_next_channel(emu: RunningEmulator) -> None:
    """Runs checkpointed before decision 124 hold ``{"channel": n, "cursor": ""}``: channel n is done."""
    conn = connector(emu)
    every = list(conn.enumerate(None, None))
    after_first = raws(list(conn.enumerate(None, {"channel": 0, "cursor": ""})))
    from_second = raws(list(conn.enumerate(None, {"channel": 1, "cursor": None})))
    conn.close()
    first_channel = next(i.container for i in every if isinstance(i, RawItem))
    assert after_first and set(after_first) == set(from_second)
    assert first_channel not in {r.container for r in after_first.values()}


def test_slack_ok_false_errors_are_classified(emu: RunningEmulator) -> None:
    bad = connector(emu, token="xoxb-wrong")
    assert bad.probe() == "auth_failed"
    with pytest.raises(SourceAuthFailed):
        list(bad.enumerate(None, None))
    bad.close()
    assert classify_slack_error("channel_not_found") == SlackError("channel_not_found", "not_found", False)
    assert classify_slack_error("missing_scope").reason == "permission"
    assert classify_slack_error("not_in_channel").reason == "permission"
    assert classify_slack_error("ratelimited").transient
    with pytest.raises(SourceAuthFailed):
        classify_slack_error("not_authed")


def test_cli_prints_base_url_first() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "connectors.emulators.slack", "--port", "0", "--messages", "10", "--seed", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        assert httpx.get(base + "/api/auth.test").json()["ok"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=10)
