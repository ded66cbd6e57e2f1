"""The benches no other test runs still run end to end and print what docs/performance.md quotes from them.

Each runs as a real process at a size CI affords (``tests/bench_runs.py``). ``bench/alert_latency.py`` had
stopped running (it handed ``execute_run`` a connection in a transaction, which the pipeline refuses) and
nothing noticed: a bench nobody runs rots. Timings are never asserted, only that each figure is printed and
means what it says (counts that match, shares between 0 and 1).
"""

from __future__ import annotations

import re

import pytest

from tests.bench_runs import NUM, run_bench

pytestmark = pytest.mark.slow


def test_alert_latency_times_a_real_worker_delivering_a_failed_run_s_alert() -> None:
    out = run_bench("alert_latency.py", "--repeat", "1", timeout=300, as_module=True)
    got = re.search(rf"alert received \(1 runs, real worker\): median {NUM} ms, max {NUM} ms", out)
    assert got is not None, out
    assert 0 < float(got.group(1)) <= float(got.group(2)), got.group(0)


def test_completeness_demo_finds_every_unit_of_the_demo_complete() -> None:
    out = run_bench("completeness_demo.py", "--issues", "20", "--pages", "12", "--messages", "40", timeout=300)
    runs = re.findall(r"^(jira|confluence|slack): reconciliation #\d+ (\w+), \d+ items; error_detail=(.*)$", out, re.M)
    # A run's detail may carry notes (an attachment kept as a link); a completeness finding would be one too.
    assert [(name, state) for name, state, _ in runs] == [(n, "succeeded") for n in ("jira", "confluence", "slack")]
    assert not any("completeness" in detail for _, _, detail in runs), out
    units = re.findall(r"^  \S+\s+source\s+(\d+)\s+held\s+(\d+)\s+diff (-?\d+)$", out, re.M)
    assert units and all(source == held and diff == "0" for source, held, diff in units), out


def test_connector_sync_prints_each_connector_s_pipeline_against_its_bare_loop() -> None:
    out = run_bench("connector_sync.py", "--items", "60", "--repeats", "1", timeout=300)
    rows = re.findall(rf"^(jira|confluence|slack)\s+(\d+)\s+(\d+)\s+(\d+)\s+{NUM}$", out, re.M)
    assert [r[0] for r in rows] == ["jira", "confluence", "slack"], out
    for _, items, bare, pipeline, ratio in rows:
        assert int(items) > 0 and int(bare) > 0 and int(pipeline) > 0, out
        assert abs(float(ratio) - int(pipeline) / int(bare)) < 0.02, out


def test_embed_throughput_and_embed_pipeline_print_ours_against_the_bare_model() -> None:
    out = run_bench("embed_throughput.py", "--chunks", "48", "--repeats", "1", timeout=300)
    assert re.search(r"^chunks\s+48, tokens/chunk mean", out, re.M), out
    for label in ("ratio b/a ", "ratio b/a'"):
        assert re.search(rf"^{re.escape(label)}\s+{NUM}", out, re.M), out
    out = run_bench("embed_pipeline.py", "--tickets", "4", "--repeats", "1", timeout=300)
    chunks = re.search(r"^chunks\s+(\d+) from 4 tickets; rows written per pipeline run (\d+)$", out, re.M)
    assert chunks is not None and chunks.group(1) == chunks.group(2), out  # every chunk embedded and written
    assert re.search(rf"^ratio b/a\s+{NUM}", out, re.M), out


def test_embed_contention_prints_each_setting_against_the_embedding_alone() -> None:
    out = run_bench("embed_contention.py", "--chunks", "24", "--repeats", "1", timeout=300)
    assert re.search(r"^24 texts, LocalEmbedder\(", out, re.M), out
    for label in ("alone", "thread, 1 ms", "thread, 5 ms", "process"):
        row = re.search(rf"^  {re.escape(label)}\s+{NUM} s\s+{NUM} x alone$", out, re.M)
        assert row is not None, (label, out)
        assert label != "alone" or float(row.group(2)) == 1.0, out
    assert re.search(rf"^  beside a thread: 1 ms / 5 ms = {NUM}$", out, re.M), out


def test_embedder_start_prints_each_setting_against_a_process_that_derives_the_graph() -> None:
    out = run_bench("embedder_start.py", "--repeats", "1", timeout=300)
    assert re.search(rf"^local embedder start, 1 rounds \(save once\); cached graph {NUM} MiB$", out, re.M), out
    for setting in ("derive", "kept", "save", "read"):
        row = re.search(rf"^{setting}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}  {NUM}  {NUM}  {NUM}$", out, re.M)
        assert row is not None, (setting, out)
        assert setting != "derive" or row.group(5) == "1.00", out
    assert "vectors the same in every process: yes" in out, out
    assert re.search(rf"^read / derive: ready {NUM}, peak {NUM}, rss {NUM}$", out, re.M), out


