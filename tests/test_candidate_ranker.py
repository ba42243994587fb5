"""The learned candidate ranker (generator/tried/rerank.py) on hand-made candidates."""
from __future__ import annotations

import json

import numpy as np
import pytest

from generator.candidate import Candidate
from generator.tried.rerank import FEATURES, HEADS, CandidateRanker, RankerConfig, features, head


def _cand(tactic, lp, nb=0.0, beam=False, pool=-1, inst=False, prank=-1):
    return Candidate(tactic, lp, nb, beam, pool, inst, prank)


def test_features_read_the_evidence_within_the_state():
    cs = [_cand("simp", -1.0, 0.0, True, 1), _cand("rw [foo]", -5.0, 0.6, inst=True, prank=0),
          _cand("exact bar", -3.0, 0.4, True)]
    x = features(cs, 0.5)
    col = {f: x[:, i] for i, f in enumerate(FEATURES)}
    assert list(col["model_rank"]) == [0, 2, 1] and list(col["neighbour_rank"]) == [-1, 0, 1]
    assert list(col["model_gap"]) == [0.0, -4.0, -2.0]
    # The mixture is the hand-set score: log(0.5 P_model + 0.5 P_neighbours).
    assert col["mixture"][1] == pytest.approx(np.log(0.5 * np.exp(-5.0) + 0.5 * 0.6))
    assert list(col["premise_rank"]) == [-1, 0, -1] and list(col["instantiated"]) == [0, 1, 0]
    assert list(col["head"]) == [HEADS.index("simp"), HEADS.index("rw"), HEADS.index("exact")]
    assert head("frobnicate x") == len(HEADS) and head("") == len(HEADS)
    # Without neighbours consulted, the mixture is the model's own log-probability.
    alone = [Candidate("simp", -1.0, None, True, 0, False, -1), Candidate("ring", -2.0, None, True, 1, False, -1)]
    assert list(features(alone, 0.5)[:, FEATURES.index("mixture")]) == [-1.0, -2.0]


def test_a_ranker_learns_which_evidence_to_trust_and_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    groups, golds = [], []
    for _ in range(200):  # the recorded tactic is the instantiated one with the first premise
        cs = [_cand(f"t{j}", float(rng.normal(-5, 2)), float(rng.random()), beam=j < 4) for j in range(10)]
        cs.append(_cand("rw [p0]", -9.0, 0.0, inst=True, prank=0))
        cs.append(_cand("rw [p1]", -8.0, 0.0, inst=True, prank=1))
        groups.append(cs)
        golds.append("rw  [p0]")  # whitespace-normalized when labelled
    groups.append([_cand("x", -1.0)])  # no recorded tactic among them: left out
    golds.append("y")
    r = CandidateRanker.fit(groups, golds, 0.5, RankerConfig(num_trees=20, min_data_in_leaf=5))
    assert r.fitted_on["states"] == 200
    assert all(int(np.argmax(r.scores(g))) == 10 for g in groups[:50])
    assert np.exp(r.logprobs(groups[0])).sum() == pytest.approx(1.0)
    r.save(tmp_path)
    again = CandidateRanker.load(tmp_path)
    assert np.allclose(again.scores(groups[0]), r.scores(groups[0])) and again.mix_weight == 0.5
    settings = json.loads((tmp_path / "candidate_ranker.json").read_text())
    settings["features"] = settings["features"][:-1]
    (tmp_path / "candidate_ranker.json").write_text(json.dumps(settings))
    with pytest.raises(ValueError, match="refit"):
        CandidateRanker.load(tmp_path)
    assert CandidateRanker.load(tmp_path / "nothing") is None
    with pytest.raises(ValueError, match="nothing to fit"):
        CandidateRanker.fit([[_cand("x", -1.0)]], ["y"], 0.5)


def test_the_benchmark_orderings_read_one_dump_as_each_generator_would():
    """One dumped state serves every ordering: the shipped mixture never sees the instantiated-
    only candidates, the bonus lifts those naming a premise shown, the neighbours rank by vote."""
    from benchmarks.tried.candidate_ranker import candidates_of, hits, orderings
    row = {"key": "A.lean::t#0", "gold": "rw [p0]", "cands": [
        ["simp", -1.0, 0.0, 1, 0, 0, -1], ["ring", -2.0, 0.5, 0, 1, 0, -1],
        ["rw [p0]", -20.0, 0.0, 0, -1, 1, 0]]}
    o = orderings(0.5, None)
    cands = candidates_of(row)
    assert o["mixture (shipped)"](cands)[2] == -np.inf and o["neighbours alone"](cands)[:2] == [-np.inf, 0.5]
    lifted = o["mixture + inst3 + bonus 3"](cands)
    assert lifted[2] == pytest.approx(np.log(0.5) - 20.0 + 3.0)
    assert list(hits([row], o["mixture (shipped)"])) == [0.0]
    assert list(hits([row], o["mixture + inst3 + bonus 3"])) == [1.0]  # 3 candidates, all in the top 8
    assert list(hits([dict(row, gold="simp")], o["neighbours alone"])) == [0.0]  # simp has no vote


def test_the_committed_select_table_renders_from_its_json():
    from benchmarks.tried.candidate_ranker import markdown
    from tests.conftest import REPO
    path = REPO / "benchmarks/results/candidate-ranker-mathlib-src-leandojo-real-select.json"
    res = json.loads(path.read_text())
    assert markdown(res) == path.with_suffix(".md").read_text()
    rows = {r["row"]: r["em@8"] for r in res["rows"]}
    # The ceiling holds every ordering of the same candidates.
    for cond in ("none", "gold", "fusion"):
        assert all(v <= rows[f"any candidate | {cond}"] for k, v in rows.items() if k.endswith(f"| {cond}"))
