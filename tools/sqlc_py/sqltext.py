"""Rewrite sqlc's `$n` placeholders into psycopg's `%(name)s` form."""

from __future__ import annotations

import re

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_PLACEHOLDER = re.compile(r"\$(\d+)")


def _is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def to_psycopg(sql: str, names: dict[int, str]) -> str:
    """Return `sql` with `$n` -> `%(names[n])s` and every literal `%` doubled.

    psycopg scans the whole statement for `%`, literals and comments included, so every `%` is
    doubled; `$n` is only a placeholder outside literals, quoted identifiers, comments and
    dollar-quoted bodies.
    """
    out: list[str] = []
    i, n = 0, len(sql)

    def copy_until(end: int) -> None:
        out.append(sql[i:end].replace("%", "%%"))

    while i < n:
        ch = sql[i]
        prev = sql[i - 1] if i else ""
        if ch == "'":
            escapes = prev in "eE" and (i < 2 or not _is_ident_char(sql[i - 2]))
            j = i + 1
            while j < n:
                if escapes and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == "'":
                    if j + 1 < n and sql[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            copy_until(min(j + 1, n))
            i = j + 1
        elif ch == '"':
            j = i + 1
            while j < n and not (sql[j] == '"' and not (j + 1 < n and sql[j + 1] == '"')):
                j += 2 if sql[j] == '"' else 1
            copy_until(min(j + 1, n))
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            copy_until(j)
            i = j
        elif sql.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            copy_until(j)
            i = j
        elif ch == "$" and not _is_ident_char(prev):
            placeholder = _PLACEHOLDER.match(sql, i)
            tag = _DOLLAR_TAG.match(sql, i)
            if placeholder:
                number = int(placeholder.group(1))
                if number not in names:
                    raise ValueError(f"placeholder ${number} has no parameter")
                out.append(f"%({names[number]})s")
                i = placeholder.end()
            elif tag:
                close = sql.find(tag.group(0), tag.end())
                j = n if close < 0 else close + len(tag.group(0))
                copy_until(j)
                i = j
            else:
                out.append("$")
                i += 1
        else:
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)
