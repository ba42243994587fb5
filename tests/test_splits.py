"""Checks for prover.data.splits on hand-made theorems (exact outcomes) and mathlib-src-mini."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from prover.data.jsonio import load_json
from prover.data.splits import (
    STRATEGIES,
    Split,
    format_table,
    make_split,
    premise_frequency,
    proof_length,
    split_table,
    theorem_premises,
    write_split,
)
from prover.data.theorem import AnnotatedPremise, Theorem, TracedTactic, load_theorems

from tests.conftest import DATA_ROOT as DATA, require  # noqa: E402  (the one resolver)
MINI = DATA / "mathlib-src-mini" / "random"
SAMPLE = DATA / "leandojo-sample" / "test.json"


def tac(text: str, *premises: str) -> TracedTactic:
    prems = tuple(AnnotatedPremise(p, "Defs.lean", (1, 1), (1, 5)) for p in premises)
    return TracedTactic(text, text, prems, "⊢ True", "no goals")


def thm(name: str, *tactics: TracedTactic) -> Theorem:
    return Theorem("https://example.org/repo", "abc", "Foo.lean", name, (1, 1), (2, 1), tactics)


def names(theorems: list[Theorem]) -> list[str]:
    return [t.full_name for t in theorems]


def assert_partition(split: Split, theorems: list[Theorem]) -> None:
    parts = names(split.train) + names(split.val) + names(split.test)
    assert len(parts) == len(set(parts)) == len(theorems)
    assert set(parts) == set(names(theorems))


@pytest.fixture(scope="module")
def mini() -> list[Theorem]:
    if not MINI.exists():
        require(MINI)
    return [t for part in ("train", "val", "test") for t in load_theorems(MINI / f"{part}.json")]


# --- per-theorem measures ---------------------------------------------------------------

def test_measures():
    t = thm("t", tac("rw [a, b]", "a", "b", "a"), tac("simp", "c"), tac("rfl"))
    assert proof_length(t) == 3
    assert proof_length(t, "chars") == len("rw [a, b]") + len("simp") + len("rfl")
    assert premise_frequency(t) == pytest.approx((2 + 1 + 0) / 3)  # "a" counts once per tactic
    empty = thm("e")
    assert proof_length(empty) == 0 and premise_frequency(empty) == 0.0
    with pytest.raises(ValueError, match="length measure"):
        proof_length(t, "lines")


# --- hand-made splits with exact outcomes -------------------------------------------------

def test_random_sizes_fractions_and_seeds():
    ts = [thm(f"t{i}", tac("rfl")) for i in range(20)]
    s = make_split(ts, "random", 0.1, 0.25, seed=1)
    assert (len(s.train), len(s.val), len(s.test)) == (13, 2, 5)
    assert_partition(s, ts)
    again = make_split(ts, "random", 0.1, 0.25, seed=1)
    assert (names(again.train), names(again.val), names(again.test)) == (
        names(s.train), names(s.val), names(s.test))
    other = make_split(ts, "random", 0.1, 0.25, seed=2)
    assert names(other.train) != names(s.train)


@pytest.mark.parametrize("n_val, n_test, message", [
    (1.0, 1, "fraction"), (-1, 1, ">= 0"), (True, 1, "int count"), ("3", 1, "int count"),
    (15, 6, "exceeds"),
])
def test_bad_sizes(n_val, n_test, message):
    ts = [thm(f"t{i}", tac("rfl")) for i in range(20)]
    with pytest.raises(ValueError, match=message):
        make_split(ts, "random", n_val, n_test)


def test_bad_strategy_and_measure():
    ts = [thm("t", tac("rfl"))]
    with pytest.raises(ValueError, match="strategy"):
        make_split(ts, "novel", 0, 0)
    with pytest.raises(ValueError, match="length measure"):
        make_split(ts, "pl", 0, 0, length_measure="lines")


def test_ri_exact():
    # usage counts: a 1, b 2, c 5 (common). Visiting a then b fills a pool of 3 >= 1 + 1.
    ts = [
        thm("t0", tac("rfl")),
        thm("t1", tac("x", "a", "c")),
        thm("t2", tac("x", "b"), tac("y", "c")),
        thm("t3", tac("x", "b", "c")),
        thm("t4", tac("x", "c")),
        thm("t5", tac("x", "c")),
    ]
    for seed in range(5):
        s = make_split(ts, "ri", 1, 1, seed=seed)
        assert s.held_out_premises == {"a", "b"}
        assert names(s.train) == ["t0", "t4", "t5"]  # input order kept
        assert len(s.val) == 1 and len(s.test) == 2  # the overshoot goes to test
        assert set(names(s.val + s.test)) == {"t1", "t2", "t3"}
        rows = {r["part"]: r for r in split_table(s)}
        for part in ("val", "test"):  # novel = not used in train: exactly the held-out a, b
            used = set().union(*map(theorem_premises, s.parts()[part]))
            assert rows[part]["n_novel_premises"] == len(used & {"a", "b"}) > 0


def test_ri_ties_follow_the_seed():
    # a and d are both used once: which is held out depends on the seed, never on input order.
    ts = [thm("t1", tac("x", "a")), thm("t2", tac("x", "d")), thm("t3", tac("x", "c"), tac("y", "c")),
          thm("t4", tac("x", "c"))]
    seen = {make_split(ts, "ri", 1, 0, seed=seed).held_out_premises for seed in range(20)}
    assert seen == {frozenset({"a"}), frozenset({"d"})}
    for seed in range(5):
        assert (make_split(ts, "ri", 1, 0, seed=seed).held_out_premises
                == make_split(ts[::-1], "ri", 1, 0, seed=seed).held_out_premises)


def test_ri_too_few_theorems_with_premises():
    ts = [thm("t1", tac("x", "a")), thm("t2", tac("rfl")), thm("t3", tac("rfl"))]
    with pytest.raises(ValueError, match="only 1 theorems use any premise"):
        make_split(ts, "ri", 1, 1)


def pl_theorems() -> list[Theorem]:
    # proof lengths 0..9, ten theorems of each
    return [thm(f"t{i}", *[tac("simp") for _ in range(i % 10)]) for i in range(100)]


def test_pl_never_samples_empty_proofs_and_favours_long_ones():
    ts = pl_theorems()
    for seed in range(10):
        s = make_split(ts, "pl", 10, 20, seed=seed)
        assert_partition(s, ts)
        assert (len(s.val), len(s.test)) == (10, 20)
        assert all(t.proof_length > 0 for t in s.val + s.test)
    s = make_split(ts, "pl", 10, 20, seed=3407)
    rows = {r["part"]: r for r in split_table(s)}
    assert rows["test"]["mean_proof_length"] > rows["train"]["mean_proof_length"]
    assert rows["val"]["mean_proof_length"] > rows["train"]["mean_proof_length"]


def test_pl_chars_measure():
    # one pseudo-step each, as in statement-level data: only "chars" tells them apart
    ts = [thm(f"t{i}", tac("x" * (i % 10))) for i in range(100)]
    s = make_split(ts, "pl", 10, 20, length_measure="chars")
    assert s.length_measure == "chars"
    assert all(proof_length(t, "chars") > 0 for t in s.val + s.test)
    mean = lambda part: sum(proof_length(t, "chars") for t in part) / len(part)  # noqa: E731
    assert mean(s.test) > mean(s.train)


def test_weighted_needs_enough_positive_weight():
    ts = pl_theorems()  # 90 have tactics, none has a premise
    with pytest.raises(ValueError, match="only 90 of 100 theorems have positive proof length"):
        make_split(ts, "pl", 50, 41)
    with pytest.raises(ValueError, match="only 0 of 100 theorems have positive premise frequency"):
        make_split(ts, "pf", 1, 0)


def test_pf_never_samples_premise_free_proofs_and_favours_frequent_ones():
    # premise frequency i % 5 (0..4 distinct premises in each of two tactics)
    ts = [thm(f"t{i}", *[tac("rw", *[f"p{i}_{k}" for k in range(i % 5)]) for _ in range(2)])
          for i in range(100)]
    for seed in range(10):
        s = make_split(ts, "pf", 10, 20, seed=seed)
        assert_partition(s, ts)
        assert all(premise_frequency(t) > 0 for t in s.val + s.test)
    rows = {r["part"]: r for r in split_table(make_split(ts, "pf", 10, 20))}
    assert rows["test"]["mean_premise_frequency"] > rows["train"]["mean_premise_frequency"]


def test_split_table_by_hand():
    train = [thm("a", tac("rw [p]", "p", "q"), tac("simp")), thm("b", tac("exact r", "r"))]
    val = [thm("c", tac("apply p", "p", "s"))]
    test = [thm("d"), thm("e", tac("x", "t"), tac("y", "t", "u"), tac("z"))]
    rows = split_table(Split(train, val, test))
    assert rows == [
        {"part": "train", "n_theorems": 2, "n_tactics": 3, "mean_proof_length": 1.5,
         "mean_proof_chars": (6 + 4 + 7) / 2, "mean_premise_frequency": (1.0 + 1.0) / 2,
         "n_novel_premises": 0},
        {"part": "val", "n_theorems": 1, "n_tactics": 1, "mean_proof_length": 1.0,
         "mean_proof_chars": 7.0, "mean_premise_frequency": 2.0, "n_novel_premises": 1},  # s
        {"part": "test", "n_theorems": 2, "n_tactics": 3, "mean_proof_length": 1.5,
         "mean_proof_chars": 1.5, "mean_premise_frequency": (0.0 + 1.0) / 2,
         "n_novel_premises": 2},  # t, u
    ]
    empty = split_table(Split([], [], []))
    assert all(r["n_theorems"] == 0 and r["mean_proof_length"] == 0.0 for r in empty)


def test_format_table():
    train = [thm("a", tac("rw [p]", "p"))]
    rows = split_table(Split(train, [thm("b", tac("x", "q"), tac("y"))], []))
    text = format_table({"ri": rows, "mine": rows})
    lines = text.splitlines()
    assert lines[0].startswith("| strategy | part | theorems | mean proof length")
    assert len(lines) == 2 + 6
    assert lines[3] == "| ri (RI) | val | 1 | 2.00 | 2.0 | 0.50 | 1 |"
    assert lines[5].startswith("| mine | train | 1 | 1.00 |")


def test_write_split_round_trip(tmp_path):
    ts = [thm("t0", tac("rfl")), thm("t1", tac("rw [a]", "a")), thm("t2", tac("x", "b"), tac("y", "a")),
          thm("t3")]
    s = make_split(ts, "ri", 1, 0, seed=7)
    write_split(s, tmp_path / "out")
    for part, theorems in s.parts().items():
        back = load_theorems(tmp_path / "out" / f"{part}.json")
        assert [t.to_json() for t in back] == [t.to_json() for t in theorems]
    meta = load_json(tmp_path / "out" / "split.json")
    assert meta["strategy"] == "ri" and meta["seed"] == 7
    assert meta["sizes"] == {"train": len(s.train), "val": 1, "test": len(s.test)}
    assert meta["n_held_out_premises"] == len(s.held_out_premises) == len(meta["held_out_premises"])


# --- real data ------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_mini_partition_sizes_determinism(mini, strategy):
    measure = "chars" if strategy == "pl" else "tactics"
    s = make_split(mini, strategy, 200, 200, seed=3407, length_measure=measure)
    assert_partition(s, mini)
    assert len(s.val) == 200
    assert len(s.test) == 200 if strategy != "ri" else len(s.test) >= 200
    same = make_split(mini, strategy, 200, 200, seed=3407, length_measure=measure)
    assert (names(same.train), names(same.val), names(same.test)) == (
        names(s.train), names(s.val), names(s.test))
    other = make_split(mini, strategy, 200, 200, seed=1, length_measure=measure)
    assert names(other.test) != names(s.test)


def test_mini_ri_isolation(mini):
    s = make_split(mini, "ri", 0.05, 0.05)
    assert s.held_out_premises
    for t in s.train:
        for step in t.traced_tactics:
            assert not set(step.premise_names()) & s.held_out_premises, t.full_name
    for t in s.val + s.test:
        assert theorem_premises(t) & s.held_out_premises, t.full_name
    rows = {r["part"]: r for r in split_table(s)}
    assert rows["val"]["n_novel_premises"] + rows["test"]["n_novel_premises"] >= len(s.held_out_premises)


def test_mini_weighted_strategies_skew(mini):
    table = {r["part"]: r for r in split_table(make_split(mini, "pf", 200, 200))}
    assert table["test"]["mean_premise_frequency"] > table["train"]["mean_premise_frequency"]
    table = {r["part"]: r for r in split_table(make_split(mini, "pl", 200, 200, length_measure="chars"))}
    assert table["test"]["mean_proof_chars"] > table["train"]["mean_proof_chars"]


def test_leandojo_sample_pl_skips_empty_proofs():
    if not SAMPLE.exists():
        require(SAMPLE)
    ts = load_theorems(SAMPLE)  # 8 of the 20 real records have no traced tactics
    for seed in range(10):
        s = make_split(ts, "pl", 3, 3, seed=seed)
        assert all(t.proof_length > 0 for t in s.val + s.test)
    with pytest.raises(ValueError, match="only 12 of 20"):
        make_split(ts, "pl", 6, 7)
