"""A Jira emulator: Cloud REST v3 and Server/DC REST v2 over generated, deterministic data.

Run it::

    python -m connectors.emulators.jira --host 127.0.0.1 --port 0 --issues 1000 --seed 1 [--token T]
        [--deployment cloud|server] [--timezone Europe/Berlin] [--projects 4]

The first stdout line is the base URL; it serves until SIGTERM/SIGINT.

Data. Issue ``i`` (0 <= i < N) is generated on demand from ``(seed, i)``; nothing is materialised, so
1,000,000 issues start instantly. Only a sparse overlay of edits, deletions and creations is kept.
Project ``PROJECTS[i % P]``, key ``<project>-<i // P + 1>``, id ``10000 + i``. Base ``updated``
times grow with ``i`` (one minute apart from 2024-01-01 UTC), so ``updated ASC, key ASC`` is index
order; edited and created issues get the emulator's "now" and sort after every base issue.
Each issue has a type (every 50th of a project is an Epic, others link to their epic by
``customfield_10014``), status with category, priority, assignee/reporter (users with emails),
due date, planned start/end (``customfield_10015`` / ``customfield_10016``), labels, sprints
(``customfield_10020``), 0-3 comments, attachments (a text file on some), an issue security level
on every 9th issue, and links: ``i % 3 == 0`` blocks ``i + 7``; ``i % 5 == 1`` relates to
``i + 3P + 1`` (another project, so links cross scope). Descriptions and comments mention Confluence
page URLs, Slack message links, GitLab MR URLs, other keys and ``@users``; v3 serves them as ADF,
v2 as wiki markup. JQL is interpreted in the emulated user's time zone (``--timezone``), like Jira.

API (auth: ``--token`` as Bearer, or as the password of Basic):

- ``GET /rest/api/2/serverInfo`` (``deploymentType`` Cloud|Server), ``GET /rest/api/{2,3}/myself``
  (with ``timeZone``), ``GET /rest/api/{2,3}/field``;
- ``GET|POST /rest/api/2/search`` (``jql``, ``startAt``, ``maxResults`` <= 100, ``total``);
- ``GET|POST /rest/api/3/search/jql`` (``jql``, ``nextPageToken``, ``maxResults``, ``isLast``);
  ``POST /rest/api/3/search/approximate-count``;
- ``GET /rest/api/{2,3}/issue/{idOrKey}``; ``GET /secure/attachment/{id}/{name}``;
- ACL, shaped like a real Jira Cloud site (go-atlassian's captured ``get-permission-schemes.json`` and
  ``get-project-role.json``): ``GET /rest/api/{2,3}/project/{key}/permissionscheme?expand=permissions``
  grants ``BROWSE_PROJECTS`` to project roles (``projectRole`` 10002 Administrators, 10001 Developers),
  ``reporter``, ``assignee``, ``projectLead``; the first project also to ``applicationRole`` (Jira
  Software) and the second also to a Service Desk ``sd.customer.portal.only`` holder (a type a
  connector cannot resolve). ``GET /rest/api/{2,3}/project/{key}/role`` and ``.../role/{id}`` (actors:
  ``atlassian-group-role-actor`` with group name and id, ``atlassian-user-role-actor`` with an
  ``accountId`` only), ``GET /rest/api/{2,3}/applicationrole``, ``GET /rest/api/{2,3}/project/{key}``
  (with ``lead``), ``GET /rest/api/{2,3}/issuesecurityschemes/level/member?levelId=X`` (a project
  role and a user). The Service Desk holder is served only when ``service_desk_holder`` is set.
  A project or level set through ``POST /_emulator/permissions`` is served with plain
  ``group``/``user`` holders instead.

Control API (no auth), besides the kit's ``/_emulator/faults`` and ``/_emulator/stats``:

- ``GET /_emulator/issues`` -> ``{"keys": [...]}`` every live key (index order, then created);
- ``PATCH /_emulator/issues/{key}`` with fields to change (``summary``, ``description`` (plain
  text), ``status``, ``labels``, ``priority``, ``project`` (moves it: new key, same id; the issue then
  carries a ``changelog`` with the ``Key`` changes, as Jira returns with ``expand=changelog``)) -> bumps
  ``updated``; ``updated`` (an ISO time with its offset) sets it instead, as a bulk import or a migration
  gives many issues one time;
- ``DELETE /_emulator/issues/{key}``; ``POST /_emulator/issues`` ``{"project", "summary", ...}``
  -> ``{"id", "key"}``; a deleted base issue can be restored with ``POST /_emulator/issues/{key}/restore``;
- ``POST /_emulator/permissions`` ``{"project": "ALPHA", "principals": ["group:jira:x", "user:a@b"]}``
  or ``{"security_level": "10101", "principals": [...]}`` replaces who may browse / who is a member;
- ``POST /_emulator/webhooks/send`` ``{"url", "secret", "event": "jira:issue_updated", "key",
  "delivery_id"?}`` posts a signed webhook (``X-Hub-Signature: sha256=<hex>``,
  ``X-Atlassian-Webhook-Identifier``) and returns ``{"status": <receiver's status>}``.

Per-item faults (``{"status": 403|404, "keys": [...]}``, ``{"malformed": true, "keys": [...]}``):
such issues are left out of search pages for 403/404 (as Jira hides what you may not see) and
answer that status on ``GET issue``; malformed ones are served in pages and on GET with
``"fields": null``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from connectors.emulators import jira_jql as jql
from connectors.emulators.kit import (
    EmulatorApp,
    Request,
    Response,
    error_response,
    main_cli,
    pdf_document,
    request_base_url,
    send_atlassian_webhook,
)
from connectors.emulators.world import FIRST_ID, SPACES, demo_message_url, person
from connectors.timeutil import millis_time

PROJECT_NAMES = ("ALPHA", "BETA", "CORE", "OPS", "WEB", "DATA", "SEC", "MOB")
T0 = datetime(2024, 1, 1, tzinfo=UTC)
STEP = timedelta(minutes=1)
STATUSES = (
    ("To Do", "new", 1),
    ("In Progress", "indeterminate", 3),
    ("In Review", "indeterminate", 3),
    ("Done", "done", 2),
)
PRIORITIES = ("Highest", "High", "Medium", "Low", "Lowest")
TYPES = ("Story", "Task", "Bug")
WORDS = (
    "billing",
    "cache",
    "login",
    "export",
    "search",
    "sync",
    "report",
    "invoice",
    "queue",
    "retry",
    "webhook",
    "schema",
    "index",
    "timeout",
    "upload",
    "mobile",
    "dashboard",
    "audit",
    "token",
    "backup",
    "migration",
    "latency",
    "alert",
    "rollout",
)
FIRST = ("Anna", "Boris", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Julia", "Kofi", "Lena")
LAST = (
    "Ivanova",
    "Petrov",
    "Li",
    "Cohen",
    "Novak",
    "Haddad",
    "Horvat",
    "Sato",
    "Smirnov",
    "Berg",
    "Mensah",
    "Ruiz",
)
USERS = tuple(
    {
        "accountId": f"acc-{k:03d}",
        "emailAddress": f"{FIRST[k % 12].lower()}.{LAST[(k * 5) % 12].lower()}@example.com",
        "displayName": f"{FIRST[k % 12]} {LAST[(k * 5) % 12]}",
    }
    for k in range(24)
)
SPRINT_FIELD, EPIC_FIELD, EPIC_NAME_FIELD, START_FIELD, END_FIELD = (
    "customfield_10020",
    "customfield_10014",
    "customfield_10011",
    "customfield_10015",
    "customfield_10016",
)
MAX_PAGE = 100


class JiraEmulator(EmulatorApp):
    def __init__(
        self,
        issues: int = 100,
        *,
        seed: int = 0,
        token: str | None = None,
        deployment: str = "cloud",
        timezone: str = "Europe/Berlin",
        projects: int = 4,
        company: str | None = None,
        confluence_pages: int = 40,
        slack_messages: int = 100,
    ) -> None:
        super().__init__(seed=seed, token=token)
        # company: the demo company shared with the Confluence and Slack emulators (same people and
        # e-mails, projects DEMO and OPS, links to pages and messages those emulators really serve).
        self.company = company
        self.confluence_pages = max(1, confluence_pages)
        self.slack_messages = max(1, slack_messages)
        if company:
            self.users: tuple[dict[str, str], ...] = tuple(
                {"accountId": f"acc-{k:03d}", "emailAddress": email, "displayName": f"{first} {last}"}
                for k, (first, last, email) in ((k, person(k, f"{company}.example")) for k in range(20))
            )
        else:
            self.users = USERS
        self.n = issues
        self.deployment = deployment
        self.tz = ZoneInfo(timezone)
        self.timezone = timezone
        names = ("DEMO", "OPS") if company else PROJECT_NAMES
        self.projects = names[: max(1, min(projects, len(names)))]
        self.p = len(self.projects)
        self._lock = threading.RLock()
        # Sparse overlay: index -> changed fields; deleted indexes; created/edited issues in update order.
        self.edits: dict[int, dict[str, Any]] = {}
        self.deleted: set[int] = set()
        # Projects that exist but the credential cannot browse: as on Jira, /project/{key} answers 404,
        # their issues are absent from searches, and JQL naming them is refused with 400.
        self.invisible_projects: set[str] = set()
        # Jira Cloud's default profile visibility: users carry accountId only (no name/key, no email).
        self.emails_hidden = False
        self.next_index = issues
        self._clock = T0 + STEP * (issues + 1)
        # v2 offset paging: per JQL, the sequence position before each item of the last page served.
        self._offsets: dict[str, dict[int, tuple[str, int]]] = {}
        self.browse: dict[str, list[str]] = {
            proj: [
                f"group:jira:{proj.lower()}-team",
                f"group:jira:{proj.lower()}-leads",
                f"user:{self.users[j]['emailAddress']}",
            ]
            for j, proj in enumerate(self.projects)
        }
        # Projects / levels whose holders the control API replaced (served as plain group/user holders).
        self.overridden: set[str] = set()
        # Status ``/field`` answers instead of the list (tests of the connector's fallback); None: serve it.
        self.field_list_status: int | None = None
        # Also grant the second project's Browse Projects to Service Desk customers (a holder no connector
        # can resolve, as real Service Management schemes do); off unless a test asks.
        self.service_desk_holder = False
        self.levels: dict[str, list[str]] = {
            str(10100 + j): [f"group:jira:{proj.lower()}-leads", f"user:{self.users[j]['emailAddress']}"]
            for j, proj in enumerate(self.projects)
        }
        self._routes_api()
        self._routes_control()

    # ------------------------------------------------------------ identity

    def _page_link(self, i: int) -> str:
        if not self.company:
            proj = self.projects[i % self.p]
            return f"https://acme.atlassian.net/wiki/spaces/{proj}/pages/{100000 + i % 977}/Design"
        page = (i * 7) % self.confluence_pages
        return (
            f"https://{self.company}.atlassian.net/wiki/spaces/{SPACES[page % len(SPACES)][0]}/pages/{FIRST_ID + page}"
        )

    def _message_link(self, i: int) -> str:
        if not self.company:
            proj = self.projects[i % self.p]
            return f"https://acme.slack.com/archives/C0{proj[:3]}{i % 9}/p17000{i % 100000:05d}123456"
        return demo_message_url(self.company, (i * 5) % self.slack_messages)

    def key_of(self, i: int) -> str:
        edit = self.edits.get(i)
        if edit and "key" in edit:
            return str(edit["key"])
        return f"{self.projects[i % self.p]}-{i // self.p + 1}"

    def index_of(self, ref: str) -> int | None:
        """Issue index from an id or a key (current or previous); None when unknown or deleted."""
        with self._lock:
            i: int | None = None
            if ref.isdigit():
                i = int(ref) - 10000
            else:
                proj, _, num = ref.upper().rpartition("-")
                if proj in self.projects and num.isdigit() and int(num) >= 1:
                    i = (int(num) - 1) * self.p + self.projects.index(proj)
                for idx, edit in self.edits.items():
                    if edit.get("key") == ref.upper() or ref.upper() in edit.get("previous_keys", ()):
                        i = idx
                moved_away = i is not None and self.edits.get(i, {}).get("key") not in (None, ref.upper())
                if moved_away and i is not None and ref.upper() not in self.edits[i].get("previous_keys", ()):
                    i = None
            if i is None or i < 0 or i >= self.next_index or i in self.deleted:
                return None
            if i >= self.n and i not in self.edits:
                return None
            return i

    def exists(self, i: int) -> bool:
        return 0 <= i < self.next_index and i not in self.deleted and (i < self.n or i in self.edits)

    # ------------------------------------------------------------ generation

    def _rng(self, i: int) -> random.Random:
        return random.Random(f"{self.seed}:{i}")

    def base(self, i: int) -> dict[str, Any]:
        """The generated issue ``i`` as a neutral record (before overlay and API rendering)."""
        rng = self._rng(i)
        proj = self.projects[i % self.p]
        num = i // self.p + 1
        is_epic = num % 50 == 1
        updated = T0 + STEP * i + timedelta(seconds=rng.randrange(60), milliseconds=rng.randrange(1000))
        created = updated - timedelta(days=rng.randrange(0, 90), minutes=rng.randrange(1440))
        status, category, _ = rng.choices(STATUSES, weights=[s[2] for s in STATUSES])[0]
        words = rng.sample(WORDS, 3)
        summary = f"{words[0].capitalize()} {words[1]} fails on {words[2]}"
        epic_num = ((num - 1) // 50) * 50 + 1
        epic_key = None if is_epic else f"{proj}-{epic_num}"
        other = rng.randrange(max(1, self.n))
        mention = self.users[rng.randrange(len(self.users))]
        paras = [
            f"When {words[1]} runs against {words[2]} the {words[0]} step times out.",
            f"See {self._page_link(i)} and {self.projects[other % self.p]}-{other // self.p + 1}.",
        ]
        if rng.random() < 0.5:
            paras.append(f"Thread: {self._message_link(i)}")
        if rng.random() < 0.3:
            paras.append(f"Fix: https://gitlab.acme.io/acme/{proj.lower()}/-/merge_requests/{i % 500 + 1}")
        comments = []
        for c in range(rng.randrange(4)):
            author = self.users[rng.randrange(len(self.users))]
            comments.append(
                {
                    "id": str(100000 + i * 4 + c),
                    "author": author,
                    "text": f"@{mention['displayName'].split()[0].lower()} checked {rng.choice(WORDS)}, "
                    f"still {rng.choice(['broken', 'fine', 'flaky'])}.",
                    "created": created + timedelta(hours=c + 1),
                }
            )
        sprint_no = (i // (self.p * 20)) % 30 + 1
        rec: dict[str, Any] = {
            "index": i,
            "id": str(10000 + i),
            "key": f"{proj}-{num}",
            "project": proj,
            "issuetype": "Epic" if is_epic else rng.choice(TYPES),
            "summary": summary,
            "paras": paras,
            "status": status,
            "category": category,
            "priority": rng.choice(PRIORITIES),
            "assignee": self.users[rng.randrange(len(self.users))] if rng.random() < 0.8 else None,
            "reporter": self.users[rng.randrange(len(self.users))],
            "duedate": (created + timedelta(days=rng.randrange(5, 60))).date().isoformat()
            if rng.random() < 0.6
            else None,
            "planned_start": (created + timedelta(days=1)).date().isoformat() if rng.random() < 0.5 else None,
            "planned_end": (created + timedelta(days=rng.randrange(10, 40))).date().isoformat()
            if rng.random() < 0.5
            else None,
            "epic_key": epic_key,
            "epic_name": f"{words[0].capitalize()} epic" if is_epic else None,
            "labels": sorted(
                rng.sample(["backend", "frontend", "customer", "tech-debt", "security", "infra"], rng.randrange(3))
            ),
            "sprints": [
                {
                    "id": sprint_no,
                    "name": f"{proj} Sprint {sprint_no}",
                    "state": "active" if sprint_no % 3 else "closed",
                    "boardId": self.projects.index(proj) + 1,
                }
            ]
            if not is_epic and rng.random() < 0.7
            else [],
            "created": created,
            "updated": updated,
            "comments": comments,
            "attachments": [],
            "security_level": str(10100 + self.projects.index(proj)) if i % 9 == 4 else None,
            "previous_keys": [],
        }
        if i % 4 == 2:
            rec["attachments"].append(
                {
                    "id": str(20000 + i),
                    "filename": "notes.txt",
                    "mimeType": "text/plain",
                    "text": f"Repro notes for {rec['key']}: run {words[1]} twice.",
                }
            )
        if i % 6 == 5:
            rec["attachments"].append(
                {"id": str(30000 + i), "filename": "screen.png", "mimeType": "image/png", "text": None}
            )
        return rec

    def attach(self, i: int, filename: str, mime_type: str, pdf_text: str) -> str:
        """Add a PDF attachment showing ``pdf_text`` to issue ``i`` (id ``40000 + 10 i + n``); its id."""
        with self._lock:
            current = list(self.record(i)["attachments"])
            aid = str(40000 + 10 * i + len(current))
            current.append(
                {"id": aid, "filename": filename, "mimeType": mime_type, "text": None, "body": pdf_document(pdf_text)}
            )
            # Jira bumps the issue's ``updated`` when a file is attached; edits hold whole records.
            self.edits[i] = {**self.record(i), "attachments": current, "updated": self._now()}
        return aid

    def record(self, i: int) -> dict[str, Any]:
        with self._lock:
            edit = self.edits.get(i)
            rec = self.base(i) if i < self.n else {}
            if edit:
                rec.update(edit)
            return rec

    def links(self, i: int) -> list[dict[str, Any]]:
        """Issue links of ``i`` as (type, direction, other index); both ends agree by construction."""
        out: list[dict[str, Any]] = []
        n, off = self.n, 3 * self.p + 1
        if n < 2:
            return out
        if i < n and i % 3 == 0 and (i + 7) < n:
            out.append({"type": "Blocks", "dir": "outward", "other": i + 7})
        if i < n and i >= 7 and (i - 7) % 3 == 0:
            out.append({"type": "Blocks", "dir": "inward", "other": i - 7})
        if i < n and i % 5 == 1 and (i + off) < n:
            out.append({"type": "Relates", "dir": "outward", "other": i + off})
        if i < n and i >= off and (i - off) % 5 == 1:
            out.append({"type": "Relates", "dir": "inward", "other": i - off})
        return [link for link in out if self.exists(int(link["other"]))]

    # ------------------------------------------------------------ rendering

    def render(self, i: int, version: int, base_url: str) -> dict[str, Any]:
        rec = self.record(i)
        key = self.key_of(i)
        api = f"{base_url}/rest/api/{version}"

        def rich(paras: list[str], tail: bool = False) -> Any:
            if version == 3:
                content = [_adf_para(p) for p in paras] + (_adf_tail(key) if tail else [])
                return {"type": "doc", "version": 1, "content": content}
            return "\n\n".join([*(_wiki_para(p) for p in paras), *([_wiki_tail(key)] if tail else [])])

        def user(u: Mapping[str, Any] | None) -> Any:
            if u is None:
                return None
            shown = {k: v for k, v in u.items() if not (self.emails_hidden and k == "emailAddress")}
            return {
                "self": f"{api}/user?accountId={u['accountId']}",
                **shown,
                "active": True,
                "timeZone": self.timezone,
                "accountType": "atlassian",
            }

        status = next(s for s in STATUSES if s[0] == rec["status"])
        cat_ids = {"new": 2, "indeterminate": 4, "done": 3}
        links = []
        for k, link in enumerate(self.links(i)):
            other = int(link["other"])
            orec_key = self.key_of(other)
            ltype = {
                "Blocks": ("10000", "is blocked by", "blocks"),
                "Relates": ("10003", "relates to", "relates to"),
            }[link["type"]]
            side = "outwardIssue" if link["dir"] == "outward" else "inwardIssue"
            links.append(
                {
                    "id": str(50000 + min(i, other) * 2 + k),
                    "type": {"id": ltype[0], "name": link["type"], "inward": ltype[1], "outward": ltype[2]},
                    side: {"id": str(10000 + other), "key": orec_key, "self": f"{api}/issue/{10000 + other}"},
                }
            )
        fields: dict[str, Any] = {
            "issuetype": {
                "id": str(10000 + (*TYPES, "Epic").index(rec["issuetype"])),
                "name": rec["issuetype"],
                "subtask": False,
                "hierarchyLevel": 1 if rec["issuetype"] == "Epic" else 0,
            },
            "project": {
                "id": str(10000 + self.projects.index(key.split("-")[0])),
                "key": key.split("-")[0],
                "name": key.split("-")[0].capitalize(),
            },
            "summary": rec["summary"],
            "description": rich(rec["paras"], tail=i % 4 == 2),
            "status": {
                "name": rec["status"],
                "id": str(10000 + STATUSES.index(status)),
                "statusCategory": {
                    "id": cat_ids[status[1]],
                    "key": status[1],
                    "name": {"new": "To Do", "indeterminate": "In Progress", "done": "Done"}[status[1]],
                },
            },
            "priority": {"name": rec["priority"], "id": str(PRIORITIES.index(rec["priority"]) + 1)},
            "assignee": user(rec["assignee"]),
            "reporter": user(rec["reporter"]),
            "creator": user(rec["reporter"]),
            "duedate": rec["duedate"],
            START_FIELD: rec["planned_start"],
            END_FIELD: rec["planned_end"],
            EPIC_FIELD: rec["epic_key"],
            EPIC_NAME_FIELD: rec["epic_name"],
            SPRINT_FIELD: rec["sprints"] or None,
            "labels": rec["labels"],
            "created": millis_time(rec["created"], zulu=False),
            "updated": millis_time(rec["updated"], zulu=False),
            "issuelinks": links,
            "comment": {
                "comments": [
                    {
                        "id": c["id"],
                        "self": f"{api}/issue/{10000 + i}/comment/{c['id']}",
                        "author": user(c["author"]),
                        "body": rich([c["text"]]),
                        "created": millis_time(c["created"], zulu=False),
                        "updated": millis_time(c["created"], zulu=False),
                    }
                    for c in rec["comments"]
                ],
                "startAt": 0,
                "maxResults": len(rec["comments"]),
                "total": len(rec["comments"]),
            },
            "attachment": [
                {
                    "id": a["id"],
                    "filename": a["filename"],
                    "mimeType": a["mimeType"],
                    "size": len(a["body"]) if a.get("body") else len(a["text"] or "") or 4096,
                    "created": millis_time(rec["created"], zulu=False),
                    "self": f"{api}/attachment/{a['id']}",
                    "content": f"{base_url}/secure/attachment/{a['id']}/{a['filename']}",
                }
                for a in rec["attachments"]
            ],
            "security": {"id": rec["security_level"], "name": "Internal"} if rec["security_level"] else None,
        }
        issue: dict[str, Any] = {"id": str(10000 + i), "key": key, "self": f"{api}/issue/{10000 + i}", "fields": fields}
        previous = self.edits.get(i, {}).get("previous_keys") or []
        if previous:
            # What Jira returns with expand=changelog for a moved issue (the emulator always includes it).
            chain = [*previous, key]
            issue["changelog"] = {
                "histories": [
                    {"id": str(n + 1), "items": [{"field": "Key", "fromString": a, "toString": b}]}
                    for n, (a, b) in enumerate(itertools.pairwise(chain))
                ]
            }
        return issue

    # ------------------------------------------------------------ search

    def _matches(self, jql_text: str) -> tuple[jql.Predicate, jql.Plan]:
        return jql.parse(jql_text, self.tz)

    def _view(self, i: int) -> dict[str, Any]:
        rec = self.record(i)
        key = self.key_of(i)
        return {
            "key": key,
            "id": str(10000 + i),
            "project": key.split("-")[0],
            "updated": rec["updated"],
            "created": rec["created"],
            "status": rec["status"],
            "labels": rec["labels"],
            "issuetype": rec["issuetype"],
            "priority": rec["priority"],
        }

    def _overlay_order(self) -> list[int]:
        with self._lock:
            return sorted(
                (i for i in self.edits if self.exists(i)),
                key=lambda i: (self.edits[i]["updated"], self.key_of(i)),
            )

    def _base_start(self, plan: jql.Plan) -> int:
        if plan.updated_from is None:
            return 0
        # Base issue i is updated within [T0 + i*STEP, T0 + (i+1)*STEP): the first candidate is one before.
        start = int((plan.updated_from - T0) / STEP) - 1
        return max(0, min(self.n, start))

    def iterate(self, jql_text: str, start: tuple[str, int] = ("b", 0)) -> Iterator[tuple[tuple[str, int], int]]:
        """Matching issue indexes in ``updated ASC, key ASC`` order with their resume positions."""
        pred, plan = self._matches(jql_text)
        touched = set(self.edits) | self.deleted
        phase, pos = start
        if plan.keys is not None or plan.ids is not None:
            cands: set[int] = set()
            for ref in (plan.keys or set()) | (plan.ids or set()):
                idx = self.index_of(ref)
                if idx is not None:
                    cands.add(idx)
            ordered = sorted(cands, key=lambda i: (self.record(i)["updated"], self.key_of(i)))
            for k, i in enumerate(ordered):
                if k >= pos and pred(self._view(i)):
                    yield ("k", k + 1), i
            return
        if phase == "b":
            projs = [self.projects.index(p) for p in (plan.projects or set(self.projects)) if p in self.projects]
            i = max(pos, self._base_start(plan))
            while i < self.n:
                if i % self.p in projs and i not in touched and pred(self._view(i)):
                    yield ("b", i + 1), i
                i += 1
                if i % self.p not in projs and projs:
                    # Jump to the next index of a wanted project (keeps 1M-issue scans O(matches)).
                    nxt = min(
                        ((i // self.p) * self.p + q)
                        if ((i // self.p) * self.p + q) >= i
                        else ((i // self.p + 1) * self.p + q)
                        for q in projs
                    )
                    i = nxt
            phase, pos = "o", 0
        overlay = self._overlay_order()
        for k in range(pos, len(overlay)):
            if pred(self._view(overlay[k])):
                yield ("o", k + 1), overlay[k]

    def count(self, jql_text: str) -> int:
        """Number of matches; arithmetic for project/updated plans so 1M-issue totals stay cheap."""
        pred, plan = self._matches(jql_text)
        if not plan.exact or plan.keys is not None or plan.ids is not None:
            return sum(1 for _ in self.iterate(jql_text))
        projs = {self.projects.index(p) for p in (plan.projects or set(self.projects)) if p in self.projects}
        start = self._base_start(plan)
        with self._lock:
            touched = set(self.edits) | self.deleted
        total = sum(_count_congruent(start, self.n, q, self.p) for q in projs)
        for i in range(start, min(self.n, start + 2)):
            if i % self.p in projs and i not in touched and not pred(self._view(i)):
                total -= 1
        total -= sum(1 for i in touched if start <= i < self.n and i % self.p in projs)
        total += sum(1 for i in self._overlay_order() if pred(self._view(i)))
        return total

    def _unknown_project(self, jql_text: str) -> Response | None:
        """Jira's answer to JQL naming a project the caller cannot see (it does not say which is which)."""
        clause = r"\bproject\s*(?:not\s+in|in|=|!=)\s*\(?([^)]*?)\)?(?:\s+(?:and|or|order)\b|$)"
        for m in re.finditer(clause, jql_text, re.IGNORECASE):
            for value in (v.strip().strip('"').upper() for v in m.group(1).split(",")):
                if value and value in self.invisible_projects:
                    return error_response(400, f"The value '{value}' does not exist for the field 'project'.")
        return None

    def _page(self, req: Request, version: int, token_mode: bool) -> Response:
        body = req.json() if req.method == "POST" else None
        body = body if isinstance(body, Mapping) else {}
        jql_text = str(body.get("jql", req.arg("jql", "")) or "")
        refused = self._unknown_project(jql_text)
        if refused is not None:
            return refused
        max_results = min(MAX_PAGE, int(body.get("maxResults", req.arg("maxResults", "50")) or 50))
        base_url = request_base_url(req)
        if token_mode:
            token = body.get("nextPageToken", req.arg("nextPageToken"))
            start = _decode_token(token) if token else ("b", 0)
            page: list[int] = []
            last_pos = start
            more = False
            for pos, i in self.iterate(jql_text, start):
                if len(page) == max_results:
                    more = True
                    break
                if self._hidden(i):
                    last_pos = pos
                    continue
                page.append(i)
                last_pos = pos
            resp: dict[str, Any] = {
                "issues": [self._serve(i, version, base_url) for i in page],
                "isLast": not more,
            }
            if more:
                resp["nextPageToken"] = _encode_token(last_pos)
            return Response(200, resp)
        start_at = int(body.get("startAt", req.arg("startAt", "0")) or 0)
        # Offset paging over a lazy sequence: resume where the previous page of this JQL ended.
        with self._lock:
            known = self._offsets.get(jql_text, {})
            k = max((x for x in known if x <= start_at), default=0)
            pos = known.get(k, ("b", 0))
        page = []
        marks: dict[int, tuple[str, int]] = {}
        for pos_next, i in self.iterate(jql_text, pos):
            if self._hidden(i):
                pos = pos_next
                continue
            if k >= start_at + max_results:
                break
            if k >= start_at:
                page.append(i)
                marks[k] = pos
            k += 1
            pos = pos_next
        marks[k] = pos
        with self._lock:
            if len(self._offsets) > 64:
                self._offsets.clear()
            self._offsets[jql_text] = marks
        total = (
            self.count(jql_text)
            if not self._key_rules()
            else sum(1 for _, i in self.iterate(jql_text) if not self._hidden(i))
        )
        return Response(
            200,
            {
                "startAt": start_at,
                "maxResults": max_results,
                "total": total,
                "issues": [self._serve(i, version, base_url) for i in page],
            },
        )

    def _key_rules(self) -> bool:
        return bool(self.invisible_projects) or any(r["keys"] for r in self.faults.describe()["rules"])

    def _hidden(self, i: int) -> bool:
        if self.key_of(i).rpartition("-")[0] in self.invisible_projects:
            return True
        fault = self.faults.for_key(self.key_of(i), serving=False)
        return fault is not None and fault.status in (403, 404)

    def _serve(self, i: int, version: int, base_url: str) -> dict[str, Any]:
        issue = self.render(i, version, base_url)
        fault = self.faults.for_key(issue["key"])
        if fault is not None and fault.malformed:
            issue["fields"] = None
        return issue

    # ------------------------------------------------------------ routes

    def _routes_api(self) -> None:
        route = self.route

        @route("GET", r"/rest/api/2/serverInfo")
        def server_info(req: Request) -> Response:
            return Response(
                200,
                {
                    "baseUrl": request_base_url(req),
                    "version": "9.12.0" if self.deployment == "server" else "1001.0.0",
                    "deploymentType": "Cloud" if self.deployment == "cloud" else "Server",
                },
            )

        @route("GET", r"/rest/api/(?P<v>[23])/myself")
        def myself(req: Request) -> Response:
            return Response(200, {**self.users[0], "timeZone": self.timezone, "active": True})

        @route("GET", r"/rest/api/(?P<v>[23])/field")
        def fields(req: Request) -> Response:
            if self.field_list_status is not None:
                return error_response(self.field_list_status, "field list unavailable")

            def cf(fid: str, name: str, custom: str, typ: str) -> dict[str, Any]:
                return {"id": fid, "name": name, "custom": True, "schema": {"type": typ, "custom": custom}}

            return Response(
                200,
                [
                    {
                        "id": "summary",
                        "name": "Summary",
                        "custom": False,
                        "schema": {"type": "string", "system": "summary"},
                    },
                    cf(SPRINT_FIELD, "Sprint", "com.pyxis.greenhopper.jira:gh-sprint", "array"),
                    cf(EPIC_FIELD, "Epic Link", "com.pyxis.greenhopper.jira:gh-epic-link", "any"),
                    cf(EPIC_NAME_FIELD, "Epic Name", "com.pyxis.greenhopper.jira:gh-epic-label", "string"),
                    cf(
                        START_FIELD,
                        "Start date",
                        "com.atlassian.jira.plugin.system.customfieldtypes:datepicker",
                        "date",
                    ),
                    cf(END_FIELD, "Target end", "com.atlassian.jpo:jpo-custom-field-baseline-end", "date"),
                ],
            )

        route("GET", r"/rest/api/2/search")(lambda req: self._page(req, 2, False))
        route("POST", r"/rest/api/2/search")(lambda req: self._page(req, 2, False))
        route("GET", r"/rest/api/3/search/jql")(lambda req: self._page(req, 3, True))
        route("POST", r"/rest/api/3/search/jql")(lambda req: self._page(req, 3, True))

        @route("POST", r"/rest/api/3/search/approximate-count")
        def approx(req: Request) -> Response:
            body = req.json() or {}
            jql_text = str(body.get("jql", ""))
            refused = self._unknown_project(jql_text)
            if refused is not None:
                return refused
            if self._key_rules():
                return Response(200, {"count": sum(1 for _, i in self.iterate(jql_text) if not self._hidden(i))})
            return Response(200, {"count": self.count(jql_text)})

        @route("GET", r"/rest/api/(?P<v>[23])/issue/(?P<ref>[^/]+)")
        def get_issue(req: Request) -> Response:
            i = self.index_of(req.params["ref"])
            if i is None:
                return error_response(404, "Issue does not exist or you do not have permission to see it.")
            fault = self.faults.for_key(self.key_of(i))
            if fault is not None and fault.status is not None:
                return error_response(fault.status, "You do not have the permission to see the specified issue.")
            issue = self.render(i, int(req.params["v"]), request_base_url(req))
            if fault is not None and fault.malformed:
                issue["fields"] = None
            return Response(200, issue)

        @route("GET", r"/secure/attachment/(?P<id>\d+)/(?P<name>[^/]+)")
        def attachment(req: Request) -> Response:
            aid = int(req.params["id"])
            # Past 10,000 issues the id ranges overlap (a text file's 20000 + i reaches a screenshot's
            # 30000 + j): every issue the id could belong to is tried, and the file name decides.
            for i in (aid - 20000, aid - 30000, (aid - 40000) // 10):
                if i < 0 or not self.exists(i):
                    continue
                for a in self.record(i)["attachments"]:
                    if a["id"] == req.params["id"] and a["filename"] == unquote(req.params["name"]):
                        body = a.get("body") or (a["text"] or "\x89PNG").encode()
                        return Response(200, body, {"Content-Type": a["mimeType"]})
            return error_response(404, "no attachment")

        @route("GET", r"/rest/api/(?P<v>[23])/project/(?P<key>[^/]+)/permissionscheme")
        def permissions(req: Request) -> Response:
            key = req.params["key"].upper()
            if key not in self.browse or key in self.invisible_projects:
                return error_response(404, "No project could be found")
            base = f"{request_base_url(req)}/rest/api/{req.params['v']}"
            holders = [_holder(p) for p in self.browse[key]] if key in self.overridden else self._scheme(key)
            grants = [
                {
                    "id": 10300 + k,
                    "self": f"{base}/permissionscheme/{10000 + self.projects.index(key)}/permission/{10300 + k}",
                    "holder": h,
                    "permission": "BROWSE_PROJECTS",
                }
                for k, h in enumerate(holders)
            ]
            # Real schemes grant many other permissions too; the connector must pick Browse Projects.
            grants.append(
                {"id": 10004, "holder": {"type": "projectRole", "parameter": "10002"}, "permission": "DELETE_ISSUES"}
            )
            return Response(
                200,
                {
                    "expand": "permissions,user,group,projectRole,field,all",
                    "id": 10000 + self.projects.index(key),
                    "self": f"{base}/permissionscheme/{10000 + self.projects.index(key)}",
                    "name": f"{key} permission scheme",
                    "permissions": grants,
                },
            )

        @route("GET", r"/rest/api/(?P<v>[23])/project/(?P<key>[^/]+)/role")
        def project_roles(req: Request) -> Response:
            key = req.params["key"].upper()
            if key not in self.browse or key in self.invisible_projects:
                return error_response(404, "No project could be found")
            base = f"{request_base_url(req)}/rest/api/{req.params['v']}/project/{key}/role"
            return Response(200, {name: f"{base}/{rid}" for rid, (name, _) in self._roles(key).items()})

        @route("GET", r"/rest/api/(?P<v>[23])/project/(?P<key>[^/]+)/role/(?P<id>\d+)")
        def project_role(req: Request) -> Response:
            key = req.params["key"].upper()
            roles = self._roles(key) if key in self.browse else {}
            if req.params["id"] not in roles:
                return error_response(404, "No project role could be found")
            name, actors = roles[req.params["id"]]
            j = self.projects.index(key)
            return Response(
                200,
                {
                    "self": f"{request_base_url(req)}/rest/api/{req.params['v']}/project/{key}/role/{req.params['id']}",
                    "name": name,
                    "id": int(req.params["id"]),
                    "description": f"A project role that represents {name.lower()} in a project",
                    "actors": actors,
                    "scope": {"type": "PROJECT", "project": {"id": str(10000 + j), "key": key, "name": key.title()}},
                },
            )

        @route("GET", r"/rest/api/(?P<v>[23])/applicationrole")
        def application_roles(req: Request) -> Response:
            return Response(200, [_APP_ROLE])

        @route("GET", r"/rest/api/(?P<v>[23])/project/(?P<key>[^/]+)")
        def project(req: Request) -> Response:
            key = req.params["key"].upper()
            if key not in self.browse or key in self.invisible_projects:
                return error_response(404, "No project could be found")
            j = self.projects.index(key)
            lead = self.users[j + 1]
            return Response(
                200,
                {
                    "id": str(10000 + j),
                    "key": key,
                    "name": key.title(),
                    "projectTypeKey": "software",
                    "lead": {"accountId": lead["accountId"], "displayName": lead["displayName"], "active": True},
                },
            )

        @route("GET", r"/rest/api/(?P<v>[23])/issuesecurityschemes/level/member")
        def level_members(req: Request) -> Response:
            level = req.arg("levelId") or ""
            if level not in self.levels:
                return error_response(404, "No security level")
            if level in self.overridden:
                holders = [_holder(p) for p in self.levels[level]]
            else:
                j = int(level) - 10100
                holders = [
                    {"type": "projectRole", "parameter": "10002", "expand": "projectRole"},
                    {"type": "user", "parameter": self.users[j]["accountId"], "user": _account(self.users[j])},
                ]
            values = [{"id": 200 + k, "issueSecurityLevelId": level, "holder": h} for k, h in enumerate(holders)]
            return Response(
                200, {"startAt": 0, "maxResults": 50, "total": len(values), "isLast": True, "values": values}
            )

    def _routes_control(self) -> None:
        route = self.route

        @route("GET", r"/_emulator/issues")
        def keys(req: Request) -> Response:
            with self._lock:
                live = [self.key_of(i) for i in range(self.next_index) if self.exists(i)]
            return Response(200, {"keys": live, "count": len(live)})

        @route("POST", r"/_emulator/issues")
        def create(req: Request) -> Response:
            body = req.json() or {}
            proj = str(body.get("project") or self.projects[0]).upper()
            if proj not in self.projects:
                return error_response(400, f"unknown project {proj}")
            with self._lock:
                i = self.next_index
                while i % self.p != self.projects.index(proj):
                    i += 1
                template = self.base(i % self.n if self.n else 0) if self.n else self.base(0)
                rec = {
                    **template,
                    "index": i,
                    "key": f"{proj}-{i // self.p + 1}",
                    "project": proj,
                    "summary": str(body.get("summary") or "New issue"),
                    "created": self._now(),
                    "paras": [str(body.get("description") or "Created through the emulator.")],
                    "comments": [],
                    "attachments": [],
                    "epic_key": None,
                    "sprints": [],
                }
                rec["updated"] = rec["created"]
                self.edits[i] = rec
                self.next_index = i + 1
            return Response(201, {"id": str(10000 + i), "key": rec["key"]})

        @route("PATCH", r"/_emulator/issues/(?P<key>[^/]+)")
        def patch(req: Request) -> Response:
            body = req.json()
            if not isinstance(body, Mapping):
                return error_response(400, "body must be an object")
            with self._lock:
                i = self.index_of(req.params["key"])
                if i is None:
                    return error_response(404, "no such issue")
                edit = self.edits.setdefault(i, {})
                at: datetime | None = None
                for name, value in body.items():
                    if name == "updated":
                        try:
                            at = datetime.fromisoformat(str(value))
                        except ValueError:
                            return error_response(400, f"updated {value!r} is not an ISO time")
                        if at.tzinfo is None:
                            return error_response(400, "updated needs its offset")
                    elif name == "description":
                        edit["paras"] = [str(value)]
                    elif name == "status":
                        match = next((s for s in STATUSES if s[0].lower() == str(value).lower()), None)
                        if match is None:
                            return error_response(400, f"unknown status {value}")
                        edit["status"], edit["category"] = match[0], match[1]
                    elif name == "project":
                        proj = str(value).upper()
                        if proj not in self.projects:
                            return error_response(400, f"unknown project {proj}")
                        old = self.key_of(i)
                        edit["previous_keys"] = [*edit.get("previous_keys", []), old]
                        edit["key"] = f"{proj}-{10_000_000 + i}"
                    elif name in ("summary", "labels", "priority", "duedate", "assignee"):
                        edit[name] = value
                    else:
                        return error_response(400, f"field {name} cannot be patched")
                edit["updated"] = at.astimezone(UTC) if at is not None else self._now()
            return Response(200, {"key": self.key_of(i), "id": str(10000 + i)})

        @route("DELETE", r"/_emulator/issues/(?P<key>[^/]+)")
        def delete(req: Request) -> Response:
            with self._lock:
                i = self.index_of(req.params["key"])
                if i is None:
                    return error_response(404, "no such issue")
                self.deleted.add(i)
            return Response(204)

        @route("POST", r"/_emulator/issues/(?P<key>[^/]+)/restore")
        def restore(req: Request) -> Response:
            with self._lock:
                proj, _, num = req.params["key"].upper().rpartition("-")
                if proj not in self.projects or not num.isdigit():
                    return error_response(404, "no such issue")
                i = (int(num) - 1) * self.p + self.projects.index(proj)
                if i not in self.deleted:
                    return error_response(404, "not deleted")
                self.deleted.discard(i)
            return Response(200, {"key": self.key_of(i)})

        @route("POST", r"/_emulator/permissions")
        def set_permissions(req: Request) -> Response:
            body = req.json() or {}
            principals = body.get("principals")
            if not isinstance(principals, list) or not all(isinstance(p, str) for p in principals):
                return error_response(400, "principals must be a list of strings")
            with self._lock:
                if "project" in body:
                    if str(body["project"]).upper() not in self.browse:
                        return error_response(404, "unknown project")
                    self.browse[str(body["project"]).upper()] = list(principals)
                    self.overridden.add(str(body["project"]).upper())
                elif "security_level" in body:
                    self.levels[str(body["security_level"])] = list(principals)
                    self.overridden.add(str(body["security_level"]))
                else:
                    return error_response(400, "give 'project' or 'security_level'")
            return Response(200, {"browse": self.browse, "levels": self.levels})

        @route("POST", r"/_emulator/webhooks/send")
        def send(req: Request) -> Response:
            body = req.json() or {}
            event = str(body.get("event") or "jira:issue_updated")
            i = self.index_of(str(body.get("key") or ""))
            if i is None and event != "jira:issue_deleted":
                return error_response(404, "no such issue")
            if i is not None:
                issue = self.render(i, 2, request_base_url(req))
            else:
                issue = {"id": str(body.get("id") or ""), "key": str(body.get("key") or ""), "fields": {}}
            payload = {
                "timestamp": int(self._now().timestamp() * 1000),
                "webhookEvent": event,
                "issue_event_type_name": event.split(":")[-1],
                "user": self.users[0],
                "issue": issue,
            }
            delivery = str(body.get("delivery_id") or uuid.uuid4())
            status = send_atlassian_webhook(
                str(body["url"]), json.dumps(payload).encode(), str(body.get("secret") or ""), delivery
            )
            return Response(200, {"status": status, "delivery_id": delivery})

    def _scheme(self, key: str) -> list[dict[str, Any]]:
        """Browse Projects holders of a real-shaped scheme (roles, issue people, lead, app role)."""
        j = self.projects.index(key)
        holders: list[dict[str, Any]] = [
            {"type": "projectRole", "parameter": "10002", "expand": "projectRole"},
            {"type": "projectRole", "parameter": "10001", "expand": "projectRole"},
            {"type": "reporter"},
            {"type": "assignee"},
            {"type": "projectLead"},
        ]
        if j == 0:
            holders.append({"type": "applicationRole", "parameter": "jira-software"})
        if j == 1 and self.service_desk_holder:
            holders.append({"type": "sd.customer.portal.only"})
        return holders

    def _roles(self, key: str) -> dict[str, tuple[str, list[dict[str, Any]]]]:
        """Role id -> (name, actors) of project ``key``: the project's groups and its first user."""
        j = self.projects.index(key)
        team, leads = (f"{key.lower()}-team", f"{key.lower()}-leads")

        def group(k: int, name: str) -> dict[str, Any]:
            gid = str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
            return {
                "id": 10240 + k,
                "displayName": name,
                "type": "atlassian-group-role-actor",
                "name": name,
                "actorGroup": {"name": name, "displayName": name, "groupId": gid},
            }

        member = self.users[j]
        return {
            "10002": ("Administrators", [group(0, leads)]),
            "10001": (
                "Developers",
                [
                    group(1, team),
                    {
                        "id": 10242,
                        "displayName": member["displayName"],
                        "type": "atlassian-user-role-actor",
                        "actorUser": {"accountId": member["accountId"]},
                    },
                ],
            ),
        }

    def _now(self) -> datetime:
        with self._lock:
            self._clock = max(self._clock + timedelta(seconds=1), datetime.now(UTC).replace(microsecond=0))
            return self._clock


# ---------------------------------------------------------------- helpers


def _count_congruent(start: int, stop: int, q: int, p: int) -> int:
    """How many i in [start, stop) have i % p == q."""

    def upto(x: int) -> int:  # count in [0, x)
        return 0 if x <= q else (x - q - 1) // p + 1

    return max(0, upto(stop) - upto(start))


def _holder(principal: str) -> dict[str, Any]:
    kind, _, rest = principal.partition(":")
    if kind == "group":
        name = rest.split(":", 1)[1] if rest.startswith("jira:") else rest
        return {"type": "group", "parameter": name, "value": name}
    if kind == "user":
        return {"type": "user", "parameter": rest, "user": {"emailAddress": rest, "accountId": rest}}
    return {"type": kind, "parameter": rest}


# Shaped like go-atlassian's captured ``get_application_role_by_key.json`` (Jira Cloud).
_APP_ROLE: dict[str, Any] = {
    "key": "jira-software",
    "groups": ["jira-software-users", "site-admins"],
    "groupDetails": [
        {"name": "jira-software-users", "groupId": "5e2e2d8a-4a7e-4b7e-8a64-0c4f5a1b2c3d"},
        {"name": "site-admins", "groupId": "0b7c1a52-8f55-4b2b-9d8e-7a1f4c2e9b10"},
    ],
    "name": "Jira Software",
    "defaultGroups": ["jira-software-users"],
    "selectedByDefault": False,
    "defined": True,
    "numberOfSeats": 10,
    "remainingSeats": 5,
    "userCount": 5,
    "userCountDescription": "users",
    "hasUnlimitedSeats": False,
    "platform": False,
}


def _account(user: Mapping[str, Any]) -> dict[str, Any]:
    """A Cloud user as permission payloads show it: account id and display name, no e-mail."""
    return {"accountId": user["accountId"], "displayName": user["displayName"], "active": True}


def _encode_token(pos: tuple[str, int]) -> str:
    return f"{pos[0]}{pos[1]}"


def _decode_token(token: Any) -> tuple[str, int]:
    text = str(token)
    if len(text) < 2 or text[0] not in "bok" or not text[1:].isdigit():
        raise ValueError("invalid nextPageToken")
    return text[0], int(text[1:])


def _adf_para(text: str) -> dict[str, Any]:
    """A paragraph as Jira's editor stores it: one text node per run of words with the same marks (the
    captured payloads in tests/fixtures/go-atlassian hold whole sentences in one node), a link its own
    marked node, a mention its own node. Before decision 121 every word and every space was a node of its
    own: 20-40 nodes where Jira writes one to five."""
    content: list[dict[str, Any]] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            content.append({"type": "text", "text": "".join(plain)})
            plain.clear()

    for n, word in enumerate(text.split(" ")):
        if n:
            plain.append(" ")
        if word.startswith("http"):
            flush()
            content.append({"type": "text", "text": word, "marks": [{"type": "link", "attrs": {"href": word}}]})
        elif word.startswith("@"):
            flush()
            content.append({"type": "mention", "attrs": {"id": word[1:], "text": word}})
        else:
            plain.append(word)
    flush()
    return {"type": "paragraph", "content": content}


def _adf_tail(key: str) -> list[dict[str, Any]]:
    """Block nodes real Cloud descriptions carry (ordered list, code block, table, panel, status, inline
    card, a node type from a newer editor), worded so that :func:`_wiki_tail` reads the same."""

    def para(*inline: dict[str, Any]) -> dict[str, Any]:
        return {"type": "paragraph", "content": list(inline)}

    def text(t: str) -> dict[str, Any]:
        return {"type": "text", "text": t}

    def cell(kind: str, t: str) -> dict[str, Any]:
        return {"type": kind, "attrs": {}, "content": [para(text(t))]}

    return [
        {
            "type": "orderedList",
            "attrs": {"order": 1},
            "content": [
                {"type": "listItem", "content": [para(text(f"reproduce {key}"))]},
                {"type": "listItem", "content": [para(text("apply the fix"), {"type": "hardBreak"})]},
            ],
        },
        {"type": "codeBlock", "attrs": {"language": "bash"}, "content": [text(f"make verify ISSUE={key}")]},
        {
            "type": "table",
            "attrs": {"isNumberColumnEnabled": False, "layout": "default"},
            "content": [
                {"type": "tableRow", "content": [cell("tableHeader", "step"), cell("tableHeader", "owner")]},
                {"type": "tableRow", "content": [cell("tableCell", "review"), cell("tableCell", "team")]},
            ],
        },
        {"type": "panel", "attrs": {"panelType": "info"}, "content": [para(text("rollout behind a flag"))]},
        {"type": "syncBlock", "attrs": {"resourceId": "x"}, "content": [para(text("synced from the runbook"))]},
    ]


def _wiki_tail(key: str) -> str:
    return (
        f"# reproduce {key}\n# apply the fix\n\n{{code:bash}}make verify ISSUE={key}{{code}}\n\n"
        "||step||owner||\n|review|team|\n\n{panel:bgColor=#deebff}rollout behind a flag{panel}\n\n"
        "synced from the runbook"
    )


def _wiki_para(text: str) -> str:
    words = []
    for word in text.split(" "):
        if word.startswith("http"):
            words.append(f"[{word}]")
        elif word.startswith("@"):
            words.append(f"[~{word[1:]}]")
        else:
            words.append(word)
    return " ".join(words)


def build(ns: argparse.Namespace) -> JiraEmulator:
    return JiraEmulator(
        ns.issues,
        seed=ns.seed,
        token=ns.token,
        deployment=ns.deployment,
        timezone=ns.timezone,
        projects=ns.projects,
        company=ns.company,
        confluence_pages=ns.confluence_pages,
        slack_messages=ns.slack_messages,
    )


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--issues", type=int, default=100)
    parser.add_argument("--deployment", choices=("cloud", "server"), default="cloud")
    parser.add_argument("--timezone", default="Europe/Berlin")
    parser.add_argument("--projects", type=int, default=4)
    parser.add_argument("--company", help="demo company shared with the Confluence/Slack emulators (people, links)")
    parser.add_argument("--confluence-pages", type=int, default=40, help="pages the Confluence emulator serves")
    parser.add_argument("--slack-messages", type=int, default=100, help="messages the Slack emulator serves")


if __name__ == "__main__":
    main_cli(build, _add_args, description="Jira REST v2/v3 emulator")
