"""Local Slack emulator: the Web API methods Harvester calls, plus signed Events API delivery.

``python -m connectors.emulators.slack --host 127.0.0.1 --port P --messages N --seed S [--company demo]
[--token T]`` serves until killed; the first stdout line is the base URL (clients use ``<base>/api``).

Data: workspace ``T0<COMPANY>`` (``https://<company>.slack.com/``), 20 people (same names and e-mails
as the Confluence emulator's ``<first>.<last>@<company>.example``), seven conversations: public
``#general`` ``#engineering`` ``#incidents`` ``#random``, private ``#leadership`` ``#hr-team`` and one
DM. ``N`` top-level messages, generated lazily from ``(seed, k)``: message ``k`` lives in channel
``k % 7`` with ``ts = 1700000000 + step*k`` (``step`` = 600 s, smaller for very large ``N``), so history
windows are computed, not scanned. About one message in three starts a thread of 1–3 replies
(``ts`` = parent second, microseconds 101, 102, ...). Texts mention Jira keys ``DEMO-n``, Confluence page
URLs, GitLab MRs and people (``<@U...>``); a few carry files. Edits, posts and deletions live in a
sparse overlay.

Web API (``GET`` or ``POST`` form/JSON, ``Authorization: Bearer <token>``; errors are HTTP 200
``{"ok": false, "error": ...}`` as Slack does; cursor paging via ``response_metadata.next_cursor``):

``auth.test``, ``users.list``, ``conversations.list`` (``types``, ``exclude_archived``),
``conversations.info``, ``conversations.members``, ``conversations.history`` (``oldest``, ``latest``,
``inclusive``, newest first), ``conversations.replies`` (``ts`` = parent: parent + replies, oldest first).
Rate limits: fault rules (``{"status": 429, "ratio": 0.3, "retry_after": 1}``) answer HTTP 429 with
``Retry-After`` like Slack's tiers. Per-item faults: keys are channel ids (``403`` -> ``not_in_channel``,
``404`` -> ``channel_not_found``) or message ids ``<channel>:<ts>`` (left out of lists; ``malformed``:
served with a non-string ``text``).

Files: ``GET /files-pri/<team>-<file id>/[download/]<name>`` with the bearer token (without it, Slack's
sign-in page). ``connect=True`` adds guests (``is_restricted`` in #incidents, ``is_ultra_restricted`` in
#random) and the Slack Connect channel ``C0PARTNER`` (``is_ext_shared``, a member ``W0EXTERN01`` of
another organisation). Private channels are listed to members only.

Control (``/_emulator/``): ``GET messages`` (ids; ``?channel=``), ``POST messages``
``{"channel", "text", "user"?, "thread_ts"?, "files"?: [{"name", "mimetype", "text"? | "pdf_text"? |
"size"?}]}`` -> ``{"id", "ts"}``, ``PATCH messages/{channel}/{ts}``
``{"text"}``, ``DELETE messages/{channel}/{ts}``, ``PUT channels/{id}/members`` ``{"members": [ids]}``,
``PATCH channels/{id}`` ``{"is_archived"?, "is_member"?}``, ``POST webhooks/send``
``{"url", "secret", "type": "message|message_changed|message_deleted", "channel", "ts"}`` — posts an
Events API ``event_callback`` signed ``X-Slack-Signature: v0=<hmac of v0:{ts}:{body}>`` with
``X-Slack-Request-Timestamp``; or ``{"url", "secret", "body": {...}}`` to send a body as given.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import random
import re
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

from connectors.emulators.kit import (
    EmulatorApp,
    Request,
    Response,
    main_cli,
    pdf_document,
    request_base_url,
    send_slack_event,
)
from connectors.emulators.world import CHANNELS, T0, person, step_for

_PHRASES = [
    "deploy of {svc} is rolling out now",
    "can someone review the {svc} migration?",
    "latency on {svc} is back to normal",
    "I updated the runbook, see {page}",
    "{issue} is blocking the release",
    "opened {mr} for the {svc} fix",
    "who owns the {svc} alert?",
    "postmortem draft for {issue} is in {page}",
    "lunch at noon?",
    "standup moved to 10:30",
]
_SERVICES = ["ingest", "search", "billing", "auth", "gateway", "scheduler", "exporter"]


_ANGLE = re.compile(r"<([^<>]+)>")


def _rich_text_blocks(text: str, block_id: str) -> list[dict[str, Any]]:
    """``text`` (mrkdwn) as the ``rich_text`` block Slack clients attach to a typed message."""
    elements: list[dict[str, Any]] = []
    pos = 0
    for m in _ANGLE.finditer(text):
        if m.start() > pos:
            elements.append({"type": "text", "text": text[pos : m.start()]})
        target, _, label = m.group(1).partition("|")
        if target.startswith("@"):
            elements.append({"type": "user", "user_id": target[1:]})
        else:
            elements.append({"type": "link", "url": target, **({"text": label} if label else {})})
        pos = m.end()
    if pos < len(text):
        elements.append({"type": "text", "text": text[pos:]})
    section = {"type": "rich_text_section", "elements": elements}
    return [{"type": "rich_text", "block_id": block_id, "elements": [section]}]


GUEST, SINGLE_GUEST = "U0GUEST001", "U0GUEST002"
EXTERNAL, EXTERNAL_TEAM, PARTNER = "W0EXTERN01", "T0PARTNER", "C0PARTNER"


def micros(ts: str) -> int:
    sec, _, frac = ts.partition(".")
    return int(sec) * 1_000_000 + int((frac + "000000")[:6])


def _cursor(n: int) -> str:
    return base64.b64encode(f"next:{n}".encode()).decode()


def _uncursor(c: str | None) -> int:
    if not c:
        return 0
    try:
        raw = base64.b64decode(c).decode()
        return int(raw.split(":", 1)[1])
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError("invalid_cursor") from exc


class SlackEmulator(EmulatorApp):
    def __init__(
        self,
        *,
        messages: int = 100,
        seed: int = 0,
        token: str | None = None,
        company: str = "demo",
        jira_project: str = "DEMO",
        jira_issues: int = 40,
        confluence_pages: int = 50,
        connect: bool = False,
        more_people: int = 0,
    ) -> None:
        super().__init__(seed=seed, token=None)
        # Slack Connect and guests (issue 13 §1), off by default: a multi-channel guest (is_restricted)
        # in #incidents, a single-channel guest (is_ultra_restricted) in #random, and an externally
        # shared public channel #partner-acme (is_ext_shared) with a member of another organisation.
        self.connect = connect
        # Workspace members who post nothing, listed by users.list after the twenty who do: a workspace of
        # realistic size for what a run reads of its directory (bench/fetch_by_id.py).
        self.more_people = max(0, more_people)
        self.api_token = token
        self.n = messages
        self.step = step_for(messages)
        self.company = company
        self.domain = f"{company}.example"
        self.team_id = "T0" + "".join(ch for ch in company.upper() if ch.isalnum())[:9]
        self.jira_project = jira_project
        self.jira_issues = max(1, jira_issues)
        self.confluence_pages = max(1, confluence_pages)
        self.lock = threading.RLock()
        self.channels: dict[str, dict[str, Any]] = {}
        for cid, name, kind, members in CHANNELS:
            self.channels[cid] = {
                "id": cid,
                "name": name,
                "kind": kind,
                "members": [self.user_id(m) for m in (members if members is not None else range(20))],
                "is_archived": False,
                "is_member": True,
            }
        if connect:
            self.channels["C0INCIDENT"]["members"].append(GUEST)
            self.channels["C0RANDOM"]["members"].append(SINGLE_GUEST)
            self.channels[PARTNER] = {
                "id": PARTNER,
                "name": "partner-acme",
                "kind": "public",
                "members": [self.user_id(0), self.user_id(1), GUEST, EXTERNAL],
                "is_archived": False,
                "is_member": True,
                "ext_shared": True,
            }
        self.edited: dict[str, dict[str, Any]] = {}  # message id -> record (overrides generated)
        self.created: dict[str, dict[str, Any]] = {}  # message id -> record (posted via control API)
        self.deleted: set[str] = set()
        # File id -> (mimetype, body) for files posted through the control API (served by /files-pri/).
        self.files: dict[str, tuple[str, bytes]] = {}
        self._routes_api()

    # ------------------------------------------------------------ people, channels

    def user_id(self, k: int) -> str:
        return f"U{k % 20:08d}"

    def quiet_member_json(self, k: int) -> dict[str, Any]:
        profile = {"real_name": f"Member {k}", "email": f"member{k}@{self.domain}"}
        return {"id": f"U9{k:07d}", "team_id": self.team_id, "name": f"member{k}", "deleted": False,
                "is_bot": False, "updated": T0, "profile": profile}  # fmt: skip

    def user_json(self, k: int) -> dict[str, Any]:
        first, last, email = person(k, self.domain)
        uid = self.user_id(k)
        return {
            "id": uid,
            "team_id": self.team_id,
            "name": f"{first.lower()}.{last.lower()}",
            "deleted": False,
            "real_name": f"{first} {last}",
            "tz": "Europe/Berlin",
            "is_bot": False,
            "updated": T0,
            "profile": {
                "real_name": f"{first} {last}",
                "display_name": first.lower(),
                "email": email,
                "first_name": first,
                "last_name": last,
                "team": self.team_id,
            },
        }

    def guest_json(self, uid: str, single: bool) -> dict[str, Any]:
        """A guest account as users.list shows it (restricted: multi-channel; ultra: single-channel)."""
        name = "sam.single" if single else "gale.guest"
        return {
            "id": uid,
            "team_id": self.team_id,
            "name": name,
            "deleted": False,
            "real_name": name.replace(".", " ").title(),
            "is_bot": False,
            "is_restricted": True,
            "is_ultra_restricted": single,
            "profile": {"real_name": name.title(), "email": f"{name}@contractor.example", "team": self.team_id},
        }

    def bot_json(self) -> dict[str, Any]:
        return {
            "id": "U0BOT00001",
            "team_id": self.team_id,
            "name": "deploybot",
            "is_bot": True,
            "deleted": False,
            "profile": {"real_name": "Deploy Bot", "bot_id": "B0DEPLOY1", "team": self.team_id},
        }

    def channel_json(self, c: dict[str, Any]) -> dict[str, Any]:
        kind = c["kind"]
        out: dict[str, Any] = {
            "id": c["id"],
            "created": T0 - 86400,
            "is_archived": c["is_archived"],
            "is_im": kind == "im",
            "is_mpim": False,
            "is_private": kind != "public",
            "is_channel": kind == "public",
            "is_group": kind == "private",
            "is_member": c["is_member"],
            "is_general": c["name"] == "general",
            "is_shared": bool(c.get("ext_shared")),
            "is_ext_shared": bool(c.get("ext_shared")),
            "is_org_shared": False,
            "is_pending_ext_shared": False,
        }
        if c.get("ext_shared"):
            out["context_team_id"] = self.team_id
            out["shared_team_ids"] = [self.team_id, EXTERNAL_TEAM]
        if kind == "im":
            out["user"] = c["members"][-1]
        else:
            out.update(
                name=c["name"],
                name_normalized=c["name"],
                creator=self.user_id(0),
                num_members=len(c["members"]),
                topic={"value": f"{c['name']} topic", "creator": "", "last_set": 0},
                purpose={"value": f"Talk about {c['name']}", "creator": "", "last_set": 0},
            )
        return out

    # ------------------------------------------------------------ messages

    def channel_index(self, cid: str) -> int:
        return [c[0] for c in CHANNELS].index(cid) if cid in [c[0] for c in CHANNELS] else -1

    def generated_top(self, k: int) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}:m:{k}")
        cid = CHANNELS[k % len(CHANNELS)][0]
        ts = f"{T0 + self.step * k}.000100"
        members = self.channels[cid]["members"]
        author = members[rng.randrange(len(members))]
        text = self._text(rng)
        msg: dict[str, Any] = {
            "type": "message",
            "user": author,
            "text": text,
            "ts": ts,
            "team": self.team_id,
            "blocks": _rich_text_blocks(text, f"b{k}"),  # Slack mirrors every typed message as rich_text
        }
        if rng.randrange(12) == 0:
            # A Block Kit bot: the content is in ``blocks`` only (``text`` empty), as modern apps post it.
            svc, build = rng.choice(_SERVICES), rng.randrange(1000)
            msg = {
                "type": "message",
                "subtype": "bot_message",
                "bot_id": "B0DEPLOY1",
                "username": "deploybot",
                "text": "",
                "ts": ts,
                "blocks": [
                    {"type": "header", "block_id": "h", "text": {"type": "plain_text", "text": f"Deployed {svc}"}},
                    {
                        "type": "section",
                        "block_id": "s",
                        "text": {"type": "mrkdwn", "text": f"*Build* `{build}` is live for <!subteam^S0OPS|@ops>"},
                        "fields": [
                            {"type": "mrkdwn", "text": "*Environment*\nproduction"},
                            {"type": "mrkdwn", "text": f"*Owner*\n<@{author}>"},
                        ],
                    },
                    {"type": "context", "block_id": "c", "elements": [{"type": "mrkdwn", "text": "via _deploybot_"}]},
                    {
                        "type": "actions",
                        "block_id": "a",
                        "elements": [
                            {"type": "button", "text": {"type": "plain_text", "text": "Roll back"}, "action_id": "rb"}
                        ],
                    },
                ],
            }
        replies = rng.choice((0, 0, 0, 0, 1, 2, 3))
        if replies:
            rts = [f"{T0 + self.step * k}.{101 + m:06d}" for m in range(replies)]
            msg.update(
                thread_ts=ts,
                reply_count=replies,
                latest_reply=rts[-1],
                reply_users=sorted({members[(k + m) % len(members)] for m in range(replies)}),
            )
        if rng.randrange(15) == 0:
            msg["files"] = [
                {
                    "id": f"F{k:08d}",
                    "name": "graph.png",
                    "title": "latency graph",
                    "mimetype": "image/png",
                    "size": 1000 + k,
                    "url_private": f"https://files.slack.com/files-pri/{self.team_id}-F{k:08d}/graph.png",
                    "url_private_download": f"https://files.slack.com/files-pri/{self.team_id}-F{k:08d}/download/graph.png",
                    "permalink": f"https://{self.company}.slack.com/files/{author}/F{k:08d}/graph.png",
                }
            ]
        if rng.randrange(6) == 0:
            msg["reactions"] = [{"name": "eyes", "users": [members[0]], "count": 1}]
        return msg

    def generated_reply(self, k: int, m: int) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}:r:{k}:{m}")
        cid = CHANNELS[k % len(CHANNELS)][0]
        members = self.channels[cid]["members"]
        return {
            "type": "message",
            "user": members[(k + m) % len(members)],
            "text": self._text(rng),
            "ts": f"{T0 + self.step * k}.{101 + m:06d}",
            "thread_ts": f"{T0 + self.step * k}.000100",
            "parent_user_id": members[0],
            "team": self.team_id,
        }

    def _text(self, rng: random.Random) -> str:
        phrase = rng.choice(_PHRASES)
        page = 100000 + rng.randrange(self.confluence_pages)
        text = phrase.format(
            svc=rng.choice(_SERVICES),
            page=f"<https://{self.company}.atlassian.net/wiki/spaces/ENG/pages/{page}|the wiki page>",
            issue=f"{self.jira_project}-{1 + rng.randrange(self.jira_issues)}",
            mr=f"<https://gitlab.{self.domain}/platform/api/-/merge_requests/{1 + rng.randrange(200)}>",
        )
        if rng.randrange(4) == 0:
            text = f"<@{self.user_id(rng.randrange(20))}> {text}"
        return text[0].upper() + text[1:] if text[0] != "<" else text

    def top_level(self, cid: str, hi: int | None, lo: int | None) -> Iterator[dict[str, Any]]:
        """Top-level messages of ``cid`` with lo <= micros(ts) <= hi, newest first."""
        ci = self.channel_index(cid)
        with self.lock:
            posted = sorted(
                (r for r in self.created.values() if r["_channel"] == cid and r.get("thread_ts") in (None, r["ts"])),
                key=lambda r: micros(r["ts"]),
                reverse=True,
            )
        for r in posted:
            t = micros(r["ts"])
            if (hi is None or t <= hi) and (lo is None or t >= lo):
                yield self._live(cid, r)
        if ci < 0:
            return
        c = len(CHANNELS)
        k_hi = self.n - 1 if hi is None else min(self.n - 1, (hi // 1_000_000 - T0) // self.step)
        # align to this channel's residue, then walk down
        k = k_hi - ((k_hi - ci) % c)
        while k >= 0:
            t = (T0 + self.step * k) * 1_000_000 + 100
            if lo is not None and t < lo:
                return
            if hi is None or t <= hi:
                msg = self.message(cid, k)
                if msg is not None:
                    yield msg
            k -= c

    def message(self, cid: str, k: int) -> dict[str, Any] | None:
        ts = f"{T0 + self.step * k}.000100"
        mid = f"{cid}:{ts}"
        if mid in self.deleted:
            return None
        rec = self.edited.get(mid) or self.generated_top(k)
        return self._with_thread(cid, rec)

    def _with_thread(self, cid: str, rec: dict[str, Any]) -> dict[str, Any]:
        extra = [
            r
            for r in self.created.values()
            if r["_channel"] == cid
            and r.get("thread_ts") == rec["ts"]
            and r["ts"] != rec["ts"]
            and f"{cid}:{r['ts']}" not in self.deleted
        ]
        if not extra:
            return {k: v for k, v in rec.items() if not k.startswith("_")}
        out = {k: v for k, v in rec.items() if not k.startswith("_")}
        out["thread_ts"] = rec["ts"]
        out["reply_count"] = int(rec.get("reply_count", 0)) + len(extra)
        out["latest_reply"] = max([rec.get("latest_reply", rec["ts"]), *(r["ts"] for r in extra)], key=micros)
        return out

    def _live(self, cid: str, rec: dict[str, Any]) -> dict[str, Any]:
        mid = f"{cid}:{rec['ts']}"
        return self._with_thread(cid, self.edited.get(mid) or rec)

    def thread(self, cid: str, ts: str) -> list[dict[str, Any]] | None:
        """Parent + replies (oldest first), or None when ``ts`` is no message of ``cid``."""
        parent = self.lookup(cid, ts)
        if parent is None:
            return None
        if parent.get("thread_ts") not in (None, ts):
            return [parent]  # a reply's ts: Slack answers with that message alone
        out = [parent]
        sec = micros(ts) // 1_000_000
        k = (sec - T0) // self.step if (sec - T0) % self.step == 0 else -1
        if 0 <= k < self.n and ts.endswith(".000100") and self.channel_index(cid) == k % len(CHANNELS):
            gen = self.generated_top(k)
            for m in range(int(gen.get("reply_count", 0))):
                rts = f"{sec}.{101 + m:06d}"
                mid = f"{cid}:{rts}"
                if mid not in self.deleted:
                    out.append(self.edited.get(mid) or self.generated_reply(k, m))
        with self.lock:
            out += [
                r
                for r in self.created.values()
                if r["_channel"] == cid
                and r.get("thread_ts") == ts
                and r["ts"] != ts
                and f"{cid}:{r['ts']}" not in self.deleted
            ]
        out.sort(key=lambda r: micros(r["ts"]))
        return [{k: v for k, v in r.items() if not k.startswith("_")} for r in out]

    def lookup(self, cid: str, ts: str) -> dict[str, Any] | None:
        mid = f"{cid}:{ts}"
        if mid in self.deleted or cid not in self.channels:
            return None
        if mid in self.created:
            return self._live(cid, self.created[mid])
        sec, _, frac = ts.partition(".")
        if not sec.isdigit() or (int(sec) - T0) % self.step:
            return None
        k = (int(sec) - T0) // self.step
        if not 0 <= k < self.n or self.channel_index(cid) != k % len(CHANNELS):
            return None
        if frac == "000100":
            return self.message(cid, k)
        m = int(frac or 0) - 101
        gen = self.generated_top(k)
        if 0 <= m < int(gen.get("reply_count", 0)):
            return self.edited.get(mid) or self.generated_reply(k, m)
        return None

    # ------------------------------------------------------------ Web API plumbing

    def _routes_api(self) -> None:
        methods = {
            "auth.test": self.m_auth_test,
            "users.list": self.m_users_list,
            "conversations.list": self.m_conv_list,
            "conversations.info": self.m_conv_info,
            "conversations.members": self.m_conv_members,
            "conversations.history": self.m_history,
            "conversations.replies": self.m_replies,
        }
        for name, fn in methods.items():
            for verb in ("GET", "POST"):
                self.route(verb, r"/api/" + name.replace(".", r"\."))(self._wrap(fn))
        self.route("GET", r"/_emulator/messages")(self.c_list)
        self.route("POST", r"/_emulator/messages")(self.c_post)
        self.route("PATCH", r"/_emulator/messages/(?P<ch>[A-Z0-9]+)/(?P<ts>[0-9.]+)")(self.c_edit)
        self.route("DELETE", r"/_emulator/messages/(?P<ch>[A-Z0-9]+)/(?P<ts>[0-9.]+)")(self.c_delete)
        self.route("PUT", r"/_emulator/channels/(?P<ch>[A-Z0-9]+)/members")(self.c_members)
        self.route("PATCH", r"/_emulator/channels/(?P<ch>[A-Z0-9]+)")(self.c_channel)
        self.route("POST", r"/_emulator/webhooks/send")(self.c_webhook)
        self.route("GET", r"/files-pri/(?P<tf>[A-Z0-9-]+)/(?:download/)?(?P<name>[^/?]+)")(self.h_file)

    def h_file(self, req: Request) -> Response:
        """A file body as ``url_private(_download)`` serves it: only with the workspace token (Bearer)."""
        if self.api_token is not None:
            auth = req.headers.get("authorization", "")
            if not hmac.compare_digest(auth.partition(" ")[2].strip(), self.api_token):
                # Slack answers an unauthenticated file URL with its HTML sign-in page, not the file.
                return Response(200, b"<html><body>Sign in</body></html>", {"Content-Type": "text/html"})
        fid = req.params["tf"].rpartition("-")[2]
        with self.lock:
            found = self.files.get(fid)
        if found is None:
            return Response(404, b"file not found", {"Content-Type": "text/plain"})
        return Response(200, found[1], {"Content-Type": found[0]})

    def _wrap(self, fn: Any) -> Any:
        def handler(req: Request) -> Response:
            args = {k: v[0] for k, v in req.query.items() if v}
            ctype = req.headers.get("content-type", "")
            if req.body and "json" in ctype:
                body = req.json()
                if isinstance(body, dict):
                    args.update({k: str(v) for k, v in body.items()})
            elif req.body:
                args.update({k: v[0] for k, v in parse_qs(req.body.decode()).items() if v})
            if self.api_token is not None:
                auth = req.headers.get("authorization", "")
                if not auth:
                    return Response(200, {"ok": False, "error": "not_authed"})
                if not hmac.compare_digest(auth.partition(" ")[2].strip(), self.api_token):
                    return Response(200, {"ok": False, "error": "invalid_auth"})
            try:
                out: dict[str, Any] = fn(args)
            except ValueError as exc:
                out = {"ok": False, "error": str(exc) or "invalid_arguments"}
            return Response(200, out)

        return handler

    @staticmethod
    def _page(items: list[Any], args: dict[str, str], cap: int = 1000) -> tuple[list[Any], str]:
        start = _uncursor(args.get("cursor"))
        limit = max(1, min(int(args.get("limit") or 100), cap))
        page = items[start : start + limit]
        return page, _cursor(start + limit) if start + limit < len(items) else ""

    def _channel(self, args: dict[str, str]) -> dict[str, Any]:
        cid = args.get("channel", "")
        fault = self.faults.for_key(cid) if cid else None
        if fault is not None and fault.status in (403, 401):
            raise ValueError("not_in_channel")
        if fault is not None and fault.status == 404:
            raise ValueError("channel_not_found")
        c = self.channels.get(cid)
        if c is None:
            raise ValueError("channel_not_found")
        if not c["is_member"]:
            raise ValueError("not_in_channel")
        return c

    def _serve(self, cid: str, msg: dict[str, Any]) -> dict[str, Any] | None:
        fault = self.faults.for_key(f"{cid}:{msg['ts']}")
        if fault is None:
            return msg
        if fault.malformed:
            return {**msg, "text": 12345, "blocks": "broken"}
        return None

    # ------------------------------------------------------------ Web API methods

    def m_auth_test(self, args: dict[str, str]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": f"https://{self.company}.slack.com/",
            "team": self.company.title(),
            "user": "harvester",
            "team_id": self.team_id,
            "user_id": "U0HARVEST1",
            "bot_id": "B0HARVEST",
        }

    def m_users_list(self, args: dict[str, str]) -> dict[str, Any]:
        users = [self.user_json(k) for k in range(20)] + [self.bot_json()]
        users += [self.quiet_member_json(k) for k in range(self.more_people)]
        if self.connect:
            # Guests are users of this workspace; people of the other organisation are not listed.
            users += [self.guest_json(GUEST, False), self.guest_json(SINGLE_GUEST, True)]
        page, nxt = self._page(users, args)
        return {"ok": True, "members": page, "cache_ts": T0, "response_metadata": {"next_cursor": nxt}}

    def m_conv_list(self, args: dict[str, str]) -> dict[str, Any]:
        types = set((args.get("types") or "public_channel").split(","))
        kinds = {"public_channel": "public", "private_channel": "private", "im": "im", "mpim": "mpim"}
        wanted = {kinds[t] for t in types if t in kinds}
        exclude_archived = args.get("exclude_archived") in ("true", "1")
        with self.lock:
            chans = [
                self.channel_json(c)
                for c in self.channels.values()
                if c["kind"] in wanted and not (exclude_archived and c["is_archived"])
                # Private channels and DMs are listed only to members, as on Slack; public ones to everyone.
                and (c["kind"] == "public" or c["is_member"])
            ]
        page, nxt = self._page(chans, args, cap=1000)
        return {"ok": True, "channels": page, "response_metadata": {"next_cursor": nxt}}

    def m_conv_info(self, args: dict[str, str]) -> dict[str, Any]:
        return {"ok": True, "channel": self.channel_json(self._channel(args))}

    def m_conv_members(self, args: dict[str, str]) -> dict[str, Any]:
        c = self._channel(args)
        page, nxt = self._page(list(c["members"]), args)
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": nxt}}

    def m_history(self, args: dict[str, str]) -> dict[str, Any]:
        c = self._channel(args)
        inclusive = args.get("inclusive") in ("true", "1")
        hi = micros(args["latest"]) if args.get("latest") else None
        lo = micros(args["oldest"]) if args.get("oldest") else None
        if hi is not None and not inclusive:
            hi -= 1
        if lo is not None and not inclusive:
            lo += 1
        # the cursor carries the upper bound (exclusive) of the next page
        if args.get("cursor"):
            hi = _uncursor(args["cursor"]) - 1
        limit = max(1, min(int(args.get("limit") or 100), 999))
        out: list[dict[str, Any]] = []
        more = False
        last = 0
        for msg in self.top_level(c["id"], hi, lo):
            if len(out) == limit:
                more = True
                break
            served = self._serve(c["id"], msg)
            if served is not None:
                out.append(served)
            last = micros(msg["ts"])
        body: dict[str, Any] = {"ok": True, "messages": out, "has_more": more, "pin_count": 0}
        body["response_metadata"] = {"next_cursor": _cursor(last) if more else ""}
        return body

    def m_replies(self, args: dict[str, str]) -> dict[str, Any]:
        c = self._channel(args)
        msgs = self.thread(c["id"], args.get("ts", ""))
        if msgs is None:
            raise ValueError("thread_not_found")
        served = [m for m in (self._serve(c["id"], m) for m in msgs) if m is not None]
        page, nxt = self._page(served, args)
        return {
            "ok": True,
            "messages": page,
            "has_more": bool(nxt),
            "response_metadata": {"next_cursor": nxt},
        }

    # ------------------------------------------------------------ control API

    def c_list(self, req: Request) -> Response:
        wanted = req.arg("channel")
        ids: list[str] = []
        for cid in self.channels:
            if wanted and cid != wanted:
                continue
            for top in self.top_level(cid, None, None):
                for m in self.thread(cid, top["ts"]) or [top]:
                    ids.append(f"{cid}:{m['ts']}")
        return Response(200, {"messages": ids, "total": len(ids)})

    def c_post(self, req: Request) -> Response:
        spec = req.json() or {}
        cid = spec.get("channel", "C0GENERAL")
        if cid not in self.channels:
            return Response(404, {"ok": False, "error": "channel_not_found"})
        with self.lock:
            now = time.time()
            ts = f"{now:.6f}"
            while f"{cid}:{ts}" in self.created:
                now += 0.000001
                ts = f"{now:.6f}"
            rec: dict[str, Any] = {
                "type": "message",
                "user": spec.get("user", self.user_id(0)),
                "text": spec.get("text", ""),
                "ts": ts,
                "team": self.team_id,
                "_channel": cid,
            }
            if spec.get("thread_ts"):
                rec["thread_ts"] = spec["thread_ts"]
                rec["parent_user_id"] = self.user_id(0)
            if spec.get("files"):
                rec["files"] = [self._file(request_base_url(req), f) for f in spec["files"]]
                rec["upload"] = True
            self.created[f"{cid}:{ts}"] = rec
        return Response(201, {"ok": True, "id": f"{cid}:{ts}", "ts": ts, "channel": cid})

    def _file(self, base: str, spec: dict[str, Any]) -> dict[str, Any]:
        """A file object as ``conversations.history`` shows it (``files[]``), its body kept for /files-pri/.

        ``spec``: ``{"name", "mimetype", "text"? | "pdf_text"? | "size"?}`` (``size`` alone: filler bytes)."""
        if "pdf_text" in spec:
            body = pdf_document(str(spec["pdf_text"]))
        elif "text" in spec:
            body = str(spec["text"]).encode()
        else:
            body = b"x" * int(spec.get("size") or 0)
        fid = f"F{len(self.files) + 1:08d}X"
        name = str(spec.get("name") or "file.txt")
        mimetype = str(spec.get("mimetype") or "text/plain")
        self.files[fid] = (mimetype, body)
        return {
            "id": fid,
            "created": int(time.time()),
            "timestamp": int(time.time()),
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rpartition(".")[2] or "text",
            "pretty_type": mimetype,
            "user": self.user_id(0),
            "user_team": self.team_id,
            "editable": False,
            "size": len(body),
            "mode": "hosted",
            "is_external": False,
            "external_type": "",
            "is_public": False,
            "public_url_shared": False,
            "display_as_bot": False,
            "username": "",
            "url_private": f"{base}/files-pri/{self.team_id}-{fid}/{name}",
            "url_private_download": f"{base}/files-pri/{self.team_id}-{fid}/download/{name}",
            "permalink": f"https://{self.company}.slack.com/files/{self.user_id(0)}/{fid}/{name}",
            "permalink_public": f"https://slack-files.com/{self.team_id}-{fid}-0000000000",
            "is_starred": False,
            "has_rich_preview": False,
            "file_access": "visible",
        }

    def c_edit(self, req: Request) -> Response:
        cid, ts = req.params["ch"], req.params["ts"]
        with self.lock:
            cur = self.lookup(cid, ts)
            if cur is None:
                return Response(404, {"ok": False, "error": "message_not_found"})
            spec = req.json() or {}
            rec = {**(self.created.get(f"{cid}:{ts}") or {}), **cur, "_channel": cid}
            rec["text"] = spec.get("text", rec.get("text", ""))
            if rec.get("blocks") and rec.get("subtype") != "bot_message":
                rec["blocks"] = _rich_text_blocks(str(rec["text"]), f"e{ts}")  # an edit re-sends the blocks
            rec["edited"] = {"user": rec.get("user", self.user_id(0)), "ts": f"{time.time():.6f}"}
            if f"{cid}:{ts}" in self.created:
                self.created[f"{cid}:{ts}"] = rec
            else:
                self.edited[f"{cid}:{ts}"] = rec
        return Response(200, {"ok": True})

    def c_delete(self, req: Request) -> Response:
        cid, ts = req.params["ch"], req.params["ts"]
        with self.lock:
            if self.lookup(cid, ts) is None:
                return Response(404, {"ok": False, "error": "message_not_found"})
            self.deleted.add(f"{cid}:{ts}")
        return Response(204)

    def c_members(self, req: Request) -> Response:
        c = self.channels.get(req.params["ch"])
        if c is None:
            return Response(404, {"ok": False, "error": "channel_not_found"})
        spec = req.json() or {}
        with self.lock:
            c["members"] = [str(m) for m in spec.get("members", [])]
        return Response(200, {"ok": True, "members": c["members"]})

    def c_channel(self, req: Request) -> Response:
        c = self.channels.get(req.params["ch"])
        if c is None:
            return Response(404, {"ok": False, "error": "channel_not_found"})
        spec = req.json() or {}
        with self.lock:
            for key in ("is_archived", "is_member"):
                if key in spec:
                    c[key] = bool(spec[key])
        return Response(200, {"ok": True, "channel": self.channel_json(c)})

    def c_webhook(self, req: Request) -> Response:
        spec = req.json() or {}
        url, secret = spec.get("url"), spec.get("secret")
        if not url or not secret:
            return Response(400, {"ok": False, "error": "url and secret are required"})
        event_id = f"Ev{self.seed:02d}{self.next_delivery():08d}"
        body_obj = spec.get("body") or self._event(spec, event_id)
        body = json.dumps(body_obj).encode()
        status = send_slack_event(url, body, secret)
        return Response(200, {"status": status, "event_id": body_obj.get("event_id")})

    def _event(self, spec: dict[str, Any], event_id: str) -> dict[str, Any]:
        kind = spec.get("type", "message")
        cid = spec.get("channel", "C0GENERAL")
        ts = str(spec.get("ts", ""))
        channel_type = {"public": "channel", "private": "group", "im": "im"}.get(
            self.channels.get(cid, {}).get("kind", "public"), "channel"
        )
        now = f"{time.time():.6f}"
        msg = self.lookup(cid, ts) or {"type": "message", "ts": ts, "text": ""}
        event: dict[str, Any]
        if kind == "message_deleted":
            event = {
                "type": "message",
                "subtype": "message_deleted",
                "hidden": True,
                "channel": cid,
                "deleted_ts": ts,
                "ts": now,
                "event_ts": now,
                "channel_type": channel_type,
            }
        elif kind == "message_changed":
            event = {
                "type": "message",
                "subtype": "message_changed",
                "hidden": True,
                "channel": cid,
                "message": msg,
                "ts": now,
                "event_ts": now,
                "channel_type": channel_type,
            }
        else:
            event = {**msg, "channel": cid, "event_ts": now, "channel_type": channel_type}
        return {
            "token": "emulated",
            "team_id": self.team_id,
            "api_app_id": "A0HARVEST",
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
        }


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--company", default="demo", help="seeds names, e-mail domain and cross-links")
    parser.add_argument("--jira-project", default="DEMO")
    parser.add_argument("--jira-issues", type=int, default=40)
    parser.add_argument("--confluence-pages", type=int, default=50)
    parser.add_argument("--more-people", type=int, default=0, help="members who post nothing, listed by users.list")


def _build(ns: argparse.Namespace) -> EmulatorApp:
    return SlackEmulator(
        messages=ns.messages,
        seed=ns.seed,
        token=ns.token,
        company=ns.company,
        jira_project=ns.jira_project,
        jira_issues=ns.jira_issues,
        confluence_pages=ns.confluence_pages,
        more_people=ns.more_people,
    )


if __name__ == "__main__":
    main_cli(_build, _add_args, description="Slack Web API + Events API emulator")
