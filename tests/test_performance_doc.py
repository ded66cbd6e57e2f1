"""docs/performance.md indexes every bench (issue 15 §4: "every bench, how to run it, the latest ratios").

The index is the table under "## Every bench": one row per ``bench/*.py`` a person runs (helpers start with
``_``), each naming its file and a command that runs it. A bench added without a row, or a row left behind
by a bench that is gone, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "performance.md"


def _benches() -> set[str]:
    return {p.name for p in (REPO / "bench").glob("*.py") if not p.name.startswith("_")}


def _index_rows(text: str) -> list[str]:
    section = re.search(r"^## Every bench\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert section is not None, "docs/performance.md has no '## Every bench' section"
    return [line for line in section.group(1).splitlines() if line.startswith("| `bench/")]


def _named(row: str) -> str:
    match = re.match(r"\| `bench/([a-z0-9_]+\.py)`", row)
    assert match is not None, row
    return match.group(1)


def test_every_bench_has_one_row_with_a_command_that_runs_it() -> None:
    rows = _index_rows(DOC.read_text(encoding="utf-8"))
    named = [_named(row) for row in rows]
    assert len(named) == len(set(named)), f"a bench indexed twice: {sorted(n for n in named if named.count(n) > 1)}"
    assert set(named) == _benches(), (
        f"not indexed: {sorted(_benches() - set(named))}; indexed but gone: {sorted(set(named) - _benches())}"
    )
    for row, name in zip(rows, named, strict=True):
        module = name.removesuffix(".py")
        assert f"python bench/{name}" in row or f"python -m bench.{module}" in row, f"no command in the row: {row}"


def test_the_index_check_sees_a_missing_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `bench/overlap.py`"))
    named = {_named(r) for r in _index_rows(text.replace(row + "\n", ""))}
    assert "overlap.py" not in named and named < _benches()
