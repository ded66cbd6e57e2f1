"""What a Slack message costs the client as the workspace grows (decision 124).

``SlackConnector._raw`` turns one message of ``conversations.history`` into a RawItem with the facts its
mapping needs (the people it names, the channel, who outside the workspace sees a public channel). Those
facts come from maps read once a run (``users.list``, ``conversations.list``); nothing done per message may
walk them whole, or a workspace of 10,000 people costs every message ~1 ms (it did: the check "is anyone a
guest?" ran per message). This bench times ``_raw`` on the same messages against workspaces of
``--small`` and ``--large`` people, the maps filled in directly (no HTTP: the request costs are not the
subject), and prints the ratio; it should stay near 1.

    python bench/slack_workspace.py [--small 10] [--large 10000] [--messages 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.base import CallStats, SourceConfig
from connectors.slack.client import SlackConnector

CHANNEL: dict[str, Any] = {"id": "C0GENERAL", "name": "general", "is_private": False, "is_im": False, "is_mpim": False}


def connector(people: int) -> SlackConnector:
    """A connector whose run-wide maps are already read: ``people`` users, none a guest, one channel."""
    c = SlackConnector(SourceConfig(1, "http://127.0.0.1:9", "xoxb-bench", "all", (), {}), CallStats())
    c._team = {"team_id": "T0BENCH", "url": "https://bench.slack.com/"}
    c._users = {f"U{i:07d}": {"email": f"person{i}@bench.example", "name": f"person{i}"} for i in range(people)}
    c._has_guests = False
    c._channels = {CHANNEL["id"]: CHANNEL}
    return c


def messages(count: int, people: int) -> list[dict[str, Any]]:
    """Messages by people of the smaller workspace, each naming one more of them, half with blocks."""
    out: list[dict[str, Any]] = []
    for i in range(count):
        author, named = f"U{i % people:07d}", f"U{(i + 1) % people:07d}"
        msg: dict[str, Any] = {"type": "message", "ts": f"{1_700_000_000 + i}.000100", "user": author,
                               "text": f"status of the rollout <@{named}>, see <#C0GENERAL>"}  # fmt: skip
        if i % 2:
            msg["blocks"] = [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
                {"type": "text", "text": "status of the rollout "}, {"type": "user", "user_id": named}]}]}]  # fmt: skip
        out.append(msg)
    return out


def per_message(c: SlackConnector, batch: list[dict[str, Any]], repeats: int) -> float:
    """The best of ``repeats`` passes: seconds a message."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for msg in batch:
            c._raw(CHANNEL, msg, None, (None, None))
        best = min(best, time.perf_counter() - started)
    return best / len(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    batch = messages(args.messages, args.small)
    small, large = connector(args.small), connector(args.large)
    # Alternated, so a slower stretch of the host does not fall on one side only.
    times = {args.small: float("inf"), args.large: float("inf")}
    for _ in range(args.repeats):
        times[args.small] = min(times[args.small], per_message(small, batch, 1))
        times[args.large] = min(times[args.large], per_message(large, batch, 1))
    print(f"{args.messages} messages, the client's per-message work (_raw), best of {args.repeats}")
    print(f"{args.small:>8} people: {1e6 * times[args.small]:8.1f} us a message")
    print(f"{args.large:>8} people: {1e6 * times[args.large]:8.1f} us a message")
    print(f"ratio {args.large} / {args.small} people: {times[args.large] / times[args.small]:.2f} (goal: near 1)")


if __name__ == "__main__":
    main()
