"""Paired bootstrap intervals, on cases whose answer is known, and in the retrieval benchmark."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from prover.config import load_config

from retriever.settings import RetrievalBenchmarkConfig
from retriever.evaluation.bootstrap import mean_interval, paired_intervals, resampled_means


def test_identical_rows_differ_by_exactly_zero_and_have_ratio_one():
    a = np.random.default_rng(1).random(50)
    ci = paired_intervals(a, a.copy())
    assert ci.diff == (0.0, 0.0) and ci.ratio == (1.0, 1.0) and ci.a == ci.b


def test_a_constant_shift_is_exactly_that_shift():
    # Multiples of 1/4 over 8 queries: every resampled mean is exact in binary floating point.
    a = np.array([0, 0.25, 0.5, 1, 0, 0.75, 1, 0.5])
    ci = paired_intervals(a + 0.5, a)
    assert ci.diff == (0.5, 0.5)
    assert ci.a == (ci.b[0] + 0.5, ci.b[1] + 0.5)


def test_two_queries_by_hand():
    # a = [0, 1]: a resampled mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so the 2.5th
    # and 97.5th percentiles of 2000 resamples are 0 and 1 (each end has ~500 draws).
    a, b = np.array([0.0, 1.0]), np.array([1.0, 1.0])
    ci = paired_intervals(a, b)
    assert ci.a == (0.0, 1.0) and ci.b == (1.0, 1.0)
    assert ci.diff == (-1.0, 0.0) and ci.ratio == (0.0, 1.0)
    means = resampled_means(a)[:, 0]
    assert set(np.unique(means)) == {0.0, 0.5, 1.0}
    assert np.mean(means == 0.5) == pytest.approx(0.5, abs=0.05)


def test_ratio_is_undefined_when_a_resampled_mean_is_zero():
    assert paired_intervals(np.array([1.0, 0.0]), np.array([0.0, 1.0])).ratio is None


def test_interval_matches_the_normal_approximation_and_is_seeded():
    a = np.tile([0.0, 1.0], 200)  # mean 0.5, standard error 0.025
    lo, hi = mean_interval(a)
    assert lo == pytest.approx(0.5 - 1.96 * 0.025, abs=0.006)
    assert hi == pytest.approx(0.5 + 1.96 * 0.025, abs=0.006)
    assert mean_interval(a) == (lo, hi)
    x = np.random.default_rng(2).random(100)  # continuous values: seeds give other endpoints
    assert mean_interval(x, seed=0) == mean_interval(x, seed=0) != mean_interval(x, seed=1)


def test_paired_rows_must_have_equal_shapes():
    with pytest.raises(ValueError, match="equal 1-d shapes"):
        paired_intervals(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="no queries"):
        mean_interval(np.zeros(0))


def test_benchmark_rows_get_intervals_and_comparisons_also_when_resumed(tmp_path, monkeypatch):
    from retriever.evaluation import benchmark
    from retriever.evaluation.evaluate import per_query_from_rankings
    cfg = load_config(RetrievalBenchmarkConfig, None,
                      [f"results_dir={tmp_path}", "retrievers=[bm25,locality,bm25+locality]",
                       "latency_queries=2", "robustness=false"])
    first = benchmark.run_retrieval_benchmark(cfg)
    rows = {r["retriever"]: r for r in first["rows"]}
    for r in rows.values():
        for m in ("R@10", "MRR"):
            lo, hi = r[f"{m}_ci"]
            assert lo <= r["metrics"][m] <= hi
    assert "R@10_ratio_to_bm25_ci" not in rows["bm25"] and "R@10_diff_to_locality_ci" not in rows["locality"]
    assert "R@10_diff_to_locality_ci" in rows["bm25"] and "R@10_ratio_to_bm25_ci" in rows["locality"]
    # The row's interval is the bootstrap of the per-query values its rankings file holds.
    keys, values = per_query_from_rankings(
        tmp_path / "rankings" / "retrieval-demo_data-random-test-bm25+locality.jsonl.gz")
    assert len(keys) == first["n_queries"]
    assert values["R@10"].mean() == pytest.approx(rows["bm25+locality"]["metrics"]["R@10"], abs=1e-6)
    lo, hi = paired_intervals(values["R@10"], per_query_from_rankings(
        tmp_path / "rankings" / "retrieval-demo_data-random-test-locality.jsonl.gz")[1]["R@10"]).diff
    assert rows["bm25+locality"]["R@10_diff_to_locality_ci"] == [round(lo, 6), round(hi, 6)]
    md = (tmp_path / "retrieval-demo_data-random-test.md").read_text()
    r10 = rows["bm25"]["metrics"]["R@10"]
    ci = rows["bm25"]["R@10_ci"]
    assert f"{100 * r10:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" in md
    assert "### Paired comparisons" in md and re.search(r"\| locality \| \[\d+\.\d\d, \d+\.\d\d\] \|", md)
    # A resumed run recomputes the same intervals from the rankings files, building nothing.
    monkeypatch.setattr(benchmark, "build_retriever", lambda *a, **k: pytest.fail("row recomputed"))
    again = benchmark.run_retrieval_benchmark(cfg)
    assert again["rows"] == first["rows"]
    assert json.loads((tmp_path / "retrieval-demo_data-random-test.json").read_text())["bootstrap"] \
        == {"resamples": 2000, "seed": 0, "level": 0.95, "paired_over": "theorems"}


def test_old_rows_without_intervals_still_render():
    from retriever.evaluation.evaluate import comparison_table, markdown_table
    row = {"retriever": "bm25", "metrics": {"R@10": 0.3, "MRR": 0.25}}
    assert "| bm25 | " in markdown_table([row]) and "[" not in markdown_table([row])
    assert comparison_table([row]) == ""


def test_clusters_resample_theorems_not_queries():
    # Two theorems of 50 identical queries each: one all hits, one all misses. Resampling
    # queries sees 100 independent draws (a narrow interval); resampling theorems sees two,
    # so a mean is 0, 0.5 or 1, as with two queries.
    a = np.array([1.0] * 50 + [0.0] * 50)
    theorems = ["t1"] * 50 + ["t2"] * 50
    assert mean_interval(a, clusters=theorems) == (0.0, 1.0)
    lo, hi = mean_interval(a)
    assert 0.35 < lo < hi < 0.65
    means = resampled_means(a, clusters=theorems)[:, 0]
    assert set(np.unique(means)) == {0.0, 0.5, 1.0}


def test_each_query_its_own_cluster_equals_the_query_bootstrap():
    x = np.random.default_rng(3).random(40)
    assert mean_interval(x, clusters=list(range(40))) == mean_interval(x)
    assert paired_intervals(x, x[::-1], clusters=list(range(40))) == paired_intervals(x, x[::-1])


def test_cluster_mean_weights_theorems_by_their_queries():
    # A resample holding theorem t1 (3 queries, all 1) and t2 (1 query, 0) has mean 3/4.
    a = np.array([1.0, 1.0, 1.0, 0.0])
    means = resampled_means(a, clusters=["t1", "t1", "t1", "t2"])[:, 0]
    assert set(np.round(np.unique(means), 6)) == {0.0, 0.75, 1.0}
    with pytest.raises(ValueError, match="cluster labels"):
        resampled_means(a, clusters=["t1"])
