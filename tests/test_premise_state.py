"""Premise signatures (`<VAR> args <GOAL> goal`) and proof-state parsing."""
from __future__ import annotations

import json

import pytest

from conftest import premise, write_jsonl
from prover.data.jsonio import iter_jsonl, resolve
from prover.data.corpus import Corpus
from prover.data.premise import GOAL_TOKEN, VAR_TOKEN, Premise, split_signature
from prover.data.state import Case, Hypothesis, parse_state, render_state

# --- split_signature ------------------------------------------------------------------


@pytest.mark.parametrize("code, args, goal", [
    ("theorem mul_one {M : Type u} [MulOneClass M] (a : M) : a * 1 = a",
     ("{M : Type u}", "[MulOneClass M]", "(a : M)"), "a * 1 = a"),
    ("instance : Foo", (), "Foo"),
    ("instance instFooNat [Bar α] : Foo (List α) := ⟨1⟩", ("[Bar α]",), "Foo (List α)"),
    ("instance (priority := 100) Foo.toBar {α} [Foo α] : Bar α where\n  bar := 1",
     ("{α}", "[Foo α]"), "Bar α"),
    ("def f (n : Nat) : Nat := n + 1", ("(n : Nat)",), "Nat"),
    ("def g : ℕ → ℕ\n  | 0 => 1\n  | n + 1 => g n", (), "ℕ → ℕ"),
    ("structure Point (α : Type u) where\n  x : α\n  y : α", ("(α : Type u)",), ""),
    ("structure Foo (α : Type) : Type where\n  x : α", ("(α : Type)",), "Type"),
    ("class LawfulCmp [LE α] (cmp : α → α → Ordering) extends\n  TransCmp cmp, LTCmp cmp : Prop",
     ("[LE α]", "(cmp : α → α → Ordering)"), "Prop"),
    # Nested brackets of every kind inside binders and goal.
    ("theorem funext_iff {β : α → Sort*} {f g : (a : α) → β a} [h : ∀ i, Decidable (p (f i))] :\n"
     "    f = g ↔ ∀ x, (f x = g x ∧ [x].length = 1)",
     ("{β : α → Sort*}", "{f g : (a : α) → β a}", "[h : ∀ i, Decidable (p (f i))]"),
     "f = g ↔ ∀ x, (f x = g x ∧ [x].length = 1)"),
    ("theorem mono ⦃x y⦄ (h : x ≤ y) : f x ≤ f y", ("⦃x y⦄", "(h : x ≤ y)"), "f x ≤ f y"),
    ("theorem mono' ⦃x y : α⦄ : x ≤ y → f x ≤ f y", ("⦃x y : α⦄",), "x ≤ y → f x ≤ f y"),
    # Attributes with nested brackets, doc comments, modifiers, universe parameters.
    ("@[aesop (rule_sets := [builtin]) safe 0]\ntheorem not_intro (h : P → False) : ¬ P",
     ("(h : P → False)",), "¬ P"),
    ("/-- The [doc] -/\n@[simp] protected theorem Nat.le_refl.{u} (n : ℕ) : n ≤ n", ("(n : ℕ)",), "n ≤ n"),
    # `|a|` is absolute value, not a match arm; `let x :=` inside a type is not a body.
    ("theorem abs_sub (a b c : α) :\n    |a - c| ≤ |a - b| + |b - c|", ("(a b c : α)",),
     "|a - c| ≤ |a - b| + |b - c|"),
    ("theorem aux (a : ℕ) :\n    let d := a + 1; d = a + 1", ("(a : ℕ)",), "let d := a + 1; d = a + 1"),
    ("theorem t (h : a = b) : a = b := by simp [h]", ("(h : a = b)",), "a = b"),
    ("abbrev M α := StateT α IO", ("α",), ""),
    ("alias ⟨mp, mpr⟩ := foo_iff", (), "foo_iff"),
    ("nanos : Nat", (), "Nat"),  # a structure field, as the corpus stores it
    ("", (), ""),
    ("not lean at all (", (), ""),
])
def test_split_signature(code, args, goal):
    assert split_signature(code) == (args, goal)


def test_split_signature_agrees_with_extracted_args_and_goal(mini_root):
    """mathlib-src-mini carries args/goal from its own extractor: our split of `code` must
    agree on almost every declaration (fields/ctors get their parent's binders there, which
    `code` alone does not show)."""
    total = agree = 0
    for _, record in iter_jsonl(resolve(mini_root / "corpus.jsonl")):  # shipped gzipped
        for p in record["premises"]:
            if p["kind"] in ("field", "ctor"):
                continue
            total += 1
            args, goal = split_signature(p["code"])
            agree += (args, " ".join(goal.split())) == (tuple(p["args"]), " ".join(p["goal"].split()))
    assert total == 8249
    assert agree / total > 0.995


def test_premise_render():
    p = Premise("Nat.add_comm", "A.lean", (1, 1), (1, 40), "theorem",
                "theorem Nat.add_comm (n m : ℕ) : n + m = m + n", ("(n m : ℕ)",), "n + m = m + n")
    assert p.render() == f"{VAR_TOKEN} (n m : ℕ) {GOAL_TOKEN} n + m = m + n"
    assert p.render() == "<VAR> (n m : ℕ) <GOAL> n + m = m + n"
    bare = Premise("Foo", "A.lean", (1, 1), (1, 5), "instance", "instance : Foo", (), "Foo")
    assert bare.render() == "<VAR>  <GOAL> Foo"


