"""The operator-tree parser (retriever/structure/optree.py), its terms and the `structure` retriever."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from prover.data.corpus import Corpus
from prover.data.state import parse_state
from retriever.base import TheoremContext
from retriever.registry import build_retriever
from retriever.structure.features import statement_terms, var_like
from retriever.structure.notation import declarations, table
from retriever.structure.optree import parse, state_trees, statement_trees, tokenize
from tests.conftest import premise, require, write_jsonl


@pytest.mark.parametrize("text, tree", [
    # precedence: * over +, + over =, = over ∧, ∧ over ↔; → is right-associative
    ("a + b * c = d ∧ p ↔ q", "↔(∧(=(+(a, *(b, c)), d), p), q)"),
    ("a - b - c", "-(-(a, b), c)"),
    ("p → q → r", "→(p, →(q, r))"),
    ("-x ^ 2 = -(x ^ 2)", "=(-(^(x, 2)), -(^(x, 2)))"),
    ("¬a = b", "¬(=(a, b))"),
    # application binds tighter than notation; ↑ takes one argument; postfix at max
    ("f x⁻¹ ≤ ↑n + g y z", "≤(f(⁻¹(x)), +(↑(n), g(y, z)))"),
    ("(map f) p = q", "=(map(f, p), q)"),
    ("(f x).comp g", ".comp(f(x), g)"),
    # binders: groups, instance brackets, binder predicates, fun
    ("∀ {α : Type*} [inst : Group α] (a b : α), a * b = b * a", "∀(Type, Group(α), α, =(*(a, b), *(b, a)))"),
    ("∃ x > 0, ∀ ε ∈ s, x < ε", "∃(>(0), ∀(∈(s), <(x, ε)))"),
    ("IsLinearMap R fun z : M ↦ c • z", "IsLinearMap(R, fun(M, •(c, z)))"),
    # set-builder, set literal, anonymous constructor, tuples, ascription dropped
    ("{x | 0 < x}ᶜ ∪ {a, b}", "∪(ᶜ(setOf(<(0, x))), {}(a, b))"),
    ("{x ∈ s | p x}", "setOf(∈(s), p(x))"),
    ("⟨a, b⟩ = (↑n : ℝ)", "=(⟨⟩(a, b), ↑(n))"),
    # big operators, abs and norm, floor, intervals, glued operator brackets
    ("∑ i ∈ range n, f i + 1 = |x| * ‖y‖₊", "=(+(∑(∈(range(n)), f(i)), 1), *(|·|(x), ‖·‖₊(y)))"),
    ("∫ x in a..b, f x ∂μ = 0", "=(∫(∈(..(a, b)), ∂(μ), f(x)), 0)"),
    ("M →ₗ[R] M₂", "→ₗ[](M, R, M₂)"),
    ("l ++ [a] = ⌊x⌋₊ :: l", "=(++(l, [](a)), ::(⌊⌋₊(x), l))"),
    ("if h : x = 0 then 1 else ⊤", "ite(=(x, 0), 1, ⊤)"),
    ("x ∈ ⋃ i, s i ∩ t", "∈(x, ⋃(∩(s(i), t)))"),
])
def test_parse_reads_lean_notation_into_operator_trees(text, tree):
    t = parse(text)
    assert t.fallbacks == 0
    assert str(t.root) == tree


def test_unreadable_spans_become_counted_leaf_sequences():
    # a structure instance is not a formula: its group falls back, the rest is read
    t = parse("f { toFun := g, map_one := h } = 1")
    assert t.fallbacks == 1
    assert str(t.root) == "=(f(…(toFun, :=, g, ,, map_one, :=, h)), 1)"
    # unbalanced brackets and stray tokens never raise
    for text in ("(a + b", "a + ) b", ", ,", "", "∀ x", "f :=", "|a"):
        assert parse(text).fallbacks >= 1


def test_tokens_keep_modifiers_and_glued_brackets_apart():
    texts = [t.text for t in tokenize("sᶜ x⁻¹ a.1 (f x).comp ℝ≥0∞ Category.{v, u} C")]
    assert texts == ["s", "ᶜ", "x", "⁻¹", "a.1", "(", "f", "x", ")", ".comp", "ℝ≥0∞", "Category", "C"]
    glued = tokenize("M →ₗ[R] N ++ [a]")
    assert [(t.text, t.spaced) for t in glued if t.text == "["] == [("[", False), ("[", True)]


def test_every_table_entry_read_from_the_real_source_is_declared_there(data_root):
    source = require(data_root / "mathlib-src" / "leandojo-real" / "source")
    checked = 0
    for (symbol, _), n in table().items():
        if n.source.startswith("leandojo-real/source "):
            text = (source / n.source.split(" ", 1)[1]).read_text(encoding="utf-8")
            found = {(s, k, p) for s, k, p in declarations(text)}
            notation = f'notation:{n.prec}' in text and f'" {symbol} "' in text
            assert (symbol, n.kind, n.prec) in found or notation, n
            checked += 1
    assert checked >= 8


def _real_states(path: Path) -> list[str]:
    return [t["state_before"] for r in json.loads(path.read_text()) for t in r["traced_tactics"]]


def test_every_real_state_parses_with_few_fallbacks(leandojo_sample, data_root):
    states = _real_states(leandojo_sample)
    real = data_root / "mathlib-src" / "leandojo-real" / "val.json"
    if real.exists():  # the 730 real val states
        states += _real_states(real)
    trees = fallbacks = 0
    for s in states:
        st = state_trees(s)
        cases = parse_state(s)
        assert len(st.goals) == sum(bool(c.goal) for c in cases)
        assert len(st.hypotheses) == sum(len(c.hypotheses) for c in cases)
        trees += len(st.trees)
        fallbacks += sum(t.fallbacks > 0 for t in st.trees)
    assert trees > 100
    assert fallbacks / trees < 0.02  # measured 0.6% on real val


def test_a_real_state_reads_its_hypotheses_and_goal(leandojo_sample):
    state = next(s for s in _real_states(leandojo_sample) if s.startswith("x y : ℝ≥0∞"))
    st = state_trees(state)
    assert {"x", "y", "z", "hz"} <= st.locals
    assert [str(t.root) for t in st.hypotheses] == ["ℝ≥0∞", "ℝ", "<(0, z)"]
    assert str(st.goals[0].root) == "↔(≤(x, ^(y, /(1, z))), ≤(^(x, z), y))"


def test_terms_abstract_variable_names_and_read_fields_as_applications():
    a = statement_terms(statement_trees(["{G : Type*}", "[CommGroup G]", "(a b : G)"], "a * b = b * a"))
    b = statement_terms(statement_trees(["{H : Type*}", "[CommGroup H]", "(x y : H)"], "x * y = y * x"))
    assert a == b
    assert "P:V/*/=" in a and "S:*(V,V)" in a and "S:CommGroup(V)" in a
    s = state_trees("s : Finset α\n⊢ s.card = 0")
    p = statement_trees(["{s : Finset α}"], "Finset.card s = 0")
    assert statement_terms(s, hypotheses=False) == statement_terms(p, hypotheses=False)
    assert "S:card(V)" in statement_terms(p)
    assert var_like("h₁") and var_like("inst✝¹") and var_like("R") and not var_like("ℝ")
    assert not var_like("Nat.succ") and not var_like("card")


def test_structure_retriever_ranks_the_premise_of_the_same_shape_first(tmp_path):
    rows = [{"path": "A.lean", "imports": [], "premises": [
        premise("mul_comm", (1, 1), (1, 50), "theorem mul_comm {G : Type*} [CommMonoid G] (a b : G) : a * b = b * a"),
        premise("add_comm", (2, 1), (2, 50), "theorem add_comm {G : Type*} [AddCommMonoid G] (a b : G) : a + b = b + a"),
        premise("add_assoc", (3, 1), (3, 50),
                "theorem add_assoc {G : Type*} [AddSemigroup G] (a b c : G) : a + b + c = a + (b + c)"),
        premise("le_refl", (4, 1), (4, 50), "theorem le_refl {α : Type*} [Preorder α] (a : α) : a ≤ a"),
    ]}, {"path": "B.lean", "imports": ["A.lean"], "premises": []}]
    corpus = Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows))
    r = build_retriever("structure", corpus)
    ctx = [TheoremContext("B.lean", (1, 1))]

    def ranked(state: str) -> list[str]:
        return [h.premise.full_name for h in r.retrieve([state], 4, ctx)[0]]

    assert ranked("x y : ℕ\n⊢ x + y = y + x")[0] == "add_comm"
    assert ranked("x y z : ℕ\n⊢ x + y + z = x + (y + z)")[0] == "add_assoc"
    assert ranked("n : ℕ\n⊢ n * 2 = 2 * n")[0] == "mul_comm"
    assert r.fallback_share == 0.0


def test_late_interaction_takes_each_query_node_best_premise_node():
    import torch
    from retriever.tried.structure_encoder import late_interaction
    q = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # one query, two nodes
    qm = torch.tensor([[True, True]])
    p = torch.tensor([[[1.0, 0.0], [0.6, 0.8]], [[0.0, 1.0], [0.0, 0.0]]])  # two premises
    pm = torch.tensor([[True, True], [True, False]])
    s = late_interaction(q, qm, p, pm)
    # premise 0: node 1 best for (1,0) -> 1.0, best for (0,1) -> 0.8; premise 1: 0.0 and 1.0
    assert torch.allclose(s, torch.tensor([[0.9, 0.5]]))


def test_node_encoder_learns_to_match_a_state_to_its_premise_shape():
    import torch
    from retriever.tried.structure_encoder import NodeEncoder, Vocab, late_interaction, node_contexts, tensors
    goals = ["a + b = b + a", "a * b = b * a", "a ≤ a", "a - a = 0"]
    premises = [node_contexts(statement_trees(["(a b : G)"], g), False, 16) for g in goals]
    states = [node_contexts(state_trees(f"x y : G\n⊢ {g.replace('a', 'x').replace('b', 'y')}"), True, 16)
              for g in goals]
    assert premises[0][0] == (["="], ["+", "+"])  # the root: no ancestors, its children
    vocab = Vocab([lab for c in premises + states for up, kids in c for lab in up + kids], 100)
    torch.manual_seed(0)
    model = NodeEncoder(len(vocab), dim=16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(30):
        q, qm = model(*tensors(states, vocab, 16))
        p, pm = model(*tensors(premises, vocab, 16))
        loss = torch.nn.functional.cross_entropy(late_interaction(q, qm, p, pm) / 0.1, torch.arange(4))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        q, qm = model(*tensors(states, vocab, 16))
        p, pm = model(*tensors(premises, vocab, 16))
        assert late_interaction(q, qm, p, pm).argmax(1).tolist() == [0, 1, 2, 3]


def test_query_terms_of_variables_alone_are_dropped():
    """A shape made only of abstracted variables (`V@(V)`, the path `V/V@`) is in most goals and
    is the whole statement of a premise such as Aesop's `withConstAesopTraceNode` (`m α`): as a
    query term it would match that premise to any goal. A constant, an operator or a numeral keeps
    a term."""
    from retriever.structure.retriever import names_a_constant
    assert [names_a_constant(t) for t in ("S:V@(V)", "T:V@(_)", "P:V/V@")] == [False, False, False]
    assert all(names_a_constant(t) for t in ("P:V/V@/dist", "P:V/≤.1", "P:2/V", "T:∑ᶠ(_,V@(_))"))
