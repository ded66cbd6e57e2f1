"""Who may browse a Jira issue, as Jira itself evaluates it (issue 13, item 1). Pure; never raises.

Jira grants *Browse Projects* through the project's permission scheme. Each grant names a holder:

| holder ``type``                      | resolved to                                                            |
|--------------------------------------|------------------------------------------------------------------------|
| ``group``                            | ``group:jira:<name>`` (+ ``group:jira:id:<groupId>`` on Cloud)         |
| ``user``                             | the user's identity tokens (see :func:`user_tokens`)                   |
| ``projectRole``                      | the role's actors (users and groups) from ``/project/{key}/role/{id}`` |
| ``applicationRole``                  | that role's groups (``/applicationrole``) + ``group:jira:application:<key>``; |
|                                      | no parameter (any logged-in user): ``group:jira:licensed`` + all groups |
| ``anyone``                           | ``group:jira:anyone`` (the public token)                                |
| ``reporter`` / ``assignee``          | read from the issue (``fields.reporter`` / ``fields.assignee``)         |
| ``projectLead`` (Server: ``lead``)   | the project's lead (``/project/{key}``)                                 |
| ``userCustomField`` / ``groupCustomField`` | the users / groups in that custom field of the issue              |

Anything else (``reporterWithCreatePermission``, ``assigneeWithAssignablePermission``, Service Desk
``sd.customer.portal.only``, a type Jira adds tomorrow), or a holder whose facts could not be read,
is *unresolved*: it grants nobody (fail closed for that holder only — granting fewer people than Jira
does never exposes anything) and the client records which holder in the run's notes.

Issue security levels narrow: Jira shows an issue with a level only to people who may browse the
project *and* are members of the level. ACL tokens are an OR-list, so the intersection is taken over
tokens (:func:`narrow`), with the exact shortcut that a side granting everyone (``anyone`` / any
licensed user) leaves the other side whole.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from connectors.payload import JSON_OBJECT

PUBLIC = "group:jira:anyone"
LICENSED = "group:jira:licensed"
EVERYONE = frozenset({PUBLIC, LICENSED})
BROWSE = "BROWSE_PROJECTS"

# Holders whose people come from the issue itself, read by the mapping.
_ISSUE_HOLDERS = {"reporter": "reporter", "assignee": "assignee"}
_FIELD_HOLDERS = ("userCustomField", "groupCustomField")


@dataclass(frozen=True, slots=True)
class Grants:
    """Who a scheme (or a security level) lets in, resolved once per project per run.

    ``principals``: tokens that hold whatever the issue. ``issue_fields``: issue fields whose users or
    groups also hold (``reporter``, ``assignee``, ``customfield_NNNNN``). ``unresolved``: holders that
    grant nobody because they could not be resolved (one line each, for the run's error detail).
    """

    principals: tuple[str, ...] = ()
    issue_fields: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()


# A fetch returns the JSON of a path, or None when the call failed.
RoleFetch = Callable[[str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class Lookups:
    """How the resolver reads the facts a holder needs (the client passes its HTTP calls in)."""

    role: RoleFetch  # role id -> the project role with its actors
    application_roles: Callable[[], Sequence[Any] | None]  # every application role with its groups
    project_lead: Callable[[], Mapping[str, Any] | None]  # the project's lead user
    cloud: bool = True  # a bare user parameter is an accountId on Cloud, a user name on Server


def browse_holders(scheme: Any) -> list[Mapping[str, Any]]:
    """The holders of every ``BROWSE_PROJECTS`` grant in a permission scheme payload."""
    grants = scheme.get("permissions") if isinstance(scheme, JSON_OBJECT) else None
    out: list[Mapping[str, Any]] = []
    for grant in grants if isinstance(grants, list) else []:
        if isinstance(grant, JSON_OBJECT) and grant.get("permission") == BROWSE:
            holder = grant.get("holder")
            out.append(holder if isinstance(holder, JSON_OBJECT) else {})
    return out


def level_holders(page: Any) -> list[Mapping[str, Any]]:
    """Holders of an issue security level (``/issuesecurityschemes/level/member`` page)."""
    values = page.get("values") if isinstance(page, JSON_OBJECT) else None
    out: list[Mapping[str, Any]] = []
    for member in values if isinstance(values, list) else []:
        holder = member.get("holder") if isinstance(member, JSON_OBJECT) else None
        out.append(holder if isinstance(holder, JSON_OBJECT) else {})
    return out


@dataclass(frozen=True, slots=True)
class Needs:
    """The facts :func:`resolve` will ask its lookups for, known before any is read: so a client can
    read them all at once instead of one after another as the resolver meets each holder."""

    roles: tuple[str, ...] = ()  # project role ids, in the order the holders name them
    lead: bool = False
    application_roles: bool = False


def needs(holders: Iterable[Mapping[str, Any]]) -> Needs:
    """What resolving ``holders`` looks up (the same dispatch as :func:`resolve`, without reading)."""
    roles: dict[str, None] = {}
    lead = application_roles = False
    for holder in holders:
        kind = str(holder.get("type") or "")
        if kind == "projectRole":
            role_id = _str(holder.get("parameter")) or _str(holder.get("value"))
            if role_id:
                roles[role_id] = None
        elif kind == "applicationRole":
            application_roles = True
        elif kind in ("projectLead", "lead"):
            lead = True
    return Needs(tuple(roles), lead, application_roles)


def resolve(holders: Iterable[Mapping[str, Any]], lookups: Lookups) -> Grants:
    """Resolve holders to tokens; never raises, an unresolvable holder grants nobody and is named."""
    tokens: list[str] = []
    fields: list[str] = []
    unresolved: list[str] = []
    for holder in holders:
        kind = str(holder.get("type") or "")
        param = _str(holder.get("parameter")) or _str(holder.get("value"))
        if kind == "anyone":
            tokens.append(PUBLIC)
        elif kind == "group":
            group = _map(holder.get("group"))
            got = group_tokens(_str(group.get("name")) or _str(holder.get("parameter")), _group_id(holder, group))
            if got:
                tokens.extend(got)
            else:
                unresolved.append("group holder without a name")
        elif kind == "user":
            got = user_tokens(holder.get("user")) or _bare_user(param, lookups.cloud)
            if got:
                tokens.extend(got)
            else:
                unresolved.append("user holder without an identity")
        elif kind == "projectRole":
            got, missing = _role(param, lookups)
            tokens.extend(got)
            unresolved.extend(missing)
        elif kind == "applicationRole":
            got, missing = _application_role(param, lookups)
            tokens.extend(got)
            unresolved.extend(missing)
        elif kind in _ISSUE_HOLDERS:
            fields.append(_ISSUE_HOLDERS[kind])
        elif kind in ("projectLead", "lead"):
            lead = lookups.project_lead()
            got = user_tokens(lead)
            if got:
                tokens.extend(got)
            else:
                unresolved.append("projectLead (the project's lead could not be read)")
        elif kind in _FIELD_HOLDERS:
            if param and param.startswith("customfield_"):
                fields.append(param)
            else:
                unresolved.append(f"{kind} without a custom field id")
        else:
            unresolved.append(f"holder type {kind or '(none)'!r}{f' ({param})' if param else ''} is not supported")
    return Grants(tuple(sorted(set(tokens))), tuple(dict.fromkeys(fields)), tuple(dict.fromkeys(unresolved)))


def for_issue(grants: Grants, fields: Mapping[str, Any]) -> list[str]:
    """The grants' tokens plus the people the issue's own fields name (reporter, assignee, pickers)."""
    out = list(grants.principals)
    for name in grants.issue_fields:
        out.extend(_field_tokens(fields.get(name)))
    return sorted(set(out))


def narrow(browse: Collection[str], level: Collection[str]) -> list[str]:
    """Browse permission AND security-level membership, over OR-lists of tokens. A set is taken as it is:
    the mapping passes a project's grant as one frozenset per grant, so an issue with a security level
    costs O(its level), not O(the people in the grant) (intersections walk the smaller side; decision 125)."""
    browse_set = browse if isinstance(browse, AbstractSet) else set(browse)
    level_set = level if isinstance(level, AbstractSet) else set(level)
    if EVERYONE & browse_set:
        return sorted(level_set)  # everyone may browse: the level alone decides
    if EVERYONE & level_set:
        return sorted(browse_set)  # everyone is in the level: browse alone decides
    return sorted(browse_set & level_set)


# ---------------------------------------------------------------- identities


def user_tokens(user: Any) -> list[str]:
    """Every identity a Jira user object carries, as ACL tokens (issue 13, item 2).

    ``user:<email>`` (lower-case: e-mails compare case-insensitively), ``user:accountid:<id>`` (Cloud),
    ``user:jira:name:<name>`` (Server/DC user name, what ``[~name]`` mentions). The display name is not an
    identity (two people may share one) and is never a token.
    """
    if not isinstance(user, JSON_OBJECT):
        return []
    out: list[str] = []
    email = _str(user.get("emailAddress"))
    if email and "@" in email:
        out.append(f"user:{email.lower()}")
    account = _str(user.get("accountId"))
    if account:
        out.append(f"user:accountid:{account}")
    name = _str(user.get("name"))
    if name and not account:
        out.append(f"user:jira:name:{name.lower()}")
    return out


def group_tokens(name: str | None, group_id: str | None = None) -> list[str]:
    out = [f"group:jira:{name}"] if name else []
    if group_id and group_id != name:
        out.append(f"group:jira:id:{group_id}")
    return out


def mention_token(target: str) -> str:
    """A wiki/ADF mention target (``accountid:X``, an account id, or a Server user name) as a token."""
    if target.lower().startswith("accountid:"):
        return f"user:accountid:{target.split(':', 1)[1]}"
    if _looks_like_account_id(target):
        return f"user:accountid:{target}"
    return f"user:jira:name:{target.lower()}"


def _looks_like_account_id(value: str) -> bool:
    # Cloud account ids: 24 alphanumerics with digits (5b10a2844c20165700ede21g), or "<digits>:<uuid>";
    # Server user names are rarely that long and never contain ':'.
    return (len(value) == 24 and value.isalnum() and any(c.isdigit() for c in value)) or (
        ":" in value and value.split(":", 1)[0].isdigit()
    )


def _bare_user(param: str | None, cloud: bool) -> list[str]:
    if not param:
        return []
    if "@" in param:
        return [f"user:{param.lower()}"]
    return [f"user:accountid:{param}"] if cloud else [f"user:jira:name:{param.lower()}"]


def _group_id(holder: Mapping[str, Any], group: Mapping[str, Any]) -> str | None:
    gid = _str(group.get("groupId"))
    value = _str(holder.get("value"))
    param = _str(holder.get("parameter"))
    # Cloud sends the group id as ``value`` beside the name in ``parameter``.
    return gid or (value if value and value != param else None)


def _role(role_id: str | None, lookups: Lookups) -> tuple[list[str], list[str]]:
    if not role_id:
        return [], ["projectRole without a role id"]
    role = lookups.role(role_id)
    if not isinstance(role, JSON_OBJECT) or not isinstance(role.get("actors"), list):
        return [], [f"projectRole {role_id} (its actors could not be read)"]
    tokens: list[str] = []
    missing: list[str] = []
    for actor in role["actors"]:
        if not isinstance(actor, JSON_OBJECT):
            continue
        kind = str(actor.get("type") or "")
        if kind == "atlassian-user-role-actor":
            user = _map(actor.get("actorUser"))
            got = user_tokens(user) or _bare_user(_str(actor.get("name")), lookups.cloud)
            if got:
                tokens.extend(got)
            else:
                missing.append(f"projectRole {role_id}: a user actor without identity")
        elif kind == "atlassian-group-role-actor":
            group = _map(actor.get("actorGroup"))
            name = _str(group.get("name")) or _str(actor.get("name"))
            got = group_tokens(name, _str(group.get("groupId")))
            if got:
                tokens.extend(got)
            else:
                missing.append(f"projectRole {role_id}: a group actor without a name")
        else:
            missing.append(f"projectRole {role_id}: actor type {kind or '(none)'!r} is not supported")
    return tokens, missing


def _application_role(key: str | None, lookups: Lookups) -> tuple[list[str], list[str]]:
    roles = lookups.application_roles()
    tokens = [LICENSED] if not key else [f"group:jira:application:{key}"]
    if roles is None:
        # The groups are unknown, but the role itself is a principal callers can hold.
        return tokens, []
    for role in roles:
        if not isinstance(role, JSON_OBJECT) or (key and role.get("key") != key):
            continue
        for group in role.get("groups") or []:
            if isinstance(group, str) and group:
                tokens.append(f"group:jira:{group}")
        for detail in role.get("groupDetails") or []:
            if isinstance(detail, JSON_OBJECT):
                tokens.extend(group_tokens(_str(detail.get("name")), _str(detail.get("groupId"))))
    return tokens, []


def _field_tokens(value: Any) -> list[str]:
    """Users or groups in an issue field (a user object, a group object, or a list of either)."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        if not isinstance(item, JSON_OBJECT):
            continue
        users = user_tokens(item)
        if users:
            out.extend(users)
        elif item.get("name") or item.get("groupId"):
            out.extend(group_tokens(_str(item.get("name")), _str(item.get("groupId"))))
    return out


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, JSON_OBJECT) else {}


def _str(value: Any) -> str | None:
    if type(value) is str:  # nearly always: a str is none of the shapes below, and no ABC check is paid
        return value.strip() or None
    if value is None or isinstance(value, (JSON_OBJECT, list, bool)):
        return None
    text = str(value).strip()
    return text or None
