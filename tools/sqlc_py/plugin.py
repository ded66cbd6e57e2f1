"""sqlc process plugin: sql/queries/*.sql -> typed psycopg 3 functions in app/queries/*.py.

sqlc runs this once per `sql[].codegen` entry, sends the codegen request (plugin/codegen.proto,
JSON encoding) on stdin and writes the files we answer with.

sqlc.yaml (checked with sqlc 1.31.1)::

    version: "2"
    plugins:
      - name: py
        process:
          cmd: tools/sqlc-gen-psycopg
          format: json
    sql:
      - engine: postgresql
        schema: ["sql/schema", "sql/triggers"]
        queries: sql/queries
        codegen:
          - plugin: py
            out: app/queries

- `format: json` is required: without it sqlc speaks protobuf to the plugin.
- `cmd` is looked up from sqlc's working directory, NOT relative to sqlc.yaml (sqlc splits it on
  spaces and resolves the first word like a shell would): run `sqlc generate` from the repo root.
  `schema`, `queries` and `out` are relative to sqlc.yaml, and must be relative paths.
- The plugin takes no `options`.

Output, for each query file `sql/queries/<area>.sql`: `app/queries/<area>.py`, plus
`app/queries/__init__.py`. Per query `-- name: VerbNoun :kind` (comment lines above it become the
docstring): a SQL constant `VERB_NOUN` with `%(name)s` placeholders and a function
`verb_noun(conn, *, <params>)`:

- `:one` -> `VerbNounRow | None`, `:many` -> `list[VerbNounRow]`, `:exec` -> `None`,
  `:execrows` -> `int` (rowcount), `:copyfrom` -> `verb_noun(conn, items: Iterable[VerbNounParams])
  -> int` through COPY FROM STDIN.
- A query returning exactly one column returns that value instead of a Row; `VerbNounRow` is a
  frozen slots dataclass built positionally from a `tuple_row` cursor.
- Queries of one file returning the same fields (names, types, nullability) share one Row class,
  named after the one table or view they read (`SyncRunHistoryRow`), else after the first query.
- sqlc calls every cast and view expression NOT NULL; a comment line `-- nullable: col, ...` under
  the query marks those result columns `| None` (an unknown name is an error).
- json/jsonb inputs are wrapped in `psycopg.types.json.Json`/`Jsonb`; vector/halfvec are `Any`
  (numpy arrays once `pgvector.psycopg.register_vector` ran on the connection).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any, BinaryIO, TextIO

from .codegen import PluginError, generate


def respond(request: dict[str, Any]) -> dict[str, Any]:
    options = request.get("plugin_options") or ""
    if base64.b64decode(options).strip() not in (b"", b"{}", b"null"):
        raise PluginError("sqlc-gen-psycopg takes no options")
    files = generate(request)
    return {
        "files": [
            {"name": name, "contents": base64.b64encode(text.encode("utf-8")).decode("ascii")}
            for name, text in files.items()
        ]
    }


def main(stdin: BinaryIO | None = None, stdout: TextIO | None = None) -> int:
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout
    try:
        response = respond(json.loads(source.read()))
    except PluginError as exc:
        print(f"sqlc-gen-psycopg: {exc}", file=sys.stderr)
        return 1
    sink.write(json.dumps(response, sort_keys=True))
    sink.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
