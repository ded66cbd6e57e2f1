"""The scale benchmarks (bench/search_million.py, bench/search_text.py, bench/growth.py; issue 15 §3, §5) still
run end to end.

Each runs as a real process at a size CI can afford, so a change to the search query, the schema or the
CLI that breaks a benchmark fails here instead of on the day someone re-measures docs/performance.md.
The small runs also check what the benchmarks report: recall, always-k under every filter, the halfvec
comparison, the hybrid timing, and a growth table with its log-log slopes.
"""

from __future__ import annotations

import re

import pytest

from tests.bench_runs import run_bench

pytestmark = pytest.mark.slow


def test_search_benchmark_reports_recall_filters_hybrid_and_halfvec_at_5k_chunks() -> None:
    out = run_bench(
        "search_million.py", "--chunks", "5000", "--queries", "20", "--clusters", "50",
        "--shared-buffers", "256MB", "--maintenance-work-mem", "256MB", "--narrow-sweep", "0.02:0:20000:4",
        timeout=300,
    )  # fmt: skip
    unfiltered = re.search(r"unfiltered\s+recall@10 ([0-9.]+)", out)
    assert unfiltered is not None, out
    assert float(unfiltered.group(1)) >= 0.95, out
    assert len(re.findall(r"^ef_search \d+\s+recall@10 [0-9.]+", out, re.MULTILINE)) == 2, out
    for level in ("50 %", "10 %", "1 %"):
        line = next((x for x in out.splitlines() if x.strip().startswith(f"{level} vis")), None)
        assert line is not None, out
        assert "always 10: yes" in line, line
    # The narrow bound's sweep (decision 111): every level, the 5 % one too, by the product's query.
    pattern = r"^narrow 0\.02:0:20000:4\s+(all|50 %|10 %|5 %|1 %) vis\s+recall@10 [0-9.]+ .*p95 [0-9.]+ ms"
    swept = re.findall(pattern, out, re.MULTILINE)
    assert swept == ["all", "50 %", "10 %", "5 %", "1 %"], out
    assert re.search(r"hybrid\s+p95 [0-9.]+ ms", out), out
    assert re.search(r"text half\s+p95 [0-9.]+ ms .* [0-9.]+x hybrid p95", out), out
    halfvec = re.findall(r"halfvec idx build .* recall@10 ([0-9.]+), p95", out)
    assert len(halfvec) == 2, out
    assert float(halfvec[-1]) >= 0.95, out
    assert "WARNING" not in out, out


def test_text_benchmark_checks_the_steps_and_the_baselines_in_every_frequency_band() -> None:
    out = run_bench(
        "search_text.py", "--chunks", "3000", "--words", "40", "--queries", "3", "--write-chunks", "500",
        "--shared-buffers", "256MB",
        timeout=300,
    )  # fmt: skip
    # The bench stops on the first query where the product's steps (decisions 114-116) answer otherwise than
    # ranking every match, than without the visibility index (decision 117), than the steps with decision
    # 115's repeats or without any, or where the copies of the queries before decisions 113 and 114 disagree;
    # so five band lines mean every query passed every check.
    line = (
        r"^band\s+(\d+)-(\d+)\s+matching chunks median [0-9,]+ \([0-9.]+%\); terms held by the 50th median "
        r"[0-9.]+ of 3; product p50 .* product ÷ before 117 p95 [0-9.]+, product ÷ before 116 p95 [0-9.]+, "
        r"product ÷ before 115 p95 [0-9.]+, product ÷ before 114 p95 [0-9.]+, "
        r"before 114 ÷ parsed p95 [0-9.]+; "
        r"first ten shared with before 114 median [0-9.]+$"
    )
    bands = re.findall(line, out, re.MULTILINE)
    assert bands == [("5", "50"), ("50", "200"), ("200", "1000"), ("1000", "5000"), ("5000", "20000")], out
    mixed = r"^mixed one word of rank 50-200, the others 5000-20000: matching chunks median [0-9,]+ .* product ÷ before"
    assert re.search(mixed, out, re.MULTILINE), out
    write = r"^write\s+500 chunks .* stored ÷ before 117 [0-9.]+, stored ÷ parsed [0-9.]+$"
    assert re.search(write, out, re.MULTILINE), out
    sizes = (
        r"^sizes\s+entity_chunks heap \d+ MiB.* entity_chunk_repeats total \d+ MiB \(decision 115's: \d+ MiB\); "
        r"visibility index \d+ MiB"
    )
    assert re.search(sizes, out, re.MULTILINE), out


def test_text_benchmark_rejects_a_vocabulary_smaller_than_its_bands_in_one_line() -> None:
    with pytest.raises(AssertionError) as failed:
        run_bench("search_text.py", "--vocabulary", "1000", timeout=60)
    assert "--vocabulary must be above 20000" in str(failed.value)


def test_growth_benchmark_prints_a_table_with_log_log_slopes() -> None:
    out = run_bench("growth.py", "--sizes", "200", "600", "--queries", "10", timeout=300)
    rows = re.findall(r"issues\s+([0-9,]+): entities ([0-9,]+), full sync", out)
    assert rows == [("200", "200"), ("600", "600")], out
    assert "slope 200->600" in out, out
    table = {line[:24].strip(): line[24:].split() for line in out.splitlines() if line[:24].rstrip().endswith("MB")}
    assert float(table["entities table MB"][-1]) > 0.5, out  # three times the rows: the table grew
    # The vector index's price on the write path, at each size: a chunk written with the HNSW index costs
    # the backend more than the same chunk without it, and the row says by how much.
    costs = {
        line[:24].strip(): [float(x) for x in line[24:].split()[:2]]
        for line in out.splitlines()
        if line[:24].strip() in ("chunk write CPU ms", "+ HNSW, CPU ms", "HNSW insert CPU ms")
    }
    assert len(costs) == 3, out
    for plain, indexed, insert in zip(*costs.values(), strict=True):
        assert 0 < plain < indexed, out
        assert insert == pytest.approx(indexed - plain, abs=0.011), out