def test_corpus_without_args_goal_derives_them_from_code(tmp_path):
    """Real LeanDojo corpora carry only `code`: args/goal are derived from it."""
    path = write_jsonl(tmp_path / "corpus.jsonl", [{"path": "A.lean", "imports": [], "premises": [
        premise("mul_one", (1, 1), (1, 60), "theorem mul_one [MulOneClass M] (a : M) : a * 1 = a"),
        premise("f", (3, 1), (3, 40), "def f (n : Nat) : Nat := n + 1", kind="def"),
        premise("given", (5, 1), (5, 40), "theorem given (x : ℕ) : x = x",
                args=["(y : ℕ)"], goal="y = y"),  # explicit args/goal win
    ]}])
    corpus = Corpus.load(path)
    by = {p.full_name: p for p in corpus.premises}
    assert by["mul_one"].args == ("[MulOneClass M]", "(a : M)")
    assert by["mul_one"].render() == "<VAR> [MulOneClass M] (a : M) <GOAL> a * 1 = a"
    assert by["f"].render() == "<VAR> (n : Nat) <GOAL> Nat"
    assert by["given"].render() == "<VAR> (y : ℕ) <GOAL> y = y"


# --- proof states ----------------------------------------------------------------------

def test_parse_single_goal():
    (case,) = parse_state("α : Type u_1\na b : α\nh : a = b\n⊢ b = a")
    assert case.tag is None
    assert case.hypotheses == (Hypothesis("α", "Type u_1"), Hypothesis("a b", "α"),
                               Hypothesis("h", "a = b"))
    assert case.goal == "b = a"


def test_parse_multi_goal_with_case_tags():
    state = ("case h.left\nx : ℕ\nhx : 0 < x\n⊢ x ≠ 0\n\n"
             "case h.right\nx : ℕ\n⊢ x = x")
    cases = parse_state(state)
    assert [c.tag for c in cases] == ["h.left", "h.right"]
    assert [c.goal for c in cases] == ["x ≠ 0", "x = x"]
    assert [len(c.hypotheses) for c in cases] == [2, 1]
    assert render_state(cases) == state


def test_parse_multiline_hypothesis_and_goal():
    # Continuation lines are indented; Lean breaks a long hypothesis right after ` :`.
    state = ("f : ℕ → ℕ\n"
             "h :\n  ∀ (n : ℕ),\n    f n = n\n"
             "hfi : ∀ (i : ι),\n    IntegrableOn f (Ioc (a i) (b i)) μ\n"
             "⊢ ∑ i in range n, f i ≤\n    ∑ i in range n, i")
    (case,) = parse_state(state)
    assert [h.names for h in case.hypotheses] == ["f", "h", "hfi"]
    assert case.hypotheses[1].type == "∀ (n : ℕ),\n    f n = n"
    assert case.hypotheses[2].type == "∀ (i : ι),\n    IntegrableOn f (Ioc (a i) (b i)) μ"
    assert case.goal == "∑ i in range n, f i ≤\n    ∑ i in range n, i"
    assert render_state([case]) == state
    # Dropping a hypothesis still renders a state Lean could have printed.
    assert render_state([Case(case.hypotheses[1:2], case.goal)]) == (
        "h :\n  ∀ (n : ℕ),\n    f n = n\n⊢ ∑ i in range n, f i ≤\n    ∑ i in range n, i")


def test_no_goals_and_empty():
    assert parse_state("no goals") == []
    assert parse_state("  no goals\n") == []
    assert parse_state("") == []
    assert render_state([]) == "no goals"


def test_render_builds_lean_text():
    case = Case((Hypothesis("n", "ℕ"),), "n = n", tag="succ")
    assert render_state([case, Case((), "True")]) == "case succ\nn : ℕ\n⊢ n = n\n\n⊢ True"


def _regular(s: str) -> bool:
    """No irregular spacing that a parse/render round trip may normalise."""
    return (s == s.strip() and "\n\n\n" not in s and not any(ln != ln.rstrip() for ln in s.split("\n")))


def test_real_states_round_trip(sample_states):
    regular = [s for s in sample_states if _regular(s)]
    assert len(regular) >= 0.9 * len(sample_states)
    same = sum(render_state(parse_state(s)) == s for s in regular)
    assert same >= 0.95 * len(regular)
    assert same == len(regular)  # all 80 states of the sample, as of this writing


def test_hand_picked_real_states_round_trip_exactly(sample_raw):
    picked = {
        "single goal, instance hyps": sample_raw[3]["traced_tactics"][0]["state_before"],
        "two goals, no tags": sample_raw[7]["traced_tactics"][0]["state_after"],
        "two tagged goals": sample_raw[10]["traced_tactics"][10]["state_after"],
        "goal over two lines": sample_raw[10]["traced_tactics"][6]["state_after"],
        "long hypotheses": sample_raw[16]["traced_tactics"][2]["state_after"],
    }
    for name, s in picked.items():
        cases = parse_state(s)
        assert render_state(cases) == s, name
    two = parse_state(picked["two tagged goals"])
    assert [c.tag for c in two] == ["refine_2.inl", "refine_2.inr"]
    assert [h.names for h in two[0].hypotheses][-1] == "hl"
    assert two[1].hypotheses[-1] == Hypothesis("hr", "Surjective f")
    (wrapped,) = parse_state(picked["goal over two lines"])
    assert wrapped.goal.count("\n") == 1 and wrapped.goal.startswith("⨅ (_ : s ⊆ ⋃ k")
    assert len(parse_state(picked["two goals, no tags"])) == 2


@pytest.fixture(scope="module")
def sample_raw(leandojo_sample):
    return json.loads(leandojo_sample.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sample_states(sample_raw):
    states = [t[k] for r in sample_raw for t in r["traced_tactics"] for k in ("state_before", "state_after")]
    assert len(states) == 80
    return states
