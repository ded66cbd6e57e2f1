"""Split a SQL script into statements (for migrations that must not run as one multi-command string).

Only what migration files contain is handled: single-quoted strings, quoted identifiers, dollar-quoted
bodies, ``--`` and ``/* */`` comments. A statement ends at a ``;`` outside all of them.
"""

from __future__ import annotations

import re

_DOLLAR = re.compile(r"\$[A-Za-z_]?[A-Za-z0-9_]*\$")


def split_statements(script: str) -> list[str]:
    out: list[str] = []
    start = i = 0
    n = len(script)
    while i < n:
        c = script[i]
        if c == "-" and script.startswith("--", i):
            i = script.find("\n", i)
            i = n if i < 0 else i + 1
        elif c == "/" and script.startswith("/*", i):
            end = script.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in ("'", '"'):
            end = i + 1
            while end < n:
                if script[end] == c:
                    if end + 1 < n and script[end + 1] == c:  # doubled quote inside the literal
                        end += 2
                        continue
                    break
                end += 1
            i = end + 1
        elif c == "$" and (m := _DOLLAR.match(script, i)):
            end = script.find(m.group(0), m.end())
            i = n if end < 0 else end + len(m.group(0))
        elif c == ";":
            out.append(script[start : i + 1])
            i += 1
            start = i
        else:
            i += 1
    out.append(script[start:])
    return [s.strip() for s in out if _has_code(s)]


def _has_code(statement: str) -> bool:
    without_comments = re.sub(r"--[^\n]*|/\*.*?\*/", "", statement, flags=re.S)
    return bool(without_comments.strip().strip(";").strip())
