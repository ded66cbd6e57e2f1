"""The JQL subset the Jira emulator understands (what the client sends, plus a little more).

Grammar: ``expr := term (("AND"|"OR") term)*`` (AND binds tighter), ``term := "NOT" term | "(" expr ")"
| clause``; clauses: ``project|key|issuekey|id in (a, b)``, ``<field> = v``, ``<field> != v``,
``updated|created >=|>|<=|< "yyyy/MM/dd[ HH:mm]"`` (dates in the user's time zone, as Jira does),
``status|labels|issuetype|priority = v``. ``ORDER BY`` is accepted and ignored (results are always
``updated ASC, key ASC``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|(,)|("(?:[^"\\]|\\.)*")|(>=|<=|!=|=|>|<)|([^\s(),"=<>!]+))')

Issue = Mapping[str, Any]  # {"key", "id", "project", "updated": datetime, "created", "status", ...}
Predicate = Callable[[Issue], bool]


@dataclass(slots=True)
class Plan:
    """Top-level AND constraints the emulator can use to avoid a full scan."""

    projects: set[str] | None = None
    keys: set[str] | None = None
    ids: set[str] | None = None
    updated_from: datetime | None = None
    exact: bool = True  # every top-level conjunct is captured above (no residual filter needed)
    extra: list[str] = field(default_factory=list)


def parse(jql: str, tz: tzinfo) -> tuple[Predicate, Plan]:
    text = re.split(r"\border\s+by\b", jql, maxsplit=1, flags=re.IGNORECASE)[0].strip()
    tokens = [t for t in _tokens(text)]
    parser = _Parser(tokens, tz)
    if not tokens:
        return (lambda _i: True), Plan()
    pred = parser.expr()
    if parser.pos != len(tokens):
        raise ValueError(f"JQL: unexpected {tokens[parser.pos]!r}")
    return pred, parser.plan


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"JQL: cannot parse near {text[pos : pos + 20]!r}")
        tok = next(g for g in m.groups() if g is not None)
        out.append(tok)
        pos = m.end()
    return out


def _unquote(tok: str) -> str:
    if tok.startswith('"') and tok.endswith('"'):
        return tok[1:-1].replace('\\"', '"')
    return tok


class _Parser:
    def __init__(self, tokens: list[str], tz: tzinfo) -> None:
        self.tokens = tokens
        self.pos = 0
        self.tz = tz
        self.plan = Plan()
        self.depth = 0
        self.or_seen = False

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise ValueError("JQL: unexpected end")
        self.pos += 1
        return tok

    def expr(self) -> Predicate:
        terms = [self.conj()]
        while (self.peek() or "").upper() == "OR":
            self.take()
            if self.depth == 0:
                self.or_seen = True
                self.plan = Plan(exact=False)
            terms.append(self.conj())
        if len(terms) == 1:
            return terms[0]
        return lambda i: any(t(i) for t in terms)

    def conj(self) -> Predicate:
        terms = [self.term(top=True)]
        while (self.peek() or "").upper() == "AND":
            self.take()
            terms.append(self.term(top=True))
        if len(terms) == 1:
            return terms[0]
        return lambda i: all(t(i) for t in terms)

    def term(self, top: bool = False) -> Predicate:
        tok = self.peek()
        if tok is not None and tok.upper() == "NOT":
            self.take()
            self._residual()
            self.depth += 1
            inner = self.term()
            self.depth -= 1
            return lambda i: not inner(i)
        if tok == "(":
            self.take()
            # A top-level group is transparent for the plan: an OR inside it resets the plan anyway.
            nested = not (top and self.depth == 0)
            self.depth += nested
            inner = self.expr()
            self.depth -= nested
            if self.take() != ")":
                raise ValueError("JQL: missing )")
            return inner
        return self.clause(top and self.depth == 0)

    def _residual(self) -> None:
        if self.depth == 0:
            self.plan.exact = False

    def clause(self, top: bool) -> Predicate:
        name = self.take().lower()
        op = self.take().lower()
        if op == "not":
            if self.take().lower() != "in":
                raise ValueError("JQL: expected IN after NOT")
            op = "not in"
        values = self._list() if op in ("in", "not in") else [_unquote(self.take())]
        plan = self.plan if top and not self.or_seen else None
        field_name = {"issuekey": "key"}.get(name, name)
        if field_name in ("updated", "created"):
            when = _parse_date(values[0], self.tz)
            if plan is not None and field_name == "updated" and op in (">=", ">"):
                plan.updated_from = when if plan.updated_from is None else max(plan.updated_from, when)
            elif plan is not None:
                plan.exact = False
            return _compare(field_name, op, when)
        if plan is not None:
            if op == "in" or op == "=":
                target = {"project": "projects", "key": "keys", "id": "ids"}.get(field_name)
                if target is not None:
                    current = getattr(plan, target)
                    vals = {v.upper() if target != "ids" else v for v in values}
                    setattr(plan, target, vals if current is None else current & vals)
                else:
                    plan.exact = False
            else:
                plan.exact = False
        wanted = {v.lower() for v in values}

        def match(issue: Issue) -> bool:
            value = issue.get(field_name)
            have = {str(v).lower() for v in value} if isinstance(value, list) else {str(value).lower()}
            hit = bool(have & wanted)
            return not hit if op in ("!=", "not in") else hit

        return match

    def _list(self) -> list[str]:
        if self.take() != "(":
            raise ValueError("JQL: expected (")
        values: list[str] = []
        while True:
            tok = self.take()
            if tok == ")":
                return values
            if tok != ",":
                values.append(_unquote(tok))


def _parse_date(text: str, tz: tzinfo) -> datetime:
    for fmt in ("%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    raise ValueError(f"JQL: bad date {text!r}")


def _compare(name: str, op: str, when: datetime) -> Predicate:
    ops: dict[str, Callable[[datetime, datetime], bool]] = {
        ">=": lambda a, b: a >= b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        "<": lambda a, b: a < b,
        "=": lambda a, b: a == b,
    }
    if op not in ops:
        raise ValueError(f"JQL: operator {op} not supported on {name}")
    fn = ops[op]
    return lambda issue: fn(issue[name], when)
