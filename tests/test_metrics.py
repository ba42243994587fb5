"""Hand-computed checks for retriever.metrics."""

import math

import pytest

from retriever.evaluation.metrics import (
    GRADED_SAME_MODULE,
    KS,
    Judgement,
    aggregate,
    dedupe,
    graded_relevance,
    query_metrics,
)

LOG2_3 = math.log2(3)  # discount at rank 2 ≈ 1.58496


def judge(gold, gold_modules=(), n_same_module=0) -> Judgement:
    return Judgement(frozenset(gold), frozenset(gold_modules), n_same_module)


def no_modules(names):
    return [None] * len(names)


def test_constants():
    assert KS == (1, 5, 10, 20, 50)
    assert GRADED_SAME_MODULE == 0.3


def test_two_gold_among_five():
    names = ["a", "x", "b", "y", "z"]
    m = query_metrics(names, no_modules(names), judge({"a", "b"}))
    assert m is not None
    # top-1 = [a]: 1 hit of 2 gold.
    assert m["R@1"] == pytest.approx(0.5)
    assert m["P@1"] == pytest.approx(1.0)
    # top-5 holds both gold.
    assert m["R@5"] == pytest.approx(1.0)
    assert m["P@5"] == pytest.approx(2 / 5)
    assert m["MRR"] == pytest.approx(1.0)
    # rels [1, 0, 1, 0, 0]: DCG@5 = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    # ideal [1, 1]:         IDCG@5 = 1 + 1/log2(3) ≈ 1.63093
    assert m["nDCG@5"] == pytest.approx(1.5 / (1 + 1 / LOG2_3))
    assert m["nDCG@5"] == pytest.approx(0.919720, abs=1e-6)
    # Rank 1 is gold and the ideal rank 1 is gold: 1 / 1.
    assert m["nDCG@1"] == pytest.approx(1.0)
    assert set(m) == {f"{p}@{k}" for p in ("R", "P", "F1", "nDCG") for k in KS} | {"MRR"}


def test_precision_uses_k_when_list_is_shorter():
    names = ["a", "x", "b", "y", "z"]
    m = query_metrics(names, no_modules(names), judge({"a", "b"}))
    # 2 hits / k, not 2 hits / 5.
    assert m["P@10"] == pytest.approx(2 / 10)
    assert m["P@50"] == pytest.approx(2 / 50)
    assert m["R@50"] == pytest.approx(1.0)


def test_f1():
    names = ["a", "x", "b", "y", "z"]
    m = query_metrics(names, no_modules(names), judge({"a", "b"}))
    # k=1: P=1, R=0.5 -> 2*1*0.5/1.5 = 2/3
    assert m["F1@1"] == pytest.approx(2 / 3)
    # k=5: P=0.4, R=1 -> 2*0.4*1/1.4 = 4/7
    assert m["F1@5"] == pytest.approx(4 / 7)
    # k=10: P=0.2, R=1 -> 0.4/1.2 = 1/3
    assert m["F1@10"] == pytest.approx(1 / 3)


def test_mrr_first_gold_at_rank_3():
    names = ["x", "y", "a", "b"]
    m = query_metrics(names, no_modules(names), judge({"a", "b"}))
    assert m["MRR"] == pytest.approx(1 / 3)
    assert m["R@1"] == 0.0
    assert m["F1@1"] == 0.0


def test_no_gold_found():
    names = ["x", "y", "z"]
    m = query_metrics(names, no_modules(names), judge({"a"}))
    assert m["MRR"] == 0.0
    for k in KS:
        # P = R = 0 -> F1 defined as 0, not a division by zero.
        assert m[f"R@{k}"] == 0.0
        assert m[f"P@{k}"] == 0.0
        assert m[f"F1@{k}"] == 0.0
        assert m[f"nDCG@{k}"] == 0.0


def test_graded_relevance_values():
    j = judge({"a"}, {"M"})
    rels = graded_relevance(["s", "a", "z", "u", "v"], ["M", "M", "N", None, ""], j)
    # s: same module, not gold -> 0.3; a: gold -> 1; z: other module;
    # u, v: unknown module never counts as same-module.
    assert rels == pytest.approx([0.3, 1.0, 0.0, 0.0, 0.0])


def test_graded_ndcg_with_same_module_premise():
    names = ["s", "a", "z"]
    modules = ["M", "M", "N"]
    m = query_metrics(names, modules, judge({"a"}, {"M"}, n_same_module=1), ks=(1, 5))
    # rels [0.3, 1, 0]
    # DCG@1  = 0.3
    # IDCG@1 = 1 (ideal list [1, 0.3])
    assert m["nDCG@1"] == pytest.approx(0.3)
    # DCG@5  = 0.3/log2(2) + 1/log2(3) = 0.3 + 0.63093 = 0.93093
    # IDCG@5 = 1/log2(2) + 0.3/log2(3) = 1 + 0.18928 = 1.18928
    # nDCG@5 = 0.93093 / 1.18928 ≈ 0.782768
    assert m["nDCG@5"] == pytest.approx((0.3 + 1 / LOG2_3) / (1 + 0.3 / LOG2_3))
    assert m["nDCG@5"] == pytest.approx(0.782768, abs=1e-6)
    # Binary metrics ignore the graded premise: the only gold is at rank 2.
    assert m["MRR"] == pytest.approx(0.5)
    assert m["P@1"] == 0.0


