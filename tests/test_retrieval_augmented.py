"""Retrieval-augmented generator inputs (issue 28): the nearest training states' tactics shown
beside the premises, a training example's own theorem never among them."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from generator.inputs import TACTIC_MARK, format_input, n_bytes
from generator.model import TacticGenerator
from generator.neighbors import TacticNeighbors
from generator.settings import GeneratorTrainConfig, NeighborsConfig
from prover.config import load_config
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.data.jsonio import iter_jsonl
from prover.data.premise import Premise
from prover.data.theorem import parse_theorem
from tests.conftest import tactic, theorem_record

RING = "a b : ℕ\n⊢ (a + b) * (a + b) = a * a + 2 * a * b + b * b"
SUBST = "x y : ℤ\nh : x = y\n⊢ f x = f y"


def _premise(name: str) -> Premise:
    return Premise(full_name=name, path="A.lean", start=(1, 1), end=(1, 2), kind="theorem", code="",
                   args=(), goal="")


def test_neighbour_tactics_sit_between_the_premises_and_the_state_and_claim_the_budget_first():
    ps = [_premise("Nat.add_comm"), _premise("Nat.mul_comm")]
    text, kept = format_input("⊢ x", ps, 1000, premise_text="name", tactics=["rw  [h]\n  ring", "simp"])
    assert kept == 2
    assert text == "Nat.add_comm\nNat.mul_comm\n> rw [h] ring\n> simp\n⊢ x"  # one line each
    # A budget for the state, both tactics and one premise: the lower-ranked premise goes.
    budget = n_bytes("⊢ x") + n_bytes("> rw [h]\n> simp\n") + n_bytes("Nat.add_comm\n")
    text, kept = format_input("⊢ x", ps, budget, premise_text="name", tactics=["rw [h]", "simp"])
    assert (text, kept) == ("Nat.add_comm\n> rw [h]\n> simp\n⊢ x", 1)
    # Tight: the tactics before any premise, and the lower-ranked tactic first out.
    text, kept = format_input("⊢ x", ps, n_bytes("> rw [h]\n⊢ x"), premise_text="name", tactics=["rw [h]", "simp"])
    assert (text, kept) == ("> rw [h]\n⊢ x", 0)
    # No tactics: the input is what it always was.
    assert format_input("⊢ x", ps, 1000, premise_text="name") == ("Nat.add_comm\nNat.mul_comm\n⊢ x", 2)


def _theorem(name, file_path, steps):
    return parse_theorem(theorem_record(name, file_path, [tactic(t, before=s) for s, t in steps]), "mem", 0, None)


def test_a_theorem_is_never_its_own_neighbour():
    train = [_theorem("a", "A.lean", [(RING, "ring_nf"), (SUBST, "rw [h]")]),
             _theorem("b", "A.lean", [(RING.replace("a b", "c d").replace("a", "c").replace("b", "d"), "ring"),
                                      (SUBST.replace("h :", "hxy :"), "subst hxy")])]
    nb = TacticNeighbors.build(train, SimpleNamespace(file_index={"A.lean": 0}), NeighborsConfig(k=2))
    assert nb.top_tactics(RING, 1) == ["ring_nf"]  # its own step is the nearest
    assert nb.top_tactics(RING, 1, leave_out="A.lean::a") == ["ring"]
    assert "rw [h]" not in nb.distribution(SUBST, leave_out="A.lean::a")
    assert nb.top_tactics(SUBST, 5, leave_out="A.lean::b") == ["rw [h]", "ring_nf"]
    assert nb.top_tactics(RING, 0) == []
    assert nb.top_tactics(RING, 1, leave_out="Z.lean::unknown") == ["ring_nf"]


@pytest.fixture(scope="module")
def ra_generator(tmp_path_factory, mini_root, one_thread):
    run_dir = tmp_path_factory.mktemp("gen-ra")
    cfg = load_config(GeneratorTrainConfig, "configs/generator/tiny.yaml",
                      [f"run_dir={run_dir}", f"data.root={mini_root}", "train.max_steps=3",
                       "train.eval_examples=8", "train.eval_beams=0", "input.neighbor_tactics=2",
                       "neighbors.k=5"])
    from generator.train import train_generator
    return cfg, train_generator(cfg)


def test_training_inputs_show_the_neighbours_of_other_theorems(ra_generator, mini_root):
    cfg, summary = ra_generator
    gen = TacticGenerator.load(summary["model"])
    assert gen.input_cfg.neighbor_tactics == 2 and gen.neighbors is not None and gen.neighbors.cfg.k == 5
    rows = [row for _, row in iter_jsonl(f"{cfg.run_dir}/data/random-train.jsonl.gz")]
    assert len(rows) == summary["train_pairs"] > 1000
    changed = fitted = 0
    for row in rows[:300]:
        key = f"{row['file_path']}::{row['theorem']}"
        shown = row.get("neighbor_tactics", [])
        # Exactly what the saved model's neighbours give with the row's theorem left out.
        assert shown == gen.neighbors.top_tactics(row["state"], 2, leave_out=key)
        lines = [line for line in row["input"].split("\n") if line.startswith(TACTIC_MARK)]
        assert lines == [TACTIC_MARK + " ".join(t.split()) for t in shown][: len(lines)]  # what fits
        changed += shown != gen.neighbors.top_tactics(row["state"], 2)
        fitted += len(lines)
    assert fitted > 200  # most fit: these are statement-level proofs, a long one does not
    assert changed > 30  # leaving the own theorem out matters: its other steps are the nearest


def test_the_model_builds_the_inputs_it_was_trained_on(ra_generator, mini_root):
    cfg, summary = ra_generator
    gen = TacticGenerator.load(summary["model"])
    thm = next(t for t in Dataset(mini_root).theorems("random/test") if t.traced_tactics)
    state = thm.traced_tactics[0].state_before
    text, kept = gen.input_text(state, [_premise("Nat.add_comm")])
    want = gen.neighbors.top_tactics(state, 2)
    assert len(want) == 2 and kept == 1
    assert text == format_input(state, [_premise("Nat.add_comm")], gen.input_cfg.max_bytes, gen.input_cfg.premise_text,
                                gen.input_cfg.max_state_bytes, want)[0]
    # Search and evaluation leave the proved theorems out of the neighbours: the inputs follow.
    top_source = gen.neighbors.sources[gen.neighbors.nearest_states(state, 1)[0][0]]
    gen.neighbors.exclude({top_source})
    assert all(gen.neighbors.sources[d] != top_source for d, _ in gen.neighbors.nearest_states(state))
    assert gen.input_text(state)[0].count("\n" + TACTIC_MARK) + gen.input_text(state)[0].startswith(TACTIC_MARK) == 2
    assert gen.generate([text], num_tactics=3, states=[state])[0]
    gen.neighbors = None  # a retrieval-augmented model without its neighbours cannot build inputs
    with pytest.raises(UserInputError, match="neighbour tactics"):
        gen.input_text(state)


def test_neighbour_templates_are_filled_with_the_premises_shown():
    from generator.tried.instantiate import filled
    steps = [(SUBST, "rw [Int.add_comm]", [("Int.add_comm", "B.lean")]),
             (SUBST.replace("h :", "g :"), "exact Nat.le_refl _", [("Nat.le_refl", "B.lean")]),
             (SUBST.replace("h :", "k :"), "simp", [])]
    train = [parse_theorem(theorem_record("a", "A.lean", [tactic(t, ps, before=s) for s, t, ps in steps]),
                           "mem", 0, None)]
    nb = TacticNeighbors.build(train, SimpleNamespace(file_index={"A.lean": 0}), NeighborsConfig(k=3))
    near = nb.nearest_states(SUBST)
    assert nb.tactics[near[0][0]] == "rw [Int.add_comm]"
    got = filled(nb, near, ["Int.mul_comm", "Foo.bar_baz", "Int.mul_comm", "x.y"], 2)
    # Written with as many components as the template wrote; `simp` names no premise.
    assert got[:2] == ["rw [Int.mul_comm]", "rw [Foo.bar_baz]"]
    assert sorted(got[2:]) == ["exact Foo.bar_baz _", "exact Int.mul_comm _"]
    assert filled(nb, near, ["Int.mul_comm"], 0) == [] and filled(nb, near, [], 3) == []


def test_instantiated_candidates_are_scored_by_the_model(ra_generator, monkeypatch):
    from generator.tried.instantiate import filled, plug_in
    cfg, summary = ra_generator
    gen = TacticGenerator.load(summary["model"])
    nb = gen.neighbors
    d = next(i for i, ps in enumerate(nb.premises) if len(ps) == 1 and ps[0].split(".")[-1] in nb.tactics[i])
    state, names = "⊢ " + nb.tactics[d], ["Nat.zero_lt_one", "Nat.succ_pos"]
    want = filled(nb, nb.nearest_states(state), names, 2)
    assert want
    seen: list[list[str]] = []
    score = gen.score_candidates
    monkeypatch.setattr(gen, "score_candidates", lambda ins, cands: seen.extend(cands) or score(ins, cands))
    text = gen.input_text(state)[0]
    gen.generate([text], num_tactics=2, states=[state], premises=[names])
    assert not set(want) & set(seen[0])  # off by default
    plug_in(gen, 2)
    top = gen.generate([text], num_tactics=2, states=[state], premises=[names])[0]
    assert set(want) <= set(seen[1]) and len(top) == 2 and all(s.logprob < 0 for s in top)


def test_a_premise_bonus_lifts_the_candidates_that_name_a_shown_premise(ra_generator):
    from generator.tried.instantiate import plug_in
    from prover.data.tactic_steps import name_pattern
    cfg, summary = ra_generator
    gen = TacticGenerator.load(summary["model"])
    nb = gen.neighbors
    d = next(i for i, ps in enumerate(nb.premises) if len(ps) == 1 and ps[0].split(".")[-1] in nb.tactics[i])
    state, names = "⊢ " + nb.tactics[d], ["Nat.zero_lt_one"]
    text = gen.input_text(state)[0]
    plug_in(gen, 1)
    plain = gen.generate([text], num_tactics=4, states=[state], premises=[names])[0]
    gen.premise_bonus = 1000.0
    lifted = gen.generate([text], num_tactics=4, states=[state], premises=[names])[0]
    named = [s for s in lifted if name_pattern(names[0]).search(s.tactic)]
    assert named and lifted[0] in named and lifted[0].logprob > 500
    before = {s.tactic: s.logprob for s in plain}
    for s in lifted:  # the bonus is added once to a named candidate, and to nothing else
        if s.tactic in before:
            assert s.logprob == pytest.approx(before[s.tactic] + 1000.0 * (s in named))


def test_candidates_carry_their_evidence_and_a_learned_ranker_reorders_them(ra_generator, tmp_path):
    from generator.tried.instantiate import filled, plug_in
    from generator.tried.rerank import CandidateRanker, RankerConfig, load_ranker
    from prover.data.tactic_steps import name_pattern
    cfg, summary = ra_generator
    gen = TacticGenerator.load(summary["model"])
    assert gen.ranker is None  # a folder without one keeps the hand-set score
    nb = gen.neighbors
    d = next(i for i, ps in enumerate(nb.premises) if len(ps) == 1 and ps[0].split(".")[-1] in nb.tactics[i])
    state, names = "⊢ " + nb.tactics[d], ["Nat.zero_lt_one", "Nat.succ_pos"]
    text = gen.input_text(state)[0]
    plug_in(gen, 2)
    cands = gen.candidates([text], num_beams=4, states=[state], premises=[names])[0]
    by = {c.tactic: c for c in cands}
    assert len(by) == len(cands) and sum(c.in_beam for c in cands) >= 1
    for t, p in nb.distribution(state).items():
        assert by[t].neighbour_prob == pytest.approx(p)
    assert all(by[t].pool_rank == i for i, t in enumerate(gen.pool) if t in by)
    inst = filled(nb, nb.nearest_states(state), names, 2)
    assert inst and all(by[t].instantiated for t in inst)
    for c in cands:
        ranks = [r for r, n in enumerate(names) if name_pattern(n).search(c.tactic)]
        assert c.premise_rank == (ranks[0] if ranks else -1)
    # generate() is the hand-set score over exactly these candidates.
    top = gen.generate([text], num_tactics=4, states=[state], premises=[names])[0]
    assert [s.tactic for s in top] == [c.tactic for c in sorted(cands, key=lambda c: -gen.score(c))][:4]
    # A ranker fitted where the recorded tactic is always the hand-set score's last
    # instantiated candidate puts that one first, and its scores are a distribution.
    gold = min((c for c in cands if c.instantiated), key=gen.score).tactic
    ranker = CandidateRanker.fit([cands] * 20, [gold] * 20, nb.cfg.weight,
                                 RankerConfig(num_trees=30, num_leaves=4, min_data_in_leaf=1))
    gen.ranker = ranker
    top = gen.generate([text], num_tactics=4, states=[state], premises=[names])[0]
    hand_set = [c.tactic for c in sorted(cands, key=lambda c: -gen.score(c))]
    assert top[0].tactic == gold and hand_set.index(gold) > 0
    logp = ranker.logprobs(cands)
    assert sum(np.exp(logp)) == pytest.approx(1.0) and top[0].logprob == pytest.approx(max(logp))
    # It travels with the model folder.
    gen.save_pretrained(tmp_path)
    assert TacticGenerator.load(tmp_path).ranker is None  # the shipped generator never loads one
    again = load_ranker(TacticGenerator.load(tmp_path), tmp_path)
    assert again.ranker is not None and np.allclose(again.ranker.scores(cands), ranker.scores(cands))


def test_a_grown_pool_counts_the_training_tactics_without_the_evaluated_theorems(ra_generator):
    from benchmarks.tactic_generator import grown_pool
    from generator.model import frequent_targets
    cfg, summary = ra_generator
    nb = TacticGenerator.load(summary["model"]).neighbors
    everything = frequent_targets(nb.tactics, 10**6)
    assert grown_pool(nb, 5) == everything[:5] and len(everything) > 5
    key = nb.sources[0]
    nb.exclude({key})
    kept = [t for t, s in zip(nb.tactics, nb.sources) if s != key]
    assert 0 < len(kept) < len(nb.tactics)
    assert grown_pool(nb, 10**6) == frequent_targets(kept, 10**6)