def test_fanout_sends_a_listing_s_requests_at_once() -> None:
    out = run_bench("fanout.py", "--items", "12", "--latency-ms", "20", "--repeats", "1", timeout=300)
    rows = re.findall(rf"^(jira|confluence|slack)\s+(\d+)\s+(\d+)\s+{NUM}\s+{NUM}\s+{NUM}\s+(\d+)$", out, re.M)
    assert [r[0] for r in rows] == ["jira", "confluence", "slack"], out
    # Jira's and Confluence's per-item reads go several at once: that is what the bench measures.
    assert all(int(r[6]) > 1 for r in rows[:2]), out


def test_load_ab_prints_both_load_paths_against_copy() -> None:
    out = run_bench("load_ab.py", "--against", "HEAD", "--rows", "300", "--rounds", "1", timeout=300)
    for label in ("all-new", "all-changed"):
        assert re.search(rf"^  {label}\s+this checkout {NUM}\s+HEAD {NUM}$", out, re.M), out


def test_provenance_touch_times_the_touch_of_unchanged_rows() -> None:
    out = run_bench("provenance_touch.py", "--issues", "200", timeout=300)
    got = re.search(
        rf"^issues=200 first full run {NUM}s; unchanged full runs {NUM}s, {NUM}s; TouchFetched for all rows "
        rf"in pages of 100: {NUM} ms \({NUM}% of an unchanged full run\)$",
        out,
        re.M,
    )
    assert got is not None, out
    assert 0 < float(got.group(5)) < 100, out


def test_rate_budget_runs_every_item_with_and_without_the_shared_budget() -> None:
    out = run_bench("rate_budget.py", "--issues", "40", "--runs", "2", "--rate", "40", "--page-size", "20", timeout=300)
    for label in ("per-request backoff", "shared budget (PostgreSQL)"):
        got = re.search(rf"^{re.escape(label)}\s+runs=2 items/run=\[(\d+), (\d+)\] calls=(\d+) 429s=(\d+)", out, re.M)
        assert got is not None, out
        assert got.group(1, 2) == ("40", "40"), out  # neither fails or loses items under the limit


def test_rss_full_sync_prints_the_peak_against_the_first_page() -> None:
    out = run_bench("rss_full_sync.py", "--issues", "300", timeout=300)
    assert re.search(r"^issues=300 exit=0 ", out, re.M), out
    peak = re.search(rf"peak RSS {NUM} MB \(target <= 500\); ", out)
    assert peak is not None and float(peak.group(1)) > 0, out
    # 300 issues may sync between two of the sampler's looks: then the bench says it saw no first page.
    first = re.search(rf"after the first page {NUM} MB; growth {NUM} MB", out)
    if first is None:
        assert "the run ended before a sample saw its first page" in out, out
    else:
        baseline, growth = float(first.group(1)), float(first.group(2))
        assert 0 < baseline <= float(peak.group(1)) and abs(float(peak.group(1)) - baseline - growth) <= 0.11, out


def test_search_eval_prints_recall_and_mrr_of_each_mode() -> None:
    out = run_bench("search_eval.py", "--issues", "40", "--queries", "10", timeout=600)
    for mode in ("vector", "full-text", "hybrid"):
        got = re.search(rf"^{mode}\s+recall@10 {NUM}\s+MRR {NUM}", out, re.M)
        assert got is not None, out
        assert 0 <= float(got.group(2)) <= float(got.group(1)) <= 1, out  # MRR never above recall


def test_search_eval_ru_en_prints_each_language_pair() -> None:
    out = run_bench("search_eval_ru_en.py", timeout=300)
    pairs = re.findall(rf"^  (en|ru)->(en|ru): MRR {NUM}\s+recall@3 {NUM}$", out, re.M)
    assert sorted((a, b) for a, b, _, _ in pairs) == [("en", "en"), ("en", "ru"), ("ru", "en"), ("ru", "ru")], out
    assert all(0 <= float(m) <= 1 and 0 <= float(r) <= 1 for _, _, m, r in pairs), out


def test_watermark_boundary_prints_now_and_before() -> None:
    out = run_bench("watermark_boundary.py", "--small", "100", "--large", "400", "--repeats", "1", timeout=300)
    for label in ("now", "before"):
        assert re.search(rf"^{label}\s+{NUM} us /\s+{NUM} us an item, ratio 400 / 100 items: {NUM}", out, re.M), out


def test_worker_soak_prints_the_worker_s_memory_against_its_runs() -> None:
    out = run_bench("worker_soak.py", "--minutes", "0.5", "--issues", "200", timeout=300)
    assert re.search(r"; failed runs: 0$", out, re.M), out
    got = re.search(rf"after warm-up \((\d+) runs\), {NUM} at the end \((\d+) runs\): ratio {NUM}", out)
    assert got is not None, out
    warm_runs, end_runs = int(got.group(1)), int(got.group(3))
    assert 0 < warm_runs <= end_runs, out  # the worker ran syncs while it was sampled
    assert float(got.group(2)) > 0 and float(got.group(4)) > 0, out
