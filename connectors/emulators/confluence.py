"""Local Confluence emulator: Cloud REST v2 + v1 (under ``/wiki``) and Server/DC v1 (no prefix).

``python -m connectors.emulators.confluence --host 127.0.0.1 --port P --pages N --seed S [--company demo]
[--time-zone Europe/Berlin] [--token T]`` serves until killed; the first stdout line is the base URL.
Cloud clients use ``<base>/wiki``, Server clients ``<base>``.

Data: ``N`` pages over four spaces (ENG, OPS, HR, PRD), generated lazily from ``(seed, index)`` so any
size costs nothing up front; edits, creations and deletions live in a sparse overlay. Page ``i`` has id
``100000 + i``, lives in space ``i % 4``, its parent is the ``(j - 1) // 3``-th page of that space
(``j = i // 4``; ``j = 0`` is the space home), and it was last modified at ``2025-06-01 - (N - i) * 37 s``
(monotone in ``i``, so CQL ``lastmodified`` windows are computed, not scanned). About one page in 17 is
read-restricted to the ``leadership`` group and its author; its subtree inherits that. Bodies are real
storage format (headings, lists, tables, code macros, ``<ac:link><ri:page/>`` links to the parent, page
URLs to siblings, Jira keys ``DEMO-n``, Slack archive links, GitLab MR URLs); some pages carry
comments and attachments.

API (``{w}`` = ``/wiki`` or nothing; both answer):

- ``GET /wiki/api/v2/spaces``, ``GET /wiki/api/v2/pages``, ``GET /wiki/api/v2/spaces/{id}/pages`` —
  cursor paging (``limit`` <= 250, ``_links.next`` carries ``cursor``); ``GET /wiki/api/v2/spaces/{id}/blogposts``
  and ``content?type=blogpost`` (``blog_posts`` per space, ids 900000 + k, off by default);
- ``GET {w}/rest/api/space`` (start/limit), ``GET {w}/rest/api/space/{key}?expand=permissions``;
- ``GET {w}/rest/api/content?type=page&spaceKey=&title=&start=&limit=&expand=`` (limit <= 100);
- ``GET {w}/rest/api/content/search?cql=&start=&limit=&expand=`` — CQL subset: ``ancestor = <id>``, ``type=page``,
  ``lastmodified >= "yyyy-MM-dd HH:mm"`` (in the API user's time zone, like Confluence), ``space = X``,
  ``space in (..)``, ``space not in (..)``, ``title = ".."``, ``order by lastmodified``; ``totalSize``;
- ``GET {w}/rest/api/content/{id}?expand=`` — expansions: ``body.storage``, ``ancestors``, ``version``,
  ``history``, ``space``, ``metadata.labels``, ``restrictions.read.restrictions.user/group``,
  ``children.comment.body.storage``, ``children.attachment``;
- ``GET {w}/rest/api/content/{id}/restriction/byOperation/read``, ``.../child/comment``,
  ``.../child/attachment``, ``GET {w}/rest/api/group/{name}/member``, ``GET {w}/rest/api/user/current``
  (its ``timeZone`` is the zone CQL dates are read in).

Control (``/_emulator/``, besides the kit's ``faults`` and ``stats``):

- ``GET pages`` (all live ids), ``POST pages`` ``{"space", "title", "body", "parent_id"}`` -> ``{"id"}``,
  ``POST pages/{id}/comments`` ``{"text"}`` (the page's lastmodified is unchanged; CQL
  ``type in (page, comment)`` finds the comment, with its page as ``container``),
  ``PATCH pages/{id}`` ``{"title"?, "body"?, "status"?, "restrictions"?: {"users": [emails], "groups": []}
  | null}``, ``DELETE pages/{id}``;
- ``POST pages/{id}/attachments`` ``{"name", "media", "text"? | "pdf_text"? | "size"?}`` (served at
  ``_links.download``, ``{w}/download/attachments/{page id}/{name}``; CQL ``type in (..., attachment)``
  finds it with its page as ``container``), ``PATCH blogposts/{id}`` ``{"title"?, "body"?}`` (CQL
  ``type in (..., blogpost)`` finds it);
- attributes for tests: ``invisible_spaces`` (left out of ``/rest/api/space``), ``group_ids_only``
  (group subjects carry ``id`` without ``name``, as Cloud may; ``GET {w}/rest/api/group/by-id?id=``
  names them);
- ``PUT spaces/{key}/permissions`` ``{"users": [emails], "groups": [...], "anonymous": false}``;
- ``PUT groups/{name}`` ``{"members": [emails]}``;
- ``POST webhooks/send`` ``{"url", "secret", "event": "page_created|page_updated|page_removed",
  "page_id"}`` -> posts ``{"event", "timestamp", "userAccountId", "page": {...}}`` signed
  ``X-Hub-Signature: sha256=<hex>`` with a unique ``X-Atlassian-Webhook-Identifier``; returns ``{"status"}``.

Per-item faults (``{"status": 403, "keys": ["100007"]}``, ``{"malformed": true, "keys": [...]}``) apply
where a page is served by id; 403/404-faulted pages are left out of list pages, malformed ones are
served with a null title and a non-object body.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import json
import random
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

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

STEP = timedelta(seconds=37)
END = datetime(2025, 6, 1, tzinfo=UTC)
_TOPICS = [
    "Deployment",
    "Onboarding",
    "Incident review",
    "Architecture",
    "Runbook",
    "Roadmap",
    "Billing",
    "Search",
    "Ingestion",
    "Backup policy",
    "On-call",
    "Release notes",
    "Hiring plan",
    "Postmortem",
    "API design",
    "Data retention",
    "Security review",
    "Capacity planning",
]
_WORDS = [
    "the",
    "service",
    "pipeline",
    "cluster",
    "queue",
    "worker",
    "latency",
    "budget",
    "customer",
    "rollout",
    "migration",
    "schema",
    "index",
    "review",
    "owner",
    "deadline",
    "risk",
    "metric",
    "alert",
    "dashboard",
    "retry",
    "backlog",
    "sprint",
    "release",
    "team",
    "plan",
]
GROUP_MEMBERS_IDX = {
    "confluence-users": list(range(20)),
    "engineering": list(range(10)),
    "hr": [10, 11, 12],
    "leadership": [0, 10, 13],
    "product": [13, 14, 15, 16, 17],
}
SPACE_PERMS: dict[str, dict[str, Any]] = {
    "ENG": {"users": [], "groups": ["confluence-users"], "anonymous": False},
    "OPS": {"users": [], "groups": ["engineering", "leadership"], "anonymous": False},
    "HR": {"users": [], "groups": ["hr", "leadership"], "anonymous": False},
    "PRD": {"users": [0], "groups": ["product"], "anonymous": False},
}


def _encode_cursor(n: int) -> str:
    return base64.urlsafe_b64encode(f"o:{n}".encode()).decode().rstrip("=")


def _decode_cursor(c: str | None) -> int:
    if not c:
        return 0
    try:
        raw = base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("invalid cursor") from exc
    if not raw.startswith("o:"):
        raise ValueError("invalid cursor")
    return int(raw[2:])


class ConfluenceEmulator(EmulatorApp):
    def __init__(
        self,
        *,
        pages: int = 50,
        seed: int = 0,
        token: str | None = None,
        company: str = "demo",
        time_zone: str = "UTC",
        jira_project: str = "DEMO",
        jira_issues: int = 40,
        blog_posts: int = 0,
    ) -> None:
        super().__init__(seed=seed, token=token)
        # Blog posts per space (ids 900000 + k), served beside the pages as Confluence does; 0 = none.
        self.blog_posts = blog_posts
        self.n = pages
        self.company = company
        self.domain = f"{company}.example"
        self.tz = ZoneInfo(time_zone)
        self.tz_name = time_zone
        self.jira_project = jira_project
        self.jira_issues = max(1, jira_issues)
        self.lock = threading.RLock()
        self.overlay: dict[int, dict[str, Any]] = {}  # index -> full page record (edited or created)
        # Comments added through the control API: (modified at, page index, comment number). Like real
        # Confluence, a new comment does not change its page's lastmodified; CQL finds it as type comment.
        self.comment_log: list[tuple[datetime, int, int]] = []
        # Attachments added through the control API, found by CQL ``type in (..., attachment)`` the same way.
        self.attachment_log: list[tuple[datetime, int, int]] = []
        # Spaces the credential cannot see: left out of ``/rest/api/space`` as Confluence does.
        self.invisible_spaces: set[str] = set()
        # Blog post edits through the control API: index -> {"title"?, "body"?, "updated", "version"}.
        self.blog_edits: dict[int, dict[str, Any]] = {}
        # Cloud sites may name groups by id only in permissions and restrictions (name via group/by-id).
        self.group_ids_only = False
        self.deleted: set[int] = set()
        self.next_index = pages
        self.space_perms = {
            k: {**v, "users": [self.user(u)["email"] for u in v["users"]]} for k, v in SPACE_PERMS.items()
        }
        self.groups = {g: [self.user(u)["email"] for u in m] for g, m in GROUP_MEMBERS_IDX.items()}
        self._routes_api()

    # ------------------------------------------------------------ generated data

    def user(self, k: int) -> dict[str, Any]:
        first, last, email = person(k, self.domain)
        k %= 20
        return {
            "type": "known",
            "accountId": f"5570{k:02d}:acc{k:04d}",
            "email": email,
            "publicName": f"{first} {last}",
            "displayName": f"{first} {last}",
            "accountType": "atlassian",
        }

    def user_by_email(self, email: str) -> dict[str, Any]:
        for k in range(20):
            u = self.user(k)
            if u["email"] == email:
                return u
        return {"type": "known", "accountId": "x-" + email, "email": email, "displayName": email}

    def page_id(self, i: int) -> str:
        return str(FIRST_ID + i)

    def index_of(self, page_id: str) -> int | None:
        if not page_id.isdigit():
            return None
        i = int(page_id) - FIRST_ID
        if i < 0 or i >= self.next_index or i in self.deleted:
            return None
        if i >= self.n and i not in self.overlay:
            return None
        return i

    def generated(self, i: int) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}:{i}")
        s = i % len(SPACES)
        j = i // len(SPACES)
        space_key = SPACES[s][0]
        parent = None if j == 0 else ((j - 1) // 3) * len(SPACES) + s
        topic = _TOPICS[rng.randrange(len(_TOPICS))]
        title = f"{SPACES[s][1]} home" if j == 0 else f"{topic} {j}"
        updated = END - (self.n - i) * STEP
        created = updated - timedelta(days=rng.randrange(0, 90), minutes=rng.randrange(0, 600))
        author = rng.randrange(20)
        restricted = j > 0 and rng.randrange(17) == 0
        roll = rng.randrange(100)
        status = "draft" if roll < 3 else "archived" if roll < 6 else "current"
        return {
            "index": i,
            "id": self.page_id(i),
            "space": space_key,
            "parent": parent,
            "title": title,
            "body": self._body(rng, i, s, parent, topic),
            "status": status,
            "created": created,
            "updated": updated,
            "version": 1 + rng.randrange(6),
            "author": author,
            "editor": rng.randrange(20),
            "labels": rng.sample(["howto", "runbook", "decision", "draft-notes", "team", "q3"], rng.randrange(3)),
            "restrictions": ({"users": [self.user(author)["email"]], "groups": ["leadership"]} if restricted else None),
            "comments": [
                {
                    "author": rng.randrange(20),
                    "text": f"Looks good. See {self._jira(rng)}.",
                    "minutes": c * 45 + 30,
                }
                for c in range(rng.choice((0, 0, 1, 2)))
            ],
            "attachments": [
                {"name": name, "media": media, "size": rng.randrange(200, 300000)}
                for name, media in rng.sample(
                    [
                        ("diagram.png", "image/png"),
                        ("notes.txt", "text/plain"),
                        ("spec.pdf", "application/pdf"),
                    ],
                    rng.choice((0, 0, 1, 2)),
                )
            ],
        }

    def _jira(self, rng: random.Random) -> str:
        return f"{self.jira_project}-{1 + rng.randrange(self.jira_issues)}"

    def _body(self, rng: random.Random, i: int, s: int, parent: int | None, topic: str) -> str:
        def sentence() -> str:
            words = [rng.choice(_WORDS) for _ in range(rng.randrange(6, 14))]
            return " ".join(words).capitalize() + "."

        parts = [f"<h2>{topic} overview</h2>", f"<p>{sentence()} {sentence()}</p>"]
        if parent is not None:
            parts.append(
                '<p>Part of <ac:link><ri:page ri:content-title="'
                + self._title_of(parent)
                + f'" ri:space-key="{SPACES[s][0]}"/></ac:link>.</p>'
            )
        sibling = i - len(SPACES)
        if sibling >= 0 and rng.randrange(3) == 0:
            parts.append(
                f'<p>Related: <a href="/wiki/spaces/{SPACES[sibling % len(SPACES)][0]}/pages/'
                f'{self.page_id(sibling)}">previous page</a>.</p>'
            )
        parts.append(
            f"<p>Tracked in {self._jira(rng)}; discussed in "
            f'<a href="{demo_message_url(self.company, rng.randrange(40))}">Slack</a>.</p>'
        )
        items = "".join(f"<li>{sentence()}</li>" for _ in range(rng.randrange(2, 5)))
        parts.append(f"<ul>{items}</ul>")
        if rng.randrange(3) == 0:
            parts.append(
                "<table><tbody><tr><th>Owner</th><th>Due</th></tr>"
                f"<tr><td>{self.user(rng.randrange(20))['displayName']}</td>"
                f"<td>2025-0{1 + rng.randrange(9)}-1{rng.randrange(9)}</td></tr>"
                "</tbody></table>"
            )
        if rng.randrange(4) == 0:
            parts.append(
                '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
                f"<ac:plain-text-body><![CDATA[kubectl rollout restart deploy/{rng.choice(_WORDS)}\n"
                "kubectl get pods]]></ac:plain-text-body></ac:structured-macro>"
            )
        if rng.randrange(4) == 0:
            parts.append(
                f'<p>Fix: <a href="https://gitlab.{self.domain}/platform/api/-/merge_requests/'
                f'{1 + rng.randrange(200)}">'
                'merge request</a> <ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">'
                f"{self._jira(rng)}</ac:parameter></ac:structured-macro></p>"
            )
        return "".join(parts)

    def _title_of(self, i: int) -> str:
        rec = self.overlay.get(i)
        if rec is not None:
            return str(rec["title"])
        rng = random.Random(f"{self.seed}:{i}")
        j = i // len(SPACES)
        topic = _TOPICS[rng.randrange(len(_TOPICS))]
        return f"{SPACES[i % len(SPACES)][1]} home" if j == 0 else f"{topic} {j}"

    def record(self, i: int) -> dict[str, Any]:
        with self.lock:
            rec = self.overlay.get(i)
        return rec if rec is not None else self.generated(i)

    # ------------------------------------------------------------ rights

    def restricted_for(self, i: int) -> dict[str, Any] | None:
        r = self.record(i)["restrictions"]
        return r if isinstance(r, dict) else None

    # ------------------------------------------------------------ listing

    def space_indices(self, s: int) -> Iterator[int]:
        """Live page indices of space ``s`` in id order (generated first, then created)."""
        with self.lock:
            deleted = set(self.deleted)
            created = sorted(k for k in self.overlay if k >= self.n)
        for i in range(s, self.n, len(SPACES)):
            if i not in deleted:
                yield i
        for i in created:
            if i % len(SPACES) == s and i not in deleted:
                yield i

    def slice_space(self, s: int, start: int, limit: int) -> tuple[list[int], bool]:
        """``limit`` live indices of space ``s`` from position ``start``, without walking the prefix."""
        with self.lock:
            gone = sorted(k for k in self.deleted if k < self.n and k % len(SPACES) == s)
            created = sorted(k for k in self.overlay if k >= self.n and k % len(SPACES) == s and k not in self.deleted)
        gen_total = len(range(s, self.n, len(SPACES))) - len(gone)
        out: list[int] = []
        pos = start
        while len(out) < limit and pos < gen_total:
            out.append(_nth_free(s, pos, gone))
            pos += 1
        while len(out) < limit and pos - gen_total < len(created):
            out.append(created[pos - gen_total])
            pos += 1
        return out, pos < gen_total + len(created)

    def visible(self, i: int) -> bool:
        fault = self.faults.for_key(self.page_id(i), serving=False)
        return fault is None or fault.malformed or fault.status not in (403, 404)

    # ------------------------------------------------------------ JSON shapes

    def base_for(self, req: Request) -> str:
        return request_base_url(req) + ("/wiki" if req.path.startswith("/wiki") else "")

    def v1(self, i: int, expand: set[str], base: str, malformed: bool = False) -> dict[str, Any]:
        r = self.record(i)
        pid = r["id"]
        title_path = quote(str(r["title"]).replace(" ", "+"), safe="+")
        out: dict[str, Any] = {
            "id": pid,
            "type": "page",
            "status": r["status"],
            "title": None if malformed else r["title"],
            "macroRenderedOutput": {},
            "extensions": {"position": i},
            "_links": {
                "webui": f"/spaces/{r['space']}/pages/{pid}/{title_path}",
                "editui": f"/pages/resumedraft.action?draftId={pid}",
                "tinyui": f"/x/{base64.urlsafe_b64encode(pid.encode()).decode().rstrip('=')}",
                "self": f"{base}/rest/api/content/{pid}",
                "base": base,
                "context": "/wiki" if base.endswith("/wiki") else "",
            },
        }
        if malformed:
            out["body"] = "<not an object>"
            return out
        if "space" in expand:
            s = [k for k, _ in SPACES].index(r["space"]) if r["space"] in [k for k, _ in SPACES] else 0
            out["space"] = {
                "id": 196613 + s,
                "key": r["space"],
                "name": SPACES[s][1],
                "type": "global",
                "status": "current",
            }
        if "version" in expand:
            out["version"] = {
                "by": self.user(r["editor"]),
                "when": millis_time(r["updated"]),
                "number": r["version"],
                "minorEdit": False,
                "message": "",
            }
        if "history" in expand:
            out["history"] = {
                "latest": True,
                "createdBy": self.user(r["author"]),
                "createdDate": millis_time(r["created"]),
            }
        if "body.storage" in expand:
            out["body"] = {"storage": {"value": r["body"], "representation": "storage"}}
        if "ancestors" in expand:
            chain = self.ancestors(i)
            out["ancestors"] = [
                {"id": self.page_id(a), "type": "page", "status": "current", "title": self._title_of(a)} for a in chain
            ]
        if "metadata.labels" in expand:
            out["metadata"] = {
                "labels": {
                    "results": [
                        {"prefix": "global", "name": lab, "id": str(abs(hash(lab)) % 10**8), "label": lab}
                        for lab in r["labels"]
                    ],
                    "start": 0,
                    "limit": 200,
                    "size": len(r["labels"]),
                }
            }
        if any(e.startswith("restrictions.read") for e in expand):
            out["restrictions"] = {"read": self.restriction_json(i)}
        children: dict[str, Any] = {}
        if any(e.startswith("children.comment") for e in expand):
            children["comment"] = self.comments_json(i, base)
        if "children.attachment" in expand:
            children["attachment"] = self.attachments_json(i, base)
        if children:
            out["children"] = children
        return out

    def ancestors(self, i: int) -> list[int]:
        chain: list[int] = []
        parent = self.record(i)["parent"]
        while parent is not None and len(chain) < 1000:
            chain.append(parent)
            parent = self.record(parent)["parent"]
        chain.reverse()
        return chain

    @staticmethod
    def group_id(name: str) -> str:
        """A Cloud group id (a UUID), stable per name."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"confluence-group:{name}"))

    def group_json(self, name: str) -> dict[str, Any]:
        """A group subject as Cloud sends it: ``id`` always; ``name`` unless the site sends ids only."""
        out: dict[str, Any] = {"type": "group", "id": self.group_id(name)}
        if not self.group_ids_only:
            out["name"] = name
        return out

    def h_group_by_id(self, req: Request) -> Response:
        gid = req.arg("id") or ""
        for name in [*self.groups, *{g for p in self.space_perms.values() for g in p["groups"]}, "confluence-users"]:
            if self.group_id(name) == gid:
                return Response(200, {"type": "group", "name": name, "id": gid})
        return error_response(404, f"No group found with id: {gid}")

    def restriction_json(self, i: int) -> dict[str, Any]:
        r = self.restricted_for(i) or {"users": [], "groups": []}
        users = [self.user_by_email(e) for e in r["users"]]
        groups = [self.group_json(g) for g in r["groups"]]
        return {
            "operation": "read",
            "restrictions": {
                "user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)},
            },
        }

    def comments_json(self, i: int, base: str) -> dict[str, Any]:
        r = self.record(i)
        res = []
        for n, c in enumerate(r["comments"]):
            cid = f"{r['id']}{n:03d}"
            res.append(
                {
                    "id": cid,
                    "type": "comment",
                    "status": "current",
                    "title": f"Re: {r['title']}",
                    "extensions": {"location": "footer"},
                    "history": {
                        "createdBy": self.user(c["author"]),
                        "createdDate": millis_time(c.get("at") or r["created"] + timedelta(minutes=c["minutes"])),
                    },
                    "body": {"storage": {"value": f"<p>{c['text']}</p>", "representation": "storage"}},
                    "_links": {"webui": f"/spaces/{r['space']}/pages/{r['id']}?focusedCommentId={cid}"},
                }
            )
        return {"results": res, "start": 0, "limit": 25, "size": len(res), "_links": {"base": base}}

    def attachments_json(self, i: int, base: str, start: int = 0, limit: int = 25) -> dict[str, Any]:
        """One page of a page's attachments (the ``children.attachment`` expansion is the first 25, as on
        Confluence; ``_links.next`` points at ``child/attachment`` for the rest)."""
        r = self.record(i)
        every = list(enumerate(r["attachments"]))
        res = [self.attachment_json(r, n, a) for n, a in every[start : start + limit]]
        links: dict[str, Any] = {"base": base}
        if start + limit < len(every):
            links["next"] = f"/rest/api/content/{r['id']}/child/attachment?start={start + limit}&limit={limit}"
        return {"results": res, "start": start, "limit": limit, "size": len(res), "_links": links}

    def attachment_json(self, r: dict[str, Any], n: int, a: dict[str, Any]) -> dict[str, Any]:
        """One attachment as v1 ``children.attachment`` / ``child/attachment`` return it."""
        aid = f"att{r['id']}{n:02d}"
        size = len(a["content"]) if isinstance(a.get("content"), bytes) else a["size"]
        if a["media"] == "application/pdf" and a.get("content") is None:
            size = len(self.attachment_body(r, a))
        return {
            "id": aid,
            "type": "attachment",
            "status": "current",
            "title": a["name"],
            "metadata": {"mediaType": a["media"], "comment": ""},
            "extensions": {"mediaType": a["media"], "fileSize": size, "comment": "", "fileId": f"f-{aid}"},
            "container": {"id": str(r["id"]), "type": "page", "title": r["title"]},
            "_links": {
                "webui": f"/pages/viewpageattachments.action?pageId={r['id']}&preview=%2F{r['id']}%2F{a['name']}",
                "download": f"/download/attachments/{r['id']}/{a['name']}?version=1&modificationDate=1&api=v2",
            },
        }

    def attachment_body(self, r: dict[str, Any], a: dict[str, Any]) -> bytes:
        """The file behind ``_links.download``: given content, or generated from the name and size."""
        if isinstance(a.get("content"), bytes):
            return bytes(a["content"])
        if a["media"] == "application/pdf":
            return pdf_document(f"Specification for {r['title']}: latency budget and rollout plan.")
        if a["media"].startswith("text/"):
            line = f"Notes for {r['title']} (page {r['id']}).\n".encode()
            size = int(a["size"])
            return (line * (size // len(line) + 1))[:size]
        return b"\x89PNG\r\n\x1a\n" + bytes(min(int(a["size"]), 4096))

    def v2(self, i: int, base: str) -> dict[str, Any]:
        r = self.record(i)
        s = [k for k, _ in SPACES].index(r["space"])
        return {
            "id": r["id"],
            "status": r["status"],
            "title": r["title"],
            "spaceId": str(196613 + s),
            "parentId": self.page_id(r["parent"]) if r["parent"] is not None else None,
            "parentType": "page" if r["parent"] is not None else None,
            "position": i,
            "authorId": self.user(r["author"])["accountId"],
            "ownerId": self.user(r["author"])["accountId"],
            "createdAt": millis_time(r["created"]),
            "version": {
                "createdAt": millis_time(r["updated"]),
                "number": r["version"],
                "minorEdit": False,
                "authorId": self.user(r["editor"])["accountId"],
                "message": "",
            },
            "_links": {"webui": f"/spaces/{r['space']}/pages/{r['id']}", "tinyui": f"/x/{r['id']}"},
        }

    # ------------------------------------------------------------ routes

    def _routes_api(self) -> None:
        w = r"(?:/wiki)?"
        self.route("GET", r"/wiki/api/v2/spaces")(self.h_v2_spaces)
        self.route("GET", r"/wiki/api/v2/pages")(self.h_v2_pages)
        self.route("GET", r"/wiki/api/v2/spaces/(?P<sid>\d+)/pages")(self.h_v2_pages)
        self.route("GET", r"/wiki/api/v2/spaces/(?P<sid>\d+)/blogposts")(self.h_v2_blogposts)
        self.route("GET", w + r"/rest/api/space")(self.h_spaces)
        self.route("GET", w + r"/rest/api/space/(?P<key>[^/]+)")(self.h_space)
        self.route("GET", w + r"/rest/api/content")(self.h_contents)
        self.route("GET", w + r"/rest/api/content/search")(self.h_search)
        self.route("GET", w + r"/rest/api/content/(?P<id>\d+)")(self.h_content)
        self.route("GET", w + r"/rest/api/content/(?P<id>\d+)/restriction/byOperation/read")(self.h_restriction)
        self.route("GET", w + r"/rest/api/content/(?P<id>\d+)/child/comment")(self.h_child_comment)
        self.route("GET", w + r"/rest/api/content/(?P<id>\d+)/child/attachment")(self.h_child_attachment)
        self.route("GET", w + r"/download/attachments/(?P<id>\d+)/(?P<name>[^/?]+)")(self.h_download)
        self.route("GET", w + r"/rest/api/group/by-id")(self.h_group_by_id)
        self.route("GET", w + r"/rest/api/group/(?P<name>[^/]+)/member")(self.h_group_members)
        self.route("GET", w + r"/rest/api/user/current")(self.h_current_user)
        self.route("GET", r"/_emulator/pages")(self.c_list)
        self.route("POST", r"/_emulator/pages")(self.c_create)
        self.route("PATCH", r"/_emulator/pages/(?P<id>\d+)")(self.c_update)
        self.route("POST", r"/_emulator/pages/(?P<id>\d+)/comments")(self.c_comment)
        self.route("POST", r"/_emulator/pages/(?P<id>\d+)/attachments")(self.c_attachment)
        self.route("PATCH", r"/_emulator/blogposts/(?P<id>\d+)")(self.c_blog_update)
        self.route("DELETE", r"/_emulator/pages/(?P<id>\d+)")(self.c_delete)
        self.route("PUT", r"/_emulator/spaces/(?P<key>[^/]+)/permissions")(self.c_space_perms)
        self.route("PUT", r"/_emulator/groups/(?P<name>[^/]+)")(self.c_group)
        self.route("POST", r"/_emulator/webhooks/send")(self.c_webhook)

    def _by_id(self, req: Request) -> tuple[int | None, Response | None]:
        pid = req.params["id"]
        fault = self.faults.for_key(pid)
        if fault is not None and fault.status is not None:
            return None, error_response(fault.status, f"injected {fault.status} for page {pid}")
        i = self.index_of(pid)
        if i is None:
            return None, error_response(404, f"No content found with id: {pid}")
        return i, None

    # ------------------------------------------------------------ blog posts

    def blog(self, k: int, base: str) -> dict[str, Any]:
        """Blog post ``k`` (space ``k % 4``) in the v1 shape with the client's expansions."""
        key, name = SPACES[k % len(SPACES)]
        bid = str(900000 + k)
        author, day = self.user(k + 3), datetime(2025, 5, 1 + k % 28, 9, 30, tzinfo=UTC)
        title = f"{name} weekly notes {k + 1}"
        with self.lock:
            edit = dict(self.blog_edits.get(k) or {})
        body = (
            f"<h2>{title}</h2><p>This week the {name} team shipped the search facets and "
            f"closed {self.jira_project}-{1 + k % self.jira_issues}.</p>"
            "<p><ac:placeholder>Add a summary</ac:placeholder></p>"
        )
        when = (edit.get("updated") or day).isoformat().replace("+00:00", "Z")
        return {
            "id": bid,
            "type": "blogpost",
            "status": "current",
            "title": edit.get("title", title),
            "space": {"id": 196613 + k % len(SPACES), "key": key, "name": name, "type": "global"},
            "history": {"latest": True, "createdBy": author, "createdDate": day.isoformat().replace("+00:00", "Z")},
            "version": {"number": int(edit.get("version", 1)), "when": when, "by": author},
            "ancestors": [],
            "body": {"storage": {"representation": "storage", "value": edit.get("body", body)}},
            "metadata": {"labels": {"results": [{"prefix": "global", "name": "weekly", "id": str(7000 + k)}]}},
            "restrictions": {"read": {"restrictions": {"user": {"results": []}, "group": {"results": []}}}},
            "_links": {
                "webui": f"/spaces/{key}/blog/{day:%Y/%m/%d}/{bid}/{quote(title.replace(' ', '+'), safe='+')}",
                "self": f"{base}/rest/api/content/{bid}",
            },
        }

    def _blog_index(self, bid: str) -> int | None:
        if bid.isdigit() and 900000 <= int(bid) < 900000 + self.blog_posts * len(SPACES):
            return int(bid) - 900000
        return None

    def _blogs_of(self, s: int) -> list[int]:
        return [k for k in range(self.blog_posts * len(SPACES)) if k % len(SPACES) == s]

    def h_v2_blogposts(self, req: Request) -> Response:
        s = int(req.params["sid"]) - 196613
        if not 0 <= s < len(SPACES):
            return error_response(404, "space not found")
        base = self.base_for(req)
        res = []
        for k in self._blogs_of(s):
            b = self.blog(k, base)
            res.append(
                {
                    "id": b["id"],
                    "status": "current",
                    "title": b["title"],
                    "spaceId": str(196613 + s),
                    "authorId": b["history"]["createdBy"]["accountId"],
                    "createdAt": b["history"]["createdDate"],
                    "version": {"number": 1, "createdAt": b["version"]["when"]},
                    "_links": {"webui": b["_links"]["webui"]},
                }
            )
        return Response(200, {"results": res, "_links": {"base": base}})

    def h_content(self, req: Request) -> Response:
        pid = req.params["id"]
        blog = self._blog_index(pid)
        if blog is not None:
            return Response(200, self.blog(blog, self.base_for(req)))
        fault = self.faults.for_key(pid)
        if fault is not None and fault.status is not None:
            return error_response(fault.status, f"injected {fault.status} for page {pid}")
        i = self.index_of(pid)
        if i is None:
            return error_response(404, f"No content found with id: {pid}")
        expand = set((req.arg("expand") or "").split(","))
        return Response(200, self.v1(i, expand, self.base_for(req), malformed=bool(fault and fault.malformed)))

    def h_download(self, req: Request) -> Response:
        i, err = self._by_id(req)
        if err is not None:
            return err
        r = self.record(i or 0)
        for a in r["attachments"]:
            if a["name"] == req.params["name"]:
                return Response(200, self.attachment_body(r, a), {"Content-Type": a["media"]})
        return error_response(404, "attachment not found")

    def h_restriction(self, req: Request) -> Response:
        i, err = self._by_id(req)
        return err or Response(200, self.restriction_json(i or 0))

    def h_child_comment(self, req: Request) -> Response:
        i, err = self._by_id(req)
        return err or Response(200, self.comments_json(i or 0, self.base_for(req)))

    def h_child_attachment(self, req: Request) -> Response:
        i, err = self._by_id(req)
        start, limit = int(req.arg("start") or 0), max(1, min(int(req.arg("limit") or 25), 100))
        return err or Response(200, self.attachments_json(i or 0, self.base_for(req), start, limit))

    def h_v2_spaces(self, req: Request) -> Response:
        res = [
            {"id": str(196613 + s), "key": k, "name": n, "type": "global", "status": "current"}
            for s, (k, n) in enumerate(SPACES)
        ]
        return Response(200, {"results": res, "_links": {"base": self.base_for(req)}})

    def h_v2_pages(self, req: Request) -> Response:
        limit = max(1, min(int(req.arg("limit") or 25), 250))
        sid = req.params.get("sid") or req.arg("space-id")
        spaces = [int(x) - 196613 for x in sid.split(",")] if sid else list(range(len(SPACES)))
        if any(not 0 <= s < len(SPACES) for s in spaces):
            return error_response(404, "space not found")
        # The cursor encodes (space position, offset inside the space).
        pos = _decode_cursor(req.arg("cursor"))
        sp, off = divmod(pos, 10**9)
        base = self.base_for(req)
        results: list[dict[str, Any]] = []
        more = False
        while sp < len(spaces) and len(results) < limit:
            idx, more_here = self.slice_space(spaces[sp], off, limit - len(results))
            results += [self.v2(i, base) for i in idx if self.visible(i)]
            off += len(idx)
            if not more_here:
                sp, off = sp + 1, 0
            more = sp < len(spaces)
        links: dict[str, Any] = {"base": base}
        if more:
            path = req.path
            links["next"] = f"{path}?limit={limit}&cursor={_encode_cursor(sp * 10**9 + off)}" + (
                f"&space-id={sid}" if sid and "sid" not in req.params else ""
            )
        return Response(200, {"results": results, "_links": links})

    def h_spaces(self, req: Request) -> Response:
        start, limit = int(req.arg("start") or 0), max(1, min(int(req.arg("limit") or 25), 100))
        res = [
            {
                "id": 196613 + s,
                "key": k,
                "name": n,
                "type": "global",
                "status": "current",
                "_links": {"webui": f"/spaces/{k}"},
            }
            for s, (k, n) in enumerate(SPACES)
            if k not in self.invisible_spaces
        ][start : start + limit]
        return Response(
            200,
            {
                "results": res,
                "start": start,
                "limit": limit,
                "size": len(res),
                "_links": {"base": self.base_for(req)},
            },
        )

    def h_space(self, req: Request) -> Response:
        key = req.params["key"]
        keys = [k for k, _ in SPACES]
        if key not in keys:
            return error_response(404, f"No space with key : {key}")
        s = keys.index(key)
        out: dict[str, Any] = {
            "id": 196613 + s,
            "key": key,
            "name": SPACES[s][1],
            "type": "global",
            "status": "current",
        }
        if "permissions" in (req.arg("expand") or ""):
            perms = self.space_perms[key]
            out["permissions"] = [
                {
                    "operation": {"operation": "read", "targetType": "space"},
                    "anonymousAccess": bool(perms.get("anonymous")),
                    "unlicensedAccess": False,
                    "subjects": {
                        "user": {
                            "results": [self.user_by_email(e) for e in perms["users"]],
                            "size": len(perms["users"]),
                        },
                        "group": {
                            "results": [self.group_json(g) for g in perms["groups"]],
                            "size": len(perms["groups"]),
                        },
                    },
                },
                {
                    "operation": {"operation": "administer", "targetType": "space"},
                    "subjects": {"group": {"results": [self.group_json("leadership")], "size": 1}},
                },
            ]
        return Response(200, out)

    def h_contents(self, req: Request) -> Response:
        start, limit = int(req.arg("start") or 0), max(1, min(int(req.arg("limit") or 25), 100))
        expand = set((req.arg("expand") or "").split(","))
        key = req.arg("spaceKey")
        title = req.arg("title")
        base = self.base_for(req)
        keys = [k for k, _ in SPACES]
        if title is not None:
            hits = [i for s in range(len(SPACES)) if key in (None, keys[s]) for i in self._title_candidates(s, title)]
            res = [self.v1(i, expand, base) for i in hits if self.visible(i)]
            return Response(
                200, {"results": res, "start": 0, "limit": limit, "size": len(res), "_links": {"base": base}}
            )
        if key is not None and key not in keys:
            return Response(200, {"results": [], "start": start, "limit": limit, "size": 0, "_links": {"base": base}})
        if req.arg("type") == "blogpost":
            blogs = [self.blog(k, base) for k in self._blogs_of(keys.index(key))] if key else []
            page = blogs[start : start + limit]
            envelope = {"base": base, "context": "/wiki" if base.endswith("/wiki") else ""}
            return Response(
                200, {"results": page, "start": start, "limit": limit, "size": len(page), "_links": envelope}
            )
        spaces = [keys.index(key)] if key else list(range(len(SPACES)))
        if len(spaces) != 1:
            return error_response(400, "this emulator lists content per spaceKey")
        idx, more = self.slice_space(spaces[0], start, limit)
        res = [self.v1(i, expand, base) for i in idx if self.visible(i)]
        links: dict[str, Any] = {"base": base, "context": "/wiki" if base.endswith("/wiki") else ""}
        if more:
            links["next"] = f"/rest/api/content?spaceKey={key}&type=page&start={start + len(idx)}&limit={limit}"
        return Response(200, {"results": res, "start": start, "limit": limit, "size": len(res), "_links": links})

    def _title_candidates(self, s: int, title: str) -> list[int]:
        m = re.fullmatch(r".* (\d+)", title)
        found = []
        if m:
            j = int(m.group(1))
            i = j * len(SPACES) + s
            if i < self.n and self.index_of(self.page_id(i)) is not None and self._title_of(i) == title:
                found.append(i)
        elif title == f"{SPACES[s][1]} home" and self.index_of(self.page_id(s)) is not None:
            found.append(s)
        with self.lock:
            found += [
                k
                for k, r in self.overlay.items()
                if r["title"] == title and r["space"] == SPACES[s][0] and k not in found and k not in self.deleted
            ]
        return found

    def h_search(self, req: Request) -> Response:
        cql = req.arg("cql") or ""
        start, limit = int(req.arg("start") or 0), max(1, min(int(req.arg("limit") or 25), 100))
        expand = set((req.arg("expand") or "").split(","))
        base = self.base_for(req)
        try:
            since, spaces, title = self._parse_cql(cql)
        except ValueError as exc:
            return error_response(400, f"Could not parse cql : {cql} ({exc})")
        matches = list(self._search_iter(since, spaces, title))
        anc = re.search(r"ancestor\s*=\s*\"?(\d+)\"?", cql)
        if anc:
            root = self.index_of(anc.group(1))
            matches = [i for i in matches if root is not None and root in self.ancestors(i)]
        # Hits as (kind, index, n): pages, then comments, attachments and blog posts the type list asks for.
        found: list[tuple[str, int, int]] = [("page", i, 0) for i in matches]
        if re.search(r"type\s+in\s*\([^)]*\bcomment\b", cql):
            found.extend(("comment", i, n) for i, n in self._log_matches(self.comment_log, since, spaces))
        if re.search(r"type\s+in\s*\([^)]*\battachment\b", cql):
            found.extend(("attachment", i, n) for i, n in self._log_matches(self.attachment_log, since, spaces))
        if re.search(r"type\s+in\s*\([^)]*\bblogpost\b|type\s*=\s*blogpost\b", cql) and not anc:
            found.extend(("blog", k, 0) for k in self._blog_matches(since, spaces))
        page = found[start : start + limit]
        res = [self._hit(kind, i, n, expand, base) for kind, i, n in page if kind == "blog" or self.visible(i)]
        links: dict[str, Any] = {"base": base}
        if start + limit < len(found):
            links["next"] = f"/rest/api/content/search?cql={quote(cql)}&start={start + limit}&limit={limit}"
        return Response(
            200,
            {
                "results": res,
                "start": start,
                "limit": limit,
                "size": len(res),
                "totalSize": len(found),
                "cqlQuery": cql,
                "_links": links,
            },
        )

    def _hit(self, kind: str, i: int, n: int, expand: set[str], base: str) -> dict[str, Any]:
        if kind == "page":
            return self.v1(i, expand, base)
        if kind == "comment":
            return self._comment_hit(i, n, base)
        if kind == "blog":
            return self.blog(i, base)
        r = self.record(i)
        return self.attachment_json(r, n, r["attachments"][n]) | {"space": {"key": r["space"]}}

    def _blog_matches(self, since: datetime | None, spaces: set[str] | None) -> list[int]:
        """Blog posts last modified at or after ``since`` (generated ones date from May 2025)."""
        out = []
        for k in range(self.blog_posts * len(SPACES)):
            if spaces is not None and SPACES[k % len(SPACES)][0] not in spaces:
                continue
            if since is None or self._blog_updated(k) >= since:
                out.append(k)
        return sorted(out, key=self._blog_updated)

    def _blog_updated(self, k: int) -> datetime:
        with self.lock:
            edit = self.blog_edits.get(k)
        return edit["updated"] if edit else datetime(2025, 5, 1 + k % 28, 9, 30, tzinfo=UTC)

    def _log_matches(
        self, entries: list[tuple[datetime, int, int]], since: datetime | None, spaces: set[str] | None
    ) -> list[tuple[int, int]]:
        with self.lock:
            log = sorted(entries)
            deleted = set(self.deleted)
        return [
            (i, n)
            for at, i, n in log
            if i not in deleted
            and (since is None or at >= since)
            and (spaces is None or self.record(i)["space"] in spaces)
        ]

    def _comment_hit(self, i: int, n: int, base: str) -> dict[str, Any]:
        """A comment as CQL search returns it: its id, type and the page it belongs to (``container``)."""
        r = self.record(i)
        return {
            "id": f"{r['id']}{n:03d}",
            "type": "comment",
            "status": "current",
            "title": f"Re: {r['title']}",
            "container": {"id": str(r["id"]), "type": "page", "title": r["title"]},
            "space": {"key": r["space"]},
            "_links": {"webui": f"/spaces/{r['space']}/pages/{r['id']}?focusedCommentId={r['id']}{n:03d}"},
        }

    def _parse_cql(self, cql: str) -> tuple[datetime | None, set[str] | None, str | None]:
        keys = {k for k, _ in SPACES}
        spaces: set[str] | None = None
        since = None
        m = re.search(r'lastmodified\s*>=?\s*"(\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})?)"', cql)
        if m:
            fmt = "%Y-%m-%d %H:%M" if " " in m.group(1) else "%Y-%m-%d"
            since = datetime.strptime(m.group(1), fmt).replace(tzinfo=self.tz).astimezone(UTC)
        m = re.search(r"space\s+(not\s+)?in\s*\(([^)]*)\)", cql)
        if m:
            listed = {x.strip().strip('"') for x in m.group(2).split(",") if x.strip()}
            spaces = keys - listed if m.group(1) else listed & keys
        m = re.search(r'space\s*=\s*"?([A-Za-z0-9~_]+)"?', cql)
        if m:
            spaces = {m.group(1)} & keys
        m = re.search(r'title\s*=\s*"([^"]*)"', cql)
        return since, spaces, m.group(1) if m else None

    def _search_iter(self, since: datetime | None, spaces: set[str] | None, title: str | None) -> Iterator[int]:
        """Matches ordered by last modification (generated pages are monotone in index)."""
        keys = [k for k, _ in SPACES]
        with self.lock:
            over = dict(self.overlay)
            deleted = set(self.deleted)
        lo = 0
        if since is not None:
            behind = (END - since) / STEP
            lo = max(0, self.n - int(behind) - 1)
        for i in range(lo, self.n):
            if i in over or i in deleted:
                continue
            if spaces is not None and keys[i % len(SPACES)] not in spaces:
                continue
            if since is not None and END - (self.n - i) * STEP < since:
                continue
            if title is not None and self._title_of(i) != title:
                continue
            yield i
        for i, r in sorted(over.items(), key=lambda kv: (kv[1]["updated"], kv[0])):
            if i in deleted or (spaces is not None and r["space"] not in spaces):
                continue
            if (since is None or r["updated"] >= since) and (title is None or r["title"] == title):
                yield i

    def h_group_members(self, req: Request) -> Response:
        name = req.params["name"]
        if name not in self.groups:
            return error_response(404, f"group {name} not found")
        start, limit = int(req.arg("start") or 0), max(1, min(int(req.arg("limit") or 200), 200))
        members = self.groups[name][start : start + limit]
        res = [self.user_by_email(e) for e in members]
        links: dict[str, Any] = {}
        if start + limit < len(self.groups[name]):
            links["next"] = f"/rest/api/group/{name}/member?start={start + limit}&limit={limit}"
        return Response(200, {"results": res, "start": start, "limit": limit, "size": len(res), "_links": links})

    def h_current_user(self, req: Request) -> Response:
        return Response(200, {**self.user(0), "timeZone": self.tz_name})

    # ------------------------------------------------------------ control API

    def c_list(self, req: Request) -> Response:
        ids = [self.page_id(i) for s in range(len(SPACES)) for i in self.space_indices(s)]
        return Response(200, {"pages": sorted(ids, key=int), "total": len(ids)})

    def c_create(self, req: Request) -> Response:
        spec = req.json() or {}
        space = spec.get("space", "ENG")
        keys = [k for k, _ in SPACES]
        if space not in keys:
            return error_response(400, "unknown space")
        parent_id = spec.get("parent_id")
        parent = self.index_of(str(parent_id)) if parent_id is not None else None
        with self.lock:
            i = self.next_index
            # keep the "index % 4 == space" rule so per-space listings stay computable
            while i % len(SPACES) != keys.index(space):
                i += 1
            self.next_index = i + 1
            now = datetime.now(UTC)
            self.overlay[i] = {
                "index": i,
                "id": self.page_id(i),
                "space": space,
                "parent": parent,
                "title": spec.get("title", f"New page {i}"),
                "body": spec.get("body", "<p>New page.</p>"),
                "status": spec.get("status", "current"),
                "created": now,
                "updated": now,
                "version": 1,
                "author": 0,
                "editor": 0,
                "labels": list(spec.get("labels", [])),
                "restrictions": spec.get("restrictions"),
                "comments": [],
                "attachments": [],
            }
        return Response(201, {"id": self.page_id(i)})

    def c_update(self, req: Request) -> Response:
        i = self.index_of(req.params["id"])
        if i is None:
            return error_response(404, "no such page")
        spec = req.json() or {}
        with self.lock:
            rec = dict(self.record(i))
            for field in ("title", "body", "status", "labels"):
                if field in spec:
                    rec[field] = spec[field]
            if "restrictions" in spec:
                rec["restrictions"] = spec["restrictions"]
            rec["updated"] = datetime.now(UTC)
            rec["version"] = int(rec["version"]) + 1
            self.overlay[i] = rec
        return Response(200, {"id": rec["id"], "version": rec["version"]})

    def c_comment(self, req: Request) -> Response:
        """Add a footer comment ``{"text"}``; the page's own lastmodified and version stay as they were."""
        i = self.index_of(req.params["id"])
        if i is None:
            return error_response(404, "no such page")
        spec = req.json() or {}
        now = datetime.now(UTC)
        with self.lock:
            rec = dict(self.record(i))
            comments = [*rec["comments"], {"author": 0, "text": str(spec.get("text") or ""), "minutes": 0, "at": now}]
            rec["comments"] = comments
            self.overlay[i] = rec
            self.comment_log.append((now, i, len(comments) - 1))
        return Response(201, {"id": f"{rec['id']}{len(comments) - 1:03d}"})

    def c_blog_update(self, req: Request) -> Response:
        """Edit a blog post ``{"title"?, "body"?}``: its version and lastmodified move, as Confluence's do."""
        k = self._blog_index(req.params["id"])
        if k is None:
            return error_response(404, "no such blog post")
        spec = req.json() or {}
        with self.lock:
            edit = dict(self.blog_edits.get(k) or {"version": 1})
            edit.update({f: spec[f] for f in ("title", "body") if f in spec})
            edit["updated"] = datetime.now(UTC)
            edit["version"] = int(edit["version"]) + 1
            self.blog_edits[k] = edit
        return Response(200, {"id": req.params["id"], "version": edit["version"]})

    def c_attachment(self, req: Request) -> Response:
        """Attach a file ``{"name", "media", "text"? | "pdf_text"? | "size"?}`` (``size`` alone: that many
        bytes of filler). Like a comment it leaves the page's lastmodified alone; CQL
        ``type in (..., attachment)`` finds it with its page as ``container``."""
        i = self.index_of(req.params["id"])
        if i is None:
            return error_response(404, "no such page")
        spec = req.json() or {}
        if "pdf_text" in spec:
            content = pdf_document(str(spec["pdf_text"]))
        elif "text" in spec:
            content = str(spec["text"]).encode()
        else:
            content = b"x" * int(spec.get("size") or 0)
        now = datetime.now(UTC)
        with self.lock:
            rec = dict(self.record(i))
            att = {"name": str(spec.get("name") or "file.txt"), "media": str(spec.get("media") or "text/plain")}
            rec["attachments"] = [*rec["attachments"], {**att, "size": len(content), "content": content, "at": now}]
            self.overlay[i] = rec
            self.attachment_log.append((now, i, len(rec["attachments"]) - 1))
        return Response(201, {"id": f"att{rec['id']}{len(rec['attachments']) - 1:02d}"})

    def c_delete(self, req: Request) -> Response:
        i = self.index_of(req.params["id"])
        if i is None:
            return error_response(404, "no such page")
        with self.lock:
            self.deleted.add(i)
        return Response(204)

    def c_space_perms(self, req: Request) -> Response:
        key = req.params["key"]
        if key not in self.space_perms:
            return error_response(404, "no such space")
        spec = req.json() or {}
        with self.lock:
            self.space_perms[key] = {
                "users": list(spec.get("users", [])),
                "groups": list(spec.get("groups", [])),
                "anonymous": bool(spec.get("anonymous", False)),
            }
        return Response(200, self.space_perms[key])

    def c_group(self, req: Request) -> Response:
        spec = req.json() or {}
        with self.lock:
            self.groups[req.params["name"]] = list(spec.get("members", []))
        return Response(200, {"members": self.groups[req.params["name"]]})

    def c_webhook(self, req: Request) -> Response:
        spec = req.json() or {}
        url, secret, event = spec.get("url"), spec.get("secret"), spec.get("event", "page_updated")
        pid = str(spec.get("page_id", ""))
        if not url or not secret:
            return error_response(400, "url and secret are required")
        i = int(pid) - FIRST_ID if pid.isdigit() else -1
        title, space = (None, None)
        if 0 <= i < self.next_index and (i < self.n or i in self.overlay):
            rec = self.record(i)
            title, space = rec["title"], rec["space"]
        delivery = f"conf-{self.seed}-{self.next_delivery()}"
        body = json.dumps(
            {
                "event": event,
                "timestamp": int(datetime.now(UTC).timestamp() * 1000),
                "userAccountId": self.user(0)["accountId"],
                "page": {"id": pid, "spaceKey": space, "title": title, "contentType": "page"},
            }
        ).encode()
        status = send_atlassian_webhook(url, body, secret, delivery)
        return Response(200, {"status": status, "delivery_id": delivery})


def _nth_free(s: int, pos: int, gone: list[int]) -> int:
    """The ``pos``-th index ``≡ s (mod 4)`` not in sorted ``gone`` (all ``≡ s``)."""
    x = s + pos * len(SPACES)
    while True:
        k = bisect.bisect_right(gone, x)
        target = s + (pos + k) * len(SPACES)
        if target == x and (k == 0 or gone[k - 1] != x):
            return x
        x = target


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--company", default="demo", help="seeds names, e-mail domain and cross-links")
    parser.add_argument("--time-zone", default="UTC", help="the API user's zone CQL dates are read in")
    parser.add_argument("--jira-project", default="DEMO")
    parser.add_argument("--jira-issues", type=int, default=40)


def _build(ns: argparse.Namespace) -> EmulatorApp:
    return ConfluenceEmulator(
        pages=ns.pages,
        seed=ns.seed,
        token=ns.token,
        company=ns.company,
        time_zone=ns.time_zone,
        jira_project=ns.jira_project,
        jira_issues=ns.jira_issues,
    )


if __name__ == "__main__":
    main_cli(_build, _add_args, description="Confluence emulator (Cloud v2/v1 under /wiki, Server v1)")