def test_ideal_dcg_uses_n_same_module():
    names = ["a"]
    modules = ["M"]
    # Only the gold premise is ranked; the ideal list grows with n_same_module.
    m0 = query_metrics(names, modules, judge({"a"}, {"M"}, n_same_module=0), ks=(5,))
    # DCG@5 = 1, IDCG@5 = 1 (ideal [1]) -> 1
    assert m0["nDCG@5"] == pytest.approx(1.0)

    m3 = query_metrics(names, modules, judge({"a"}, {"M"}, n_same_module=3), ks=(5,))
    # ideal [1, 0.3, 0.3, 0.3]:
    # IDCG@5 = 1 + 0.3/log2(3) + 0.3/log2(4) + 0.3/log2(5)
    #        = 1 + 0.189279 + 0.15 + 0.129203 = 1.468482
    idcg = 1 + 0.3 / LOG2_3 + 0.3 / 2 + 0.3 / math.log2(5)
    assert idcg == pytest.approx(1.468482, abs=1e-6)
    assert m3["nDCG@5"] == pytest.approx(1 / idcg)

    # k cuts the ideal list too: IDCG@1 = 1 regardless of n_same_module.
    m3_1 = query_metrics(names, modules, judge({"a"}, {"M"}, n_same_module=3), ks=(1,))
    assert m3_1["nDCG@1"] == pytest.approx(1.0)


def test_dedupe_keeps_first_occurrence():
    assert dedupe(["x", "a", "x", "b", "a"]) == [0, 1, 3]
    assert dedupe([]) == []


def test_duplicated_non_gold_does_not_push_gold_out():
    names = ["x", "x", "x", "a"]
    m = query_metrics(names, no_modules(names), judge({"a"}), ks=(2,))
    # Deduped list: [x, a] -> a is at rank 2, inside top-2.
    assert m["R@2"] == pytest.approx(1.0)
    assert m["P@2"] == pytest.approx(1 / 2)
    assert m["MRR"] == pytest.approx(1 / 2)
    # rels [0, 1]: DCG@2 = 1/log2(3); IDCG@2 = 1 (ideal [1])
    assert m["nDCG@2"] == pytest.approx(1 / LOG2_3)


def test_duplicated_gold_counts_once():
    names = ["a", "a", "x"]
    m = query_metrics(names, no_modules(names), judge({"a", "b"}), ks=(2,))
    # Deduped list: [a, x] -> 1 hit, not 2.
    assert m["R@2"] == pytest.approx(1 / 2)
    assert m["P@2"] == pytest.approx(1 / 2)
    # rels [1, 0]: DCG@2 = 1; IDCG@2 = 1 + 1/log2(3) ≈ 1.63093 -> ≈ 0.61315
    assert m["nDCG@2"] == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_duplicates_are_removed_with_their_modules():
    # The duplicate's module must be dropped alongside it, so b keeps module M.
    names = ["x", "x", "b"]
    modules = ["N", "N", "M"]
    m = query_metrics(names, modules, judge({"a"}, {"M"}), ks=(2,))
    # Deduped [x (N), b (M)] -> rels [0, 0.3]
    # DCG@2 = 0.3/log2(3); IDCG@2 = 1 (ideal [1]).
    assert m["nDCG@2"] == pytest.approx(0.3 / LOG2_3)


def test_empty_gold_is_none_and_counted():
    assert query_metrics(["a", "b"], [None, None], judge(set())) is None

    names = ["a", "x"]
    scored = query_metrics(names, no_modules(names), judge({"a"}), ks=(1,))
    agg = aggregate([scored, query_metrics(names, no_modules(names), judge(set()))])
    assert agg["n_queries"] == 1
    assert agg["n_no_gold"] == 1
    # The None query does not drag the mean down.
    assert agg["R@1"] == pytest.approx(1.0)


def test_aggregate_means():
    q1 = {"R@1": 1.0, "MRR": 0.5}
    q2 = {"R@1": 0.0, "MRR": 1.0}
    q3 = {"R@1": 0.5, "MRR": 0.0}
    agg = aggregate([q1, None, q2, q3, None])
    # R@1: (1 + 0 + 0.5) / 3 = 0.5;  MRR: (0.5 + 1 + 0) / 3 = 0.5
    assert agg["R@1"] == pytest.approx(0.5)
    assert agg["MRR"] == pytest.approx(0.5)
    assert agg["n_queries"] == 3
    assert agg["n_no_gold"] == 2


def test_aggregate_accepts_a_generator():
    agg = aggregate(m for m in [{"MRR": 0.25}, {"MRR": 0.75}])
    assert agg["MRR"] == pytest.approx(0.5)


def test_aggregate_empty():
    assert aggregate([]) == {"n_queries": 0, "n_no_gold": 0}
    # Only no-gold queries: still no metric keys, no division by zero.
    assert aggregate([None, None]) == {"n_queries": 0, "n_no_gold": 2}


def test_module_length_mismatch_raises():
    with pytest.raises(ValueError):
        query_metrics(["a", "b"], [None], judge({"a"}))
