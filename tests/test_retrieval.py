"""BM25, the Retriever interface and the evaluation harness, on the bundled demo corpus."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from prover.config import DEMO_DATA, load_config

from retriever.settings import RetrievalBenchmarkConfig
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from retriever.base import TheoremContext, top_k
from retriever.baselines.bm25 import BM25Config, BM25Retriever
from retriever.evaluation.evaluate import evaluate, judge
from retriever.baselines.lean_tokens import lean_tokens, plain_tokens
from retriever.evaluation.metrics import Judgement, query_metrics
from retriever.registry import build_retriever


@pytest.fixture(scope="module")
def demo():
    ds = Dataset(DEMO_DATA)
    corpus = ds.corpus()
    queries, no_gold = premise_queries(ds.theorems("random/test"), corpus)
    return corpus, queries, no_gold


def test_top_k_orders_by_score_then_index_and_drops_masked():
    s = np.array([0.5, 2.0, -np.inf, 2.0, 0.5, 1.0])
    assert top_k(s, 3).tolist() == [1, 3, 5]
    assert top_k(s, 5).tolist() == [1, 3, 5, 0, 4]
    # Ties at the cut go to the lower index, whatever order partition left them in.
    assert top_k(np.array([1.0, 1.0, 1.0, 1.0]), 2).tolist() == [0, 1]
    assert top_k(s, 10).tolist() == [1, 3, 5, 0, 4]  # the masked premise never appears


def test_lean_tokens_keep_identifiers_and_notation_whole():
    toks = lean_tokens("h₁ : a ≤ b\n⊢ Nat.succ_le_iff.mp x⁻¹ ∘ (f a)")
    assert toks == ["h₁", ":", "a", "≤", "b", "⊢", "Nat.succ_le_iff.mp", "Nat", "succ_le_iff", "mp",
                    "x", "⁻¹", "∘", "f", "a"]
    assert plain_tokens("(f a) [g, h]") == ["f", "a", "g", "h"]


def test_bm25_returns_only_accessible_premises(demo):
    corpus, queries, _ = demo
    r = BM25Retriever(corpus)
    for q in queries:
        mask = corpus.accessible_mask(q.file_path, q.position)
        hits = r.retrieve([q.state], 1000, [TheoremContext(q.file_path, q.position)])[0]
        assert hits, q.theorem
        assert all(mask[h.index] for h in hits)
        assert len(hits) == int(mask.sum())  # every accessible premise ranked, nothing else
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_bm25_ranks_a_premise_named_in_the_query_first(demo):
    corpus, _, _ = demo
    r = BM25Retriever(corpus)
    target = next(p for p in corpus.premises if p.kind == "theorem" and "_" in p.full_name)
    hits = r.retrieve([target.full_name + " " + target.goal], 3, [None])[0]
    assert hits[0].premise.full_name == target.full_name


def test_bm25_handles_empty_unknown_and_huge_queries(demo):
    corpus, _, _ = demo
    r = BM25Retriever(corpus, BM25Config(max_query_chars=1000))
    out = r.retrieve(["", "zzzz_never_seen ⊢ qqq", "⊢ " + "a + b = b + a " * 10_000], 5, [None] * 3)
    assert [len(x) for x in out] == [5, 5, 5]
    assert all(h.score == 0.0 for h in out[0])  # nothing to match: all ties, ranked by index
    assert [h.index for h in out[0]] == [0, 1, 2, 3, 4]


def test_evaluate_writes_rankings_that_reproduce_the_metrics(demo, tmp_path):
    corpus, queries, no_gold = demo
    assert len(queries) == 13 and no_gold == 12
    r = build_retriever("bm25", corpus)
    path = tmp_path / "rankings.jsonl.gz"
    res = evaluate(r, queries, ks=(1, 5, 10), rankings_k=20, batch_size=4, rankings_path=path)
    rows = [json.loads(line) for line in gzip.open(path, "rt")]
    assert len(rows) == len(queries) == res.n_queries
    for q, row in zip(queries, rows):
        n_accessible = int(corpus.accessible_mask(q.file_path, q.position).sum())
        assert len(row["ranked"]) == min(20, n_accessible)
    recomputed = [query_metrics(row["ranked"], row["ranked_modules"],
                                Judgement(frozenset(row["gold"]), frozenset(row["gold_modules"]),
                                          row["n_same_module"]), (1, 5, 10)) for row in rows]
    for key in ("R@10", "nDCG@10", "MRR"):
        assert res.metrics[key] == pytest.approx(np.mean([m[key] for m in recomputed]), abs=1e-6)
    # BM25 must be far better than chance on the demo: ~30 accessible premises, ~1.5 gold each.
    assert res.metrics["R@10"] > 0.6
    assert res.metrics["n_queries"] == 13


def test_judgement_counts_accessible_same_module_premises(demo):
    corpus, queries, _ = demo
    q = queries[0]
    j = judge(q, corpus)
    mask = corpus.accessible_mask(q.file_path, q.position)
    expected = sum(1 for i, p in enumerate(corpus.premises)
                   if mask[i] and p.path in j.gold_modules and p.full_name not in j.gold)
    assert j.n_same_module == expected
    assert j.gold == {corpus.premises[i].full_name for i in q.gold}


def test_benchmark_resumes_rows_already_written(tmp_path, monkeypatch):
    from retriever.evaluation import benchmark
    cfg = load_config(RetrievalBenchmarkConfig, None,
                      [f"results_dir={tmp_path}", "retrievers=[bm25-plain,bm25]", "latency_queries=3"])
    first = benchmark.run_retrieval_benchmark(cfg)
    assert [r["retriever"] for r in first["rows"]] == ["bm25-plain", "bm25"]
    md = (tmp_path / "retrieval-demo_data-random-test.md").read_text()
    main_table = md.split("### ")[0]  # before the comparison and robustness sections
    assert main_table.count("| bm25") == 2 and "### Robustness" in md
    rob = first["rows"][1]["robustness"]["shuffle"]
    assert rob["n_queries"] == 13 and rob["R@10_unperturbed"] == first["rows"][1]["metrics"]["R@10"]
    assert first["rows"][1]["parameters"] == 0 and first["rows"][1]["gflops_per_query"] == 0

    def boom(*a, **k):
        raise AssertionError("a finished row was recomputed")
    monkeypatch.setattr(benchmark, "build_retriever", boom)
    again = benchmark.run_retrieval_benchmark(cfg)
    assert again["rows"] == first["rows"]
    # A tagged run (another model size on the same split) writes its own file.
    cfg.results_tag = "cpu"
    cfg.retrievers = ["bm25-plain"]
    monkeypatch.undo()
    tagged = benchmark.run_retrieval_benchmark(cfg)
    assert [r["retriever"] for r in tagged["rows"]] == ["bm25-plain"]
    assert json.loads((tmp_path / "retrieval-demo_data-random-test-cpu.json").read_text())["rows"] \
        == tagged["rows"]
    assert len(json.loads((tmp_path / "retrieval-demo_data-random-test.json").read_text())["rows"]) == 2


def test_training_table_states_each_stage_and_why_it_stopped():
    from retriever.evaluation.evaluate import training_table
    rows = [{"retriever": "cfr+car", "training": {
        "pretrain": {"steps": 10, "seconds": 120.0, "cpu_seconds": 60.0, "done": False,
                     "stopped_by": "budget"},
        "cfr": {"steps": 5, "seconds": 30.0, "cpu_seconds": 30.0, "done": True},
        "car": {"steps": 7, "train_seconds": 90.0, "train_cpu_seconds": 180.0, "done": False},
        "extra": None}}, {"retriever": "bm25"}]
    lines = training_table(rows).splitlines()
    assert lines[2:] == ["| cfr+car | pretrain | 10 | 2.0 | 1.0 | budget |",
                         "| cfr+car | cfr | 5 | 0.5 | 0.5 | end |",
                         "| cfr+car | car | 7 | 1.5 | 3.0 | budget |",
                         "| cfr+car | extra | missing | | | |"]
    assert training_table([{"retriever": "bm25"}]) == ""


def test_each_size_trains_car_after_the_cfr_it_reranks_and_benchmarks_that_pair():
    from conftest import REPO as repo, benchmark_script
    from retriever.evaluation.benchmark import TRAINED_BY
    from retriever.registry import is_registered
    pipeline = benchmark_script("retriever_pipeline")
    assert pipeline.stages_for(str(repo / "configs/retriever/small.yaml"))["train-car"][1] == ["train-cfr"]
    assert pipeline.stages_for(str(repo / "configs/retriever/cpu-car.yaml"))["train-car"][1] == ["train-cfr-conventional"]
    # CAR's chain starts first: its CFR comes right after pretrain, before the other CFR.
    assert list(pipeline.stages_for(str(repo / "configs/retriever/cpu-car.yaml")))[:3] == [
        "pretrain", "train-cfr-conventional", "train-car"]
    # cpu.yaml, the shipped first stage, has no CAR recipe: its pipeline trains no CAR.
    assert "train-car" not in pipeline.stages_for(str(repo / "configs/retriever/cpu.yaml"))
    assert list(pipeline.stages_for(str(repo / "configs/retriever/small.yaml")))[:3] == [
        "pretrain", "train-cfr", "train-car"]
    # The fusion stage waits for the CFR its members load (cpu.yaml: conventional CFR).
    assert pipeline.stages_for(str(repo / "configs/retriever/cpu.yaml"))["train-fusion"][1] == [
        "train-cfr-conventional"]
    # The cpu benchmark scores the CAR its training config trains, and records that run's budget.
    bench = load_config(RetrievalBenchmarkConfig, str(repo / "configs/retrieval/benchmark_cpu.yaml"))
    car_rows = [r for r in bench.retrievers if r.startswith("cfr") and "+car" in r]
    assert car_rows == ["cfr-conventional+car-only", "cfr-conventional+car"]
    for name in bench.retrievers:
        assert is_registered(name)
    assert all(TRAINED_BY[r] == ["pretrain", "cfr-conventional", "car-conventional"] for r in car_rows)


def test_benchmark_model_overrides_reach_the_training_config():
    from conftest import REPO as repo
    from retriever.registry import training_config
    from retriever.settings import RetrieverTrainConfig
    bench = load_config(RetrievalBenchmarkConfig, str(repo / "configs/retrieval/benchmark_cpu.yaml"),
                        ["retriever.run_dir=/elsewhere", "retriever.model_overrides=[car.k1=20,car.first_stage_weight=0]"])
    tc = training_config(bench)
    assert (tc.car.k1, tc.car.first_stage_weight, tc.run_dir) == (20, 0.0, "/elsewhere")
    plain = training_config(load_config(RetrievalBenchmarkConfig, str(repo / "configs/retrieval/benchmark_cpu.yaml")))
    own = load_config(RetrieverTrainConfig, str(repo / "configs/retriever/cpu-car.yaml"))
    assert (plain.car.k1, plain.car.first_stage_weight) == (own.car.k1, own.car.first_stage_weight)
    assert own.car.k1 != 20  # so the override above did change something


def test_git_commit_of_a_shipped_copy_comes_from_the_environment(tmp_path, monkeypatch):
    from prover.utils.runinfo import git_commit
    monkeypatch.delenv("PROVER_GIT_COMMIT", raising=False)
    assert git_commit(tmp_path) == "unknown"
    monkeypatch.setenv("PROVER_GIT_COMMIT", "0123abc")
    assert git_commit(tmp_path) == "0123abc"
    assert git_commit() == "0123abc"  # the shipper's word wins over this checkout's own git
