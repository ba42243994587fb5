"""Tactic neighbours: the tactics of the nearest training states, and their mixture with the
model's distribution (generator/neighbors.py). Hand-made training states; one tiny model."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from generator.evaluate import EvalExample, evaluate_neighbors
from generator.model import TacticGenerator
from generator.neighbors import NEIGHBORS_DIR, TacticNeighbors
from generator.settings import InputConfig, ModelConfig, NeighborsConfig
from prover.data.theorem import parse_theorem
from tests.conftest import REPO, tactic, theorem_record

RING = "a b : ℕ\n⊢ (a + b) * (a + b) = a * a + 2 * a * b + b * b"
SUBST = "x y : ℤ\nh : x = y\n⊢ f x = f y"
LIST = "l : List α\n⊢ l.reverse.reverse = l"


def _theorem(name, file_path, steps):
    return parse_theorem(theorem_record(name, file_path, [tactic(t, before=s) for s, t in steps]), "mem", 0, None)


@pytest.fixture(scope="module")
def train():
    return [_theorem("a", "A.lean", [(RING, "ring"), (SUBST, "rw [h]")]),
            _theorem("b", "A.lean", [(RING.replace("a b", "c d").replace("a", "c").replace("b", "d"), "ring"),
                                     (LIST, "simp")]),
            _theorem("c", "B.lean", [(SUBST, "omega")])]  # its file is not in the corpus: not training


@pytest.fixture(scope="module")
def corpus():
    return SimpleNamespace(file_index={"A.lean": 0})


def test_the_nearest_states_vote_for_their_tactics(train, corpus):
    nb = TacticNeighbors.build(train, corpus, NeighborsConfig(k=2, temperature=1.0))
    assert len(nb.tactics) == 4 and "omega" not in nb.tactics
    dist = nb.distribution(RING)
    assert math.isclose(sum(dist.values()), 1.0)
    assert next(iter(dist)) == "ring" and set(dist) <= {"ring", "rw [h]", "simp"}
    assert next(iter(nb.distribution(SUBST + "\n"))) == "rw [h]"
    # A state that shares no token with any training state gets no neighbours.
    assert nb.distribution("zzz") == {}
    # k = 1: the single nearest state carries all the mass.
    assert TacticNeighbors.build(train, corpus, NeighborsConfig(k=1)).distribution(LIST) == {"simp": 1.0}


def test_the_softmax_temperature_sharpens_the_votes(train, corpus):
    cold = TacticNeighbors.build(train, corpus, NeighborsConfig(k=4, temperature=0.01)).distribution(RING)
    hot = TacticNeighbors.build(train, corpus, NeighborsConfig(k=4, temperature=1e6)).distribution(RING)
    assert cold["ring"] == pytest.approx(1.0)
    # Nearly uniform over the states that share a token: ring has two of them.
    assert hot["ring"] == pytest.approx(2 * max(v for t, v in hot.items() if t != "ring"), rel=1e-3)


def test_the_mixture_is_a_log_probability(train, corpus):
    nb = TacticNeighbors.build(train, corpus, NeighborsConfig(k=2, weight=0.25))
    assert nb.mix(math.log(0.2), 0.6) == pytest.approx(math.log(0.75 * 0.2 + 0.25 * 0.6))
    assert nb.mix(math.log(0.2), 0.0) == pytest.approx(math.log(0.75 * 0.2))
    for w, expected in ((0.0, math.log(0.2)), (1.0, math.log(0.6))):
        nb.cfg.weight = w
        assert nb.mix(math.log(0.2), 0.6) == pytest.approx(expected)
    with pytest.raises(ValueError, match="weight in"):
        NeighborsConfig(k=2, weight=1.5)


def test_neighbours_travel_with_the_model_and_join_its_candidates(train, corpus, tmp_path):
    torch.manual_seed(0)  # an untrained model: the mixing, not the model, is under test
    gen = TacticGenerator.create(ModelConfig(d_model=32, d_ff=64, num_layers=1, num_decoder_layers=1,
                                             num_heads=2, d_kv=16), InputConfig(max_bytes=128, max_target_bytes=16))
    gen.save_pretrained(tmp_path / "bare")
    assert TacticGenerator.load(tmp_path / "bare").neighbors is None
    states = [RING, LIST]
    inputs = [s for s in states]  # the bare state is the model's input without premises
    alone = gen.generate(inputs, num_tactics=4)
    nb = TacticNeighbors.build(train, corpus, NeighborsConfig(k=2, weight=0.5))
    gen.neighbors = nb
    assert [[s.tactic for s in r] for r in gen.generate(inputs, num_tactics=4)] == \
        [[s.tactic for s in r] for r in alone]  # without the raw states nothing changes
    mixed = gen.generate(inputs, num_tactics=4, states=states)
    for state, inp, row in zip(states, inputs, mixed):
        dist = nb.distribution(state)
        # The neighbours' most probable tactic is suggested, scored by the mixture.
        top = next(iter(dist))
        got = {s.tactic: s.logprob for s in row}
        assert top in got
        model = gen.score_candidates([inp], [[top]])[0][0]
        assert got[top] == pytest.approx(nb.mix(model, dist[top]), abs=1e-4)
        assert [s.logprob for s in row] == sorted((s.logprob for s in row), reverse=True)
    gen.save_pretrained(tmp_path / "m")
    assert (tmp_path / "m" / NEIGHBORS_DIR).is_dir()
    again = TacticGenerator.load(tmp_path / "m")
    assert again.neighbors.cfg == nb.cfg and again.neighbors.tactics == nb.tactics
    assert again.neighbors.distribution(RING) == pytest.approx(nb.distribution(RING))
    with pytest.raises(ValueError, match="2 inputs but 1 states"):
        gen.generate(inputs, states=states[:1])


def test_raw_scores_and_the_neighbours_alone_are_settings_a_config_can_ship(train, corpus):
    """temperature null: votes proportional to the raw BM25 scores; weight 1: the neighbours alone
    rank, so a candidate none of them proposed is no suggestion (not one scored -inf)."""
    with pytest.raises(ValueError, match="temperature > 0 or null"):
        NeighborsConfig(k=2, temperature=0.0)
    raw = TacticNeighbors.build(train, corpus, NeighborsConfig(k=4, temperature=None, weight=1.0))
    near = raw.nearest_states(RING)
    scores = {}
    for d, score in near:
        scores[raw.tactics[d]] = scores.get(raw.tactics[d], 0.0) + score
    total = sum(scores.values())
    assert raw.distribution(RING) == pytest.approx({t: v / total for t, v in scores.items()})
    torch.manual_seed(0)
    gen = TacticGenerator.create(ModelConfig(d_model=32, d_ff=64, num_layers=1, num_decoder_layers=1,
                                             num_heads=2, d_kv=16), InputConfig(max_bytes=128, max_target_bytes=16))
    gen.neighbors = raw
    row = gen.generate([RING], num_tactics=8, states=[RING])[0]
    dist = raw.distribution(RING)
    assert [s.tactic for s in row] == list(dist)  # the model's own candidates are gone
    assert [s.logprob for s in row] == pytest.approx([math.log(p) for p in dist.values()])
    # A state with no neighbours falls back to the model's own candidates and scores.
    assert gen.generate(["zzz"], num_tactics=2, states=["zzz"])[0]


def test_the_neighbours_baseline_counts_hits(train, corpus):
    nb = TacticNeighbors.build(train, corpus, NeighborsConfig(k=2))
    examples = [EvalExample("T", "X.lean", None, s, t, (), i)
                for i, (s, t) in enumerate([(RING, "ring"), (SUBST, "rw  [h]"), (LIST, "rfl")])]
    row = evaluate_neighbors(examples, nb, num_tactics=1)
    assert row["per_example"] == {"hit@1": [1, 1, 0]}  # whitespace-normalized match
    assert row["exact_match@1"] == pytest.approx(2 / 3)
    assert np.isclose(evaluate_neighbors(examples, nb, num_tactics=8)["exact_match@8"], 2 / 3)


def test_the_selection_ranks_the_union_by_the_mixture():
    from tests.conftest import benchmark_script
    sel = benchmark_script("generator_neighbors_selection")
    scores = {"simp": math.log(0.3), "rfl": math.log(0.1), "ring": math.log(0.01)}
    near = [("ring", 10.0), ("ring", 9.0), ("rfl", 1.0)]  # raw scores: ring 0.95, rfl 0.05
    # simp 0.5 * 0.3 = 0.15; rfl 0.5 * 0.1 + 0.5 * 0.05 = 0.075; ring 0.5 * 0.01 + 0.5 * 0.95 = 0.48
    assert sel.top_of(scores, ["simp", "rfl"], near, None, 0.5) == ["ring", "simp", "rfl"]
    assert sel.top_of(scores, ["simp", "rfl"], near, None, 0.5, n=1) == ["ring"]
    # Weight 0.1: ring 0.9 * 0.01 + 0.1 * 0.95 = 0.104 < simp 0.27.
    assert sel.top_of(scores, ["simp", "rfl"], near, None, 0.1)[0] == "simp"
    assert sel.hit("ring  ", ["simp", "ring"]) == 1 and sel.hit("omega", ["simp"]) == 0


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "results").glob("tactic-neighbors-selection-*.json")),
                         ids=lambda p: p.stem)
def test_committed_selection_renders_from_its_json_and_chose_its_best(path):
    import json
    from tests.conftest import benchmark_script
    result = json.loads(path.read_text())
    assert benchmark_script("generator_neighbors_selection").markdown(result) == path.with_suffix(".md").read_text()
    assert len(result["grid"]) == 60
    if "rule" not in result:  # the committed run on real val chose its point-estimate best
        assert result["chosen"]["em"] == max(g["em"] for g in result["grid"])
    else:  # a run under the rule for close calls ships the best only beyond the noise (issue 52's
        # run compared it with the simplest setting; later runs with the shipped one)
        against = "shipped" if "best_minus_shipped_ci" in result["rule"] else "simplest"
        best_ok = result["rule"][f"best_minus_{against}_ci"][0] > 0
        kept = result["rule"]["best"] if best_ok else result["rule"][against]
        assert {k: result["chosen"][k] for k in ("k", "temperature", "weight")} == \
            {k: kept[k] for k in ("k", "temperature", "weight")}


def test_the_selection_keeps_the_shipped_setting_unless_the_best_beats_it_beyond_the_noise():
    """Issue 62: the rule compares the best setting with what ships (cpu.yaml's `neighbors`),
    not with the simplest setting, which never shipped."""
    from tests.conftest import benchmark_script
    sel = benchmark_script("generator_neighbors_selection")
    assert sel.shipped_setting() == {"k": 50, "temperature": 3.0, "weight": 0.5}  # cpu.yaml
    theorems = [f"t{i // 2}" for i in range(40)]  # 20 theorems of 2 tactics
    shipped = {"k": 50, "temperature": 3.0, "weight": 0.5}
    grid = [{"k": 10, "temperature": None, "weight": 1.0, "em": 0.3},
            {**shipped, "em": 0.5}, {"k": 50, "temperature": None, "weight": 0.5, "em": 0.525}]
    base = [i % 2 for i in range(40)]  # 0.5
    # The best gains one tactic of 40 over the shipped one: inside the noise, so the shipped one stays,
    # though it beats the simplest (the first setting) by far.
    close = [[0] * 40, base, base[:-1] + [1]]
    rule = sel.choose(grid, close, shipped, theorems)
    assert rule["best"] is grid[2] and rule["shipped"] is grid[1] and rule["kept"] is grid[1]
    assert rule["best_minus_shipped_ci"][0] <= 0 and "stays" in rule["why"]
    # A best that wins on every theorem is chosen.
    grid[2]["em"] = 1.0
    rule = sel.choose(grid, [[0] * 40, base, [1] * 40], shipped, theorems)
    assert rule["kept"] is grid[2] and rule["best_minus_shipped_ci"][0] > 0
