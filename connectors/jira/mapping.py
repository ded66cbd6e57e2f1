"""Jira issue (REST v2 or v3 payload) -> Entity. Pure; raises MalformedPayload.

Seed 003 "Зеркало задачи" fields land in ``Entity.metadata`` under these names (JSON-safe; dates as
ISO strings in UTC, date-only fields as ``YYYY-MM-DD``): ``key``, ``id``, ``issue_type``, ``summary``,
``description`` (clean text, from ADF or wiki), ``status``, ``status_category``, ``priority``,
``assignee``, ``reporter``, ``due_date``, ``planned_start``, ``planned_end``, ``epic_key``,
``labels``, ``sprint`` (+ ``sprints``), ``updated``, ``created``; plus ``project``, ``parent_key``,
``resolution``, ``resolved``, ``components``, ``fix_versions``, ``affects_versions``,
``security_level``, ``environment``, ``attachments``, ``comment_count``, ``subtasks``, ``votes``,
``watchers``, ``time_tracking``, ``neighbour``.

Context keys the client provides (all optional):

- ``field_map``: ``{"sprint", "epic_link", "epic_name", "planned_start", "planned_end"}`` -> field id,
  learned from ``/rest/api/N/field``. Without it, custom fields are recognised by shape.
- ``project_principals``: principals with Browse Projects on the issue's project (list of str);
  ``security_principals``: members of the issue's security level. ACL rule: no security level ->
  project principals; a level -> principals present in both lists (a level only narrows; Jira
  requires browse permission *and* level membership). Missing facts -> ``Acl(None)`` (fail closed).
- ``neighbour``: fetched one hop outside the scope -> ``out_of_scope``.
- ``attachment_texts``: ``{attachment id: text}`` for text and PDF attachments the client read;
  ``attachment_reasons``: ``{attachment id: why it stays a link}`` (kept as ``text_skipped``).
- ``previous_keys``: keys the issue had before a move (also read from an expanded changelog).
- ``archived``: the issue is archived (Cloud also sends ``fields.archiveddate``).
- ``key_ids``: ``{issue key: issue id}`` for the epic link, which the payload names by key only.

Status (seed 000: the content's lifecycle in the source, not its workflow): a published issue is
``final`` whatever its workflow state (To Do, In Progress, Done, resolved); ``archived`` only when
the source says the issue is archived. Jira has no unpublished issues, so it never yields ``draft``.

Edges (seed 003 "Загрузка состояния заменяет связи"): for every ``issuelinks`` entry with an
``outwardIssue`` Y, this issue declares ``Edge(<outward name, e.g. "blocks">, Y)``; an entry with an
``inwardIssue`` Z declares nothing here — Z declares it when Z is loaded. ``parent`` -> ``parent``
edge; epic link -> ``epic`` edge (a ``Ref(relation="epic")`` when the epic's id is unknown).

Refs: cross-source mentions in description, environment and comments (connectors.refs). Keys of this
Jira that are already edges are not repeated as refs; other keys stay refs with hint ``jira``.

Text: ``Entity.sections`` are the blocks of ``Entity.text`` in order (summary+description, each
comment, each inlined attachment); ``text == "\\n\\n".join(sections)``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from connectors.base import Acl, Edge, Entity, EntityStatus, MalformedPayload, RawItem, Ref
from connectors.jira.context import JiraItemContext
from connectors.jira.permissions import Grants, for_issue, mention_token, narrow, user_tokens
from connectors.jira.text import mention_targets, to_text
from connectors.memo import PerContainer
from connectors.payload import JSON_OBJECT
from connectors.payload import obj as _obj
from connectors.refs import dedup, extract_refs
from connectors.timeutil import iso_utc, parse_time

_SPRINT_STRING_RE = re.compile(r"com\.atlassian\.greenhopper\.service\.sprint\.Sprint@\w+\[(.*)\]")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KEY_RE = re.compile(r"^[A-Z][A-Z0-9_]+-\d+$")

# Jira Cloud's default ids for the agile fields (go-atlassian captures); used only when no field map.
_DEFAULT_FIELDS = {
    "epic_link": "customfield_10014",
    "epic_name": "customfield_10011",
    "planned_start": "customfield_10015",
}


def map_item(raw: RawItem) -> Entity:
    payload = raw.payload
    # Another connector's context (or none) carries no Jira facts: the ACL then fails closed.
    ctx = raw.context if isinstance(raw.context, JiraItemContext) else JiraItemContext()
    issue_id = payload.get("id")
    key = payload.get("key")
    fields = payload.get("fields")
    if not isinstance(issue_id, str | int) or not str(issue_id) or not isinstance(key, str) or not key:
        raise MalformedPayload("issue without id or key")
    if not isinstance(fields, JSON_OBJECT):
        raise MalformedPayload(f"issue {key} without fields")
    issue_id = str(issue_id)
    fmap = _field_map(fields, ctx)

    summary = _s(fields.get("summary")) or ""
    description = to_text(fields.get("description"))
    environment = to_text(fields.get("environment"))
    status = _obj(fields.get("status"))
    category = _s(_obj(status.get("statusCategory")).get("key"))
    project = _obj(fields.get("project"))
    project_key = _s(project.get("key")) or key.rsplit("-", 1)[0]
    archived = ctx.archived or bool(fields.get("archiveddate"))

    comments = _comments(fields.get("comment"))
    attachments, attachment_sections = _attachments(
        fields.get("attachment"), ctx.attachment_texts, ctx.attachment_reasons
    )

    head = f"{key}: {summary}" if summary else key
    sections = [head + (f"\n\n{description}" if description else "")]
    if environment:
        sections.append(f"Environment: {environment}")
    for c in comments:
        if c["text"]:
            sections.append(f"Comment by {c['author'] or 'unknown'} at {c['created'] or '?'}:\n{c['text']}")
    sections.extend(attachment_sections)

    parent = _obj(fields.get("parent"))
    parent_key = _s(parent.get("key"))
    epic_key = _epic_key(fields, fmap, parent)
    sprints = _sprints(fields.get(fmap["sprint"]) if fmap.get("sprint") else _find_sprint_field(fields))

    edges, linked_keys = _edges(fields.get("issuelinks"), parent, epic_key, ctx.key_ids)
    refs = _refs("\n\n".join([description, environment, *(c["text"] for c in comments)]), key, linked_keys)
    if epic_key and not any(e.relation == "epic" for e in edges):
        refs = dedup([Ref("epic", "issue", epic_key, "jira"), *refs])

    reporter = _user(fields.get("reporter"))
    assignee = _user(fields.get("assignee"))
    creator = _user(fields.get("creator"))
    created = parse_time(fields.get("created"))
    updated = parse_time(fields.get("updated"))
    security = _obj(fields.get("security"))

    # Each person's identities once: the metadata lists them, and the directory that resolves mentions
    # starts from them.
    identities = {role: user_tokens(fields.get(role)) for role in _ROLES}
    mentioned = [fields.get("description"), fields.get("environment")]
    mentioned += [c.get("body") for c in _comment_items(fields.get("comment"))]
    targets = [target for value in mentioned for target in mention_targets(value)]
    # The directory of the payload's people only when someone is mentioned (decision 120).
    people = _directory(fields, identities) if targets else {}
    mentions = sorted({t for target in targets for t in _person(target, people)})

    metadata: dict[str, Any] = {
        "key": key,
        "id": issue_id,
        "issue_type": _s(_obj(fields.get("issuetype")).get("name")),
        "issue_type_id": _s(_obj(fields.get("issuetype")).get("id")),
        "status_id": _s(status.get("id")),
        "status_category_name": _s(_obj(status.get("statusCategory")).get("name")),
        "priority_id": _s(_obj(fields.get("priority")).get("id")),
        "subtask": bool(_obj(fields.get("issuetype")).get("subtask", False)),
        "summary": summary,
        "description": description,
        "status": _s(status.get("name")),
        "status_category": category,
        "priority": _s(_obj(fields.get("priority")).get("name")),
        "assignee": assignee["id"],
        "assignee_name": assignee["name"],
        "reporter": reporter["id"],
        "reporter_name": reporter["name"],
        "creator": creator["id"],
        "creator_name": creator["name"],
        # Every identity the source gives for each person (issue 13, item 2), as ACL tokens: e-mail
        # (lower-case), Cloud account id, Server user name; mentions resolved to the same tokens.
        "reporter_identities": identities["reporter"],
        "assignee_identities": identities["assignee"],
        "creator_identities": identities["creator"],
        "mentions": mentions,
        "due_date": _date(fields.get("duedate")),
        "planned_start": _date(fields.get(fmap["planned_start"])) if fmap.get("planned_start") else None,
        "planned_end": _date(fields.get(fmap["planned_end"])) if fmap.get("planned_end") else None,
        "epic_key": epic_key,
        "epic_name": _s(fields.get(fmap["epic_name"])) if fmap.get("epic_name") else None,
        "parent_key": parent_key,
        "labels": [str(x) for x in _list(fields.get("labels")) if x is not None],
        "sprint": _current_sprint(sprints),
        "sprints": sprints,
        "created": iso_utc(created),
        "updated": iso_utc(updated),
        "project": {
            "key": project_key,
            "name": _s(project.get("name")),
            "id": _s(project.get("id")),
            "type": _s(project.get("projectTypeKey")),
            "category": _s(_obj(project.get("projectCategory")).get("name")),
        },
        "resolution": _s(_obj(fields.get("resolution")).get("name")),
        "resolved": iso_utc(parse_time(fields.get("resolutiondate"))),
        "components": _names(fields.get("components")),
        "fix_versions": _names(fields.get("fixVersions")),
        "affects_versions": _names(fields.get("versions")),
        "security_level": _s(security.get("name")),
        "environment": environment or None,
        "attachments": attachments,
        "comment_count": len(comments),
        # Comments and work logged as units (issue 13, item 3): who, when, edited when, visible to whom.
        "comments": [{k: v for k, v in c.items() if k != "text" and v is not None} for c in comments],
        "worklogs": _worklogs(fields.get("worklog")),
        "links": _links(fields.get("issuelinks")),
        "subtasks": [s for s in (_s(_obj(t).get("key")) for t in _list(fields.get("subtasks"))) if s],
        "votes": _obj(fields.get("votes")).get("votes"),
        "watchers": _obj(fields.get("watches")).get("watchCount"),
        "time_tracking": _time_tracking(fields),
        "status_changed": iso_utc(parse_time(fields.get("statuscategorychangedate"))),
        "custom_fields": _custom_fields(fields, fmap),
        "archived": archived,
        "neighbour": ctx.neighbour,
    }
    return Entity(
        source_type="ticket",
        source_entity_id=issue_id,
        status=_classify(category, archived),
        title=summary or key,
        text="\n\n".join(sections),
        url=_browse_url(payload, key),
        author=reporter["id"] or creator["id"],
        created_at=created,
        updated_at=updated,
        acl=_acl(ctx, fields),
        metadata=metadata,
        natural_key=key,
        container=project_key,
        edges=edges,
        refs=refs,
        aliases=_aliases(payload, ctx, key),
        out_of_scope=ctx.neighbour,
        sections=tuple(sections),
    )


# ---------------------------------------------------------------- pieces


def _classify(category: str | None, archived: bool) -> EntityStatus:
    # ``category`` (the workflow state) is deliberately not consulted: see the module docstring.
    del category
    return "archived" if archived else "final"


def _acl(ctx: JiraItemContext, fields: Mapping[str, Any]) -> Acl:
    """Browse Projects (static holders + the issue's own reporter/assignee/picker holders), narrowed by
    the security level when the issue has one. A ``security`` value that is not an object with an id
    is an unknown level: fail closed, never "no level"."""
    project = ctx.project_principals
    if not isinstance(project, Sequence) or isinstance(project, str):
        return Acl(None)
    holders = tuple(ctx.project_fields)
    security = fields.get("security")
    if not holders:
        # The project's grant alone, the same for every issue of the project: built once per grant (a role
        # can list thousands of people), not sorted again for each issue.
        if security is None:
            return Acl(_grant_acl(project))  # most issues
        principals: Collection[str] = _grant_set(project)  # narrowed below at O(the level)
    else:
        principals = for_issue(Grants(tuple(str(p) for p in project), holders), fields)
    if security is not None:
        level = ctx.security_principals
        if not isinstance(security, JSON_OBJECT) or not security.get("id"):
            return Acl(None)
        if not isinstance(level, Sequence) or isinstance(level, str):
            return Acl(None)
        members = for_issue(Grants(tuple(str(p) for p in level), tuple(ctx.security_fields)), fields)
        principals = narrow(principals, members)
    return Acl(tuple(sorted(set(principals))))


def _grant_tokens(project: Iterable[Any]) -> tuple[str, ...]:
    """A project's grant as an ACL: each token once, sorted."""
    return tuple(sorted({str(p) for p in project}))


def _grant_members(project: Iterable[Any]) -> frozenset[str]:
    """A project's grant as a set, for narrowing by a security level."""
    return frozenset(str(p) for p in project)


_grant_acl = PerContainer(_grant_tokens)  # the client shares one grant tuple per project
_grant_set = PerContainer(_grant_members)


def _field_map(fields: Mapping[str, Any], ctx: JiraItemContext) -> dict[str, str]:
    given = ctx.field_map
    if isinstance(given, JSON_OBJECT):
        return {str(k): str(v) for k, v in given.items() if v}
    fmap = {k: v for k, v in _DEFAULT_FIELDS.items() if k != "planned_start" or _date(fields.get(v))}
    if not _KEY_RE.match(str(fields.get(fmap["epic_link"]) or "")):
        fmap.pop("epic_link")
    if not isinstance(fields.get(fmap["epic_name"]), str):
        fmap.pop("epic_name")
    return fmap


def _find_sprint_field(fields: Mapping[str, Any]) -> Any:
    """Without a field map, the sprint field is the custom field shaped like a sprint list."""
    for name, value in fields.items():
        if not name.startswith("customfield_") or not isinstance(value, list) or not value:
            continue
        first = value[0]
        if isinstance(first, JSON_OBJECT) and "boardId" in first and "name" in first:
            return value
        if isinstance(first, str) and _SPRINT_STRING_RE.search(first):
            return value
    return None


def _sprints(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in _list(value):
        if isinstance(item, JSON_OBJECT):
            sprint = {"id": item.get("id"), "name": _s(item.get("name")), "state": _s(item.get("state"))}
            extra = {
                "board_id": item.get("boardId") if isinstance(item.get("boardId"), int) else None,
                "goal": _s(item.get("goal")),
                "start": iso_utc(parse_time(item.get("startDate"))),
                "end": iso_utc(parse_time(item.get("endDate"))),
                "completed": iso_utc(parse_time(item.get("completeDate"))),
            }
            out.append({**sprint, **{k: v for k, v in extra.items() if v is not None}})
        elif isinstance(item, str):
            m = _SPRINT_STRING_RE.search(item)
            if m:
                attrs = dict(p.split("=", 1) for p in m.group(1).split(",") if "=" in p)
                sid = attrs.get("id")
                out.append(
                    {
                        "id": int(sid) if sid and sid.isdigit() else sid,
                        "name": attrs.get("name"),
                        "state": (attrs.get("state") or "").lower() or None,
                    }
                )
    return out


def _current_sprint(sprints: list[dict[str, Any]]) -> str | None:
    for s in sprints:
        if s.get("state") == "active":
            return str(s.get("name"))
    return str(sprints[-1].get("name")) if sprints else None


def _epic_key(fields: Mapping[str, Any], fmap: Mapping[str, str], parent: Mapping[str, Any]) -> str | None:
    link = fields.get(fmap["epic_link"]) if fmap.get("epic_link") else None
    if isinstance(link, str) and link:
        return link
    if isinstance(link, JSON_OBJECT) and link.get("key"):
        return str(link["key"])
    # Team-managed (and newer company-managed) projects: the epic is the parent.
    ptype = _obj(_obj(parent.get("fields")).get("issuetype"))
    if parent.get("key") and (ptype.get("name") == "Epic" or ptype.get("hierarchyLevel") == 1):
        return str(parent["key"])
    return None


def _edges(
    links: Any, parent: Mapping[str, Any], epic_key: str | None, key_ids: Any
) -> tuple[tuple[Edge, ...], set[str]]:
    edges: list[Edge] = []
    keys: set[str] = set()
    for link in _list(links):
        if not isinstance(link, JSON_OBJECT):
            continue
        ltype = _obj(link.get("type"))
        for side in ("outwardIssue", "inwardIssue"):
            other = _obj(link.get(side))
            if other.get("key"):
                keys.add(str(other["key"]))
        out = _obj(link.get("outwardIssue"))
        if out.get("id"):
            relation = (_s(ltype.get("outward")) or _s(ltype.get("name")) or "relates").lower()
            edges.append(Edge(relation, "ticket", str(out["id"]), _s(out.get("key"))))
    if parent.get("id"):
        edges.append(Edge("parent", "ticket", str(parent["id"]), _s(parent.get("key"))))
        if parent.get("key"):
            keys.add(str(parent["key"]))
    if epic_key:
        keys.add(epic_key)
        epic_id = key_ids.get(epic_key) if isinstance(key_ids, JSON_OBJECT) else None
        if epic_key == parent.get("key") and parent.get("id"):
            epic_id = parent["id"]
        if epic_id:
            edges.append(Edge("epic", "ticket", str(epic_id), epic_key))
    unique: dict[tuple[str, str], Edge] = {}
    for e in edges:
        unique.setdefault((e.relation, e.target_id), e)
    return tuple(unique.values()), keys


def _refs(text: str, own_key: str, edge_keys: set[str]) -> tuple[Ref, ...]:
    refs = extract_refs(text, mention_hint="jira")
    known = edge_keys | {own_key}
    return tuple(
        r for r in refs if not (r.source_hint == "jira" and r.target_kind == "issue" and r.target_ref in known)
    )


def _comment_items(value: Any) -> list[Mapping[str, Any]]:
    # Search/get-issue give {"comments": [...], "total": n}; some docs examples give a bare list.
    items = value.get("comments") if isinstance(value, JSON_OBJECT) else value
    return [c for c in items if isinstance(c, JSON_OBJECT)] if isinstance(items, list) else []


_ROLES = ("reporter", "assignee", "creator")


def _directory(fields: Mapping[str, Any], identities: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Account id / user name -> every token of that person, from the users the payload shows
    (``identities``: the tokens of the issue's own people, by role, already made)."""
    users: list[tuple[Any, list[str]]] = [(fields.get(role), identities[role]) for role in _ROLES]
    for c in _comment_items(fields.get("comment")):
        author, editor = c.get("author"), c.get("updateAuthor")
        users += [(author, user_tokens(author)), (editor, user_tokens(editor))]
    people: dict[str, list[str]] = {}
    for user, tokens in users:
        if not tokens or not isinstance(user, JSON_OBJECT):
            continue
        for ident in (user.get("accountId"), user.get("name")):
            if isinstance(ident, str) and ident:
                people[ident.lower()] = tokens
    return people


def _person(target: str, people: Mapping[str, list[str]]) -> list[str]:
    """A mention target (``accountid:X``, an account id or a user name) -> that person's tokens."""
    bare = target.split(":", 1)[1] if target.lower().startswith("accountid:") else target
    return sorted({mention_token(target), *people.get(bare.lower(), [])})


def _comments(value: Any) -> list[dict[str, Any]]:
    out = []
    for c in _comment_items(value):
        author = _user(c.get("author"))
        editor = _user(c.get("updateAuthor"))
        created = iso_utc(parse_time(c.get("created")))
        updated = iso_utc(parse_time(c.get("updated")))
        visibility = _obj(c.get("visibility"))
        out.append(
            {
                "id": _s(c.get("id")),
                "author": author["id"] or author["name"],
                "author_name": author["name"],
                "created": created,
                "updated": updated if updated != created else None,  # set only when the comment was edited
                "edited_by": (editor["id"] or editor["name"]) if updated != created else None,
                "visibility": _s(visibility.get("value")),  # a group or role that alone may read it
                "public": c.get("jsdPublic") if isinstance(c.get("jsdPublic"), bool) else None,
                "text": to_text(c.get("body")),
            }
        )
    return out


def _worklogs(value: Any) -> list[dict[str, Any]]:
    # Search/get-issue give {"worklogs": [...], "total": n}; some docs examples give a bare list.
    items = value.get("worklogs") if isinstance(value, JSON_OBJECT) else value
    out = []
    for w in items if isinstance(items, list) else []:
        if not isinstance(w, JSON_OBJECT):
            continue
        author = _user(w.get("author"))
        entry = {
            "id": _s(w.get("id")),
            "author": author["id"] or author["name"],
            "author_name": author["name"],
            "started": iso_utc(parse_time(w.get("started"))),
            "time_spent_s": w.get("timeSpentSeconds") if isinstance(w.get("timeSpentSeconds"), int) else None,
            "created": iso_utc(parse_time(w.get("created"))),
            "updated": iso_utc(parse_time(w.get("updated"))),
            "comment": to_text(w.get("comment")) or None,
            "visibility": _s(_obj(w.get("visibility")).get("value")),
        }
        out.append({k: v for k, v in entry.items() if v is not None})
    return out


def _links(value: Any) -> list[dict[str, Any]]:
    """Issue links with Jira's type name (``Blocks``, ``Relates``) beside the direction verb."""
    out = []
    for link in value if isinstance(value, list) else []:
        if not isinstance(link, JSON_OBJECT):
            continue
        ltype = _obj(link.get("type"))
        for side, verb_key, direction in (("outwardIssue", "outward", "outward"), ("inwardIssue", "inward", "inward")):
            other = _obj(link.get(side))
            if other.get("key") or other.get("id"):
                entry = {
                    "id": _s(link.get("id")),
                    "type": _s(ltype.get("name")),
                    "direction": direction,
                    "verb": _s(ltype.get(verb_key)),
                    "key": _s(other.get("key")),
                    "issue_id": _s(other.get("id")),
                }
                out.append({k: v for k, v in entry.items() if v is not None})
    return out


def _attachments(value: Any, texts: Any, reasons: Any) -> tuple[list[dict[str, Any]], list[str]]:
    meta: list[dict[str, Any]] = []
    sections: list[str] = []
    texts = texts if isinstance(texts, JSON_OBJECT) else {}
    reasons = reasons if isinstance(reasons, JSON_OBJECT) else {}
    for a in _list(value):
        if not isinstance(a, JSON_OBJECT):
            continue
        aid = str(a.get("id")) if a.get("id") is not None else None
        mime = _s(a.get("mimeType"))
        # The client read only what connectors.attachments allows (text types and PDF, under the cap).
        inline = aid is not None and isinstance(texts.get(aid), str)
        entry: dict[str, Any] = {
            "id": aid,
            "filename": _s(a.get("filename")),
            "mime_type": mime,
            "size": a.get("size") if isinstance(a.get("size"), int) else None,
            "url": _s(a.get("content")) or _s(a.get("self")),
            "created": iso_utc(parse_time(a.get("created"))),
            "inline": inline,
        }
        if aid is not None and _s(reasons.get(aid)):
            entry["text_skipped"] = reasons[aid]
        meta.append(entry)
        if inline and aid is not None:
            sections.append(f"Attachment {a.get('filename')}:\n{str(texts[aid]).strip()}")
    return meta, sections


def _aliases(payload: Mapping[str, Any], ctx: JiraItemContext, key: str) -> tuple[str, ...]:
    keys = [str(k) for k in ctx.previous_keys or []]
    for history in _obj(payload.get("changelog")).get("histories") or []:
        for item in _obj(history).get("items") or []:
            if _obj(item).get("field") == "Key" and item.get("fromString"):
                keys.append(str(item["fromString"]))
    return tuple(dict.fromkeys(k for k in keys if k != key))


_RANK_RE = re.compile(r"^\d+\|[0-9a-z]+:")
_CHART_MARK = "_*:*_"


def _custom_fields(fields: Mapping[str, Any], fmap: Mapping[str, str]) -> dict[str, Any]:
    """Other custom fields reduced to JSON scalars/lists (selects, pickers, numbers, text).

    Board rank and time-in-status charts are left out: they change without the issue changing and
    would make every re-sync rewrite the entity.
    """
    known = set(fmap.values())
    out: dict[str, Any] = {}
    for name, value in fields.items():
        # ``fields=*all`` sends every custom field of the instance, most of them null: a null is passed over
        # before anything else (a site's hundreds of custom fields cost 173 µs an issue, decision 125).
        if value is None or not name.startswith("customfield_") or name in known:
            continue
        simple = _simple(value)
        if simple in (None, "", []):
            continue
        if isinstance(simple, str) and (_RANK_RE.match(simple) or _CHART_MARK in simple or simple == "{}"):
            continue
        out[name] = simple
    return out


def _simple(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, JSON_OBJECT):
        for k in ("value", "name", "emailAddress", "displayName", "key"):
            if isinstance(value.get(k), str):
                child = value.get("child")
                text = str(value[k])
                return f"{text} / {_simple(child)}" if isinstance(child, JSON_OBJECT) else text
        return None
    if isinstance(value, list):
        items = [_simple(v) for v in value]
        return [v for v in items if v not in (None, "")]
    return None


def _time_tracking(fields: Mapping[str, Any]) -> dict[str, int] | None:
    values = {
        "original_estimate_s": fields.get("timeoriginalestimate"),
        "remaining_estimate_s": fields.get("timeestimate"),
        "time_spent_s": fields.get("timespent"),
    }
    tracking = _obj(fields.get("timetracking"))
    for key, seconds in (
        ("original_estimate_s", "originalEstimateSeconds"),
        ("remaining_estimate_s", "remainingEstimateSeconds"),
        ("time_spent_s", "timeSpentSeconds"),
    ):
        if values[key] is None:
            values[key] = tracking.get(seconds)
    clean = {k: int(v) for k, v in values.items() if isinstance(v, int | float)}
    return clean or None


def _browse_url(payload: Mapping[str, Any], key: str) -> str | None:
    link = _s(payload.get("self"))
    if not link or "/rest/api/" not in link:
        return None
    return f"{link.split('/rest/api/', 1)[0]}/browse/{key}"


def _user(value: Any) -> dict[str, str | None]:
    u = _obj(value)
    ident = _s(u.get("emailAddress")) or _s(u.get("accountId")) or _s(u.get("name")) or _s(u.get("key"))
    return {"id": ident, "name": _s(u.get("displayName"))}


def _names(value: Any) -> list[str]:
    return [str(v["name"]) for v in _list(value) if isinstance(v, JSON_OBJECT) and v.get("name")]


def _list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else empty (a truncated payload degrades, never raises)."""
    return value if isinstance(value, list) else []


def _s(value: Any) -> str | None:
    if type(value) is str:  # most values: no ABC check (isinstance against Mapping is a Python-level call)
        return value or None
    if value is None or isinstance(value, Mapping | list):
        return None
    text = str(value)
    return text or None


def _date(value: Any) -> str | None:
    if isinstance(value, str) and _DATE_RE.match(value[:10]):
        return value[:10]
    return None
