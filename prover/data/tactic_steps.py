"""Tactic-level pseudo steps from statement-level records (issue 19).

A statement-level record has one pseudo step: the theorem's initial goal -> the whole proof.
Here it becomes one step per tactic (`proof_split` says which tactics), each with the
premises annotated inside that tactic's text:

- `first_tactic`: the first step of a `by` proof, at the exact initial state;
- `later_tactic`: the later steps, at an approximate state: the initial state again (the
  real one is unknown without Lean), flagged `approximate_state`;
- `term_exact`: a term proof as `exact <term>`, at the exact initial state;
- `have_goal` / `show_goal` / `suffices_goal` / `calc_step`: a goal the source states, at the
  theorem's hypotheses + `⊢ T` (T as written, not as Lean prints it; the context is the
  theorem's, not the one at that point, so these are flagged approximate too), with the
  tactic that starts its proof.

Every target longer than the byte budget is dropped, never cut (a cut tactic is a broken one),
and counted per kind. Repeats of a (state, tactic) pair within a theorem are dropped and
counted: with approximate states, `· simp` twice in a proof is one example, not two.

Premise to tactic: a premise belongs to the step whose span holds its annotation (the
`<a>...</a>` occurrences of `annotated_tactic`, one per premise entry, in order). Where the
annotation does not line up with the text (entry count or text differ), a premise belongs to
every step whose text holds its name, or a suffix of it after a dot, as an identifier.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from prover.data.proof_split import ProofSplit, Tactic, split_proof
from prover.data.theorem import AnnotatedPremise, Theorem, TracedTactic

# Bump when the split or the step rules change: built data keyed on it is rebuilt.
STEPS_VERSION = 1
KINDS = ("first_tactic", "later_tactic", "term_exact", "have_goal", "show_goal", "suffices_goal", "calc_step")
_GOAL_KIND = {"have": "have_goal", "show": "show_goal", "suffices": "suffices_goal", "calc": "calc_step"}
_TAG = re.compile(r"</?a>")


@dataclass(frozen=True, slots=True)
class PseudoStep(TracedTactic):
    """A traced tactic made from source text, with where it came from."""

    kind: str = "first_tactic"
    approximate_state: bool = False


@dataclass
class StepStats:
    theorems: int = 0
    tactic_proofs: int = 0
    term_proofs: int = 0
    equation_proofs: int = 0  # `| pat => ...` proofs: no step taken
    passed_through: int = 0  # records already tactic-level (several traced tactics): kept as they are
    kept: Counter = field(default_factory=Counter)  # kind -> steps kept
    over_budget: Counter = field(default_factory=Counter)  # kind -> targets over the byte budget
    duplicates: Counter = field(default_factory=Counter)  # kind -> repeated (state, tactic) pairs
    premises_by_span: int = 0  # theorems whose premises were placed by annotation span
    premises_by_name: int = 0  # theorems where the annotation did not line up: by name

    def as_dict(self) -> dict:
        kept = {k: self.kept[k] for k in KINDS}
        return {
            "version": STEPS_VERSION, "theorems": self.theorems, "tactic_proofs": self.tactic_proofs,
            "term_proofs": self.term_proofs, "equation_proofs": self.equation_proofs,
            "passed_through": self.passed_through,
            "steps": sum(kept.values()), "kept": kept,
            "exact_state": kept["first_tactic"] + kept["term_exact"],
            "approximate_state": sum(kept.values()) - kept["first_tactic"] - kept["term_exact"],
            "dropped_over_budget": {k: self.over_budget[k] for k in KINDS},
            "dropped_duplicates": {k: self.duplicates[k] for k in KINDS},
            "premises_by_span": self.premises_by_span, "premises_by_name": self.premises_by_name,
        }


def premise_spans(tac: TracedTactic) -> list[tuple[int, int]] | None:
    """The span in `tac.tactic` of each annotated premise occurrence, in the order of
    `tac.premises`; None when the annotated text does not line up with them."""
    spans: list[tuple[int, int]] = []
    removed, opened = 0, None
    for m in _TAG.finditer(tac.annotated_text):
        pos = m.start() - removed
        if m.group() == "<a>":
            opened = pos
        elif opened is not None:
            spans.append((opened, pos))
            opened = None
        removed += len(m.group())
    if len(spans) != len(tac.premises) or _TAG.sub("", tac.annotated_text) != tac.tactic:
        return None
    return spans


def name_pattern(full_name: str) -> re.Pattern:
    """A premise's name as a tactic may write it: the full name or any dotted suffix of it."""
    parts = full_name.split(".")
    names = sorted({".".join(parts[i:]) for i in range(len(parts))}, key=len, reverse=True)
    return re.compile(r"(?<![\w'.])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w'])")


def assign_premises(tac: TracedTactic, targets: list[Tactic],
                    spans: list[tuple[int, int]] | None) -> list[tuple[AnnotatedPremise, ...]]:
    """The premises of each target: by annotation span (`spans`), else by name (module doc)."""
    out = []
    if spans is not None:
        for t in targets:
            out.append(tuple(p for p, (s, e) in zip(tac.premises, spans) if t.start <= s and e <= t.end))
        return out
    patterns = {p.full_name: name_pattern(p.full_name) for p in tac.premises}
    for t in targets:
        # The source text of the span, not the target: `exact ` must not match a premise.
        text = tac.tactic[t.start:t.end]
        out.append(tuple(p for p in tac.premises if patterns[p.full_name].search(text)))
    return out


def goal_state(state: str, goal: str) -> str:
    """`state`'s hypotheses (of its first goal) with `⊢ goal` in place of its goal."""
    lines = state.split("\n")
    k = next((i for i, ln in enumerate(lines) if ln.startswith("⊢")), len(lines))
    return "\n".join(lines[:k] + [f"⊢ {goal}"])


def _candidates(split: ProofSplit) -> list[tuple[str, Tactic, str | None]]:
    """(kind, target, stated goal or None) in proof order."""
    out: list[tuple[str, Tactic, str | None]] = []
    if split.mode == "tactic":
        out += [("first_tactic" if i == 0 else "later_tactic", t, None) for i, t in enumerate(split.tactics)]
    elif split.term is not None:
        out.append(("term_exact", split.term, None))
    out += [(_GOAL_KIND[g.kind], g.target, g.goal) for g in split.goals]
    return out


def pseudo_steps(thm: Theorem, max_target_bytes: int, stats: StepStats | None = None) -> list[PseudoStep]:
    """The tactic-level steps of a statement-level theorem (module doc). `max_target_bytes`
    <= 0: no budget."""
    stats = stats if stats is not None else StepStats()
    tac = thm.traced_tactics[0]
    split = split_proof(tac.tactic)
    if split.mode == "tactic":
        stats.tactic_proofs += 1
    elif split.mode == "term":
        stats.term_proofs += 1
    else:
        stats.equation_proofs += 1
    spans = premise_spans(tac)
    if spans is not None:
        stats.premises_by_span += 1
    else:
        stats.premises_by_name += 1
    cands = _candidates(split)
    premises = assign_premises(tac, [t for _, t, _ in cands], spans)
    steps: list[PseudoStep] = []
    seen: set[tuple[str, str]] = set()
    for (kind, target, goal), prems in zip(cands, premises):
        if max_target_bytes > 0 and len(target.text.encode("utf-8")) > max_target_bytes:
            stats.over_budget[kind] += 1
            continue
        state = tac.state_before if goal is None else goal_state(tac.state_before, goal)
        if (state, target.text) in seen:
            stats.duplicates[kind] += 1
            continue
        seen.add((state, target.text))
        stats.kept[kind] += 1
        # The annotated text of a step is not rebuilt: nothing downstream reads it.
        steps.append(PseudoStep(target.text, "", prems, state, tac.state_after, kind,
                                kind not in ("first_tactic", "term_exact")))
    return steps


def tactic_level(theorems: Iterable[Theorem], max_target_bytes: int) -> tuple[list[Theorem], StepStats]:
    """Each statement-level theorem with its pseudo steps as its traced tactics. A record with
    several traced tactics is tactic-level already (real LeanDojo data) and passes unchanged."""
    stats = StepStats()
    out = []
    for thm in theorems:
        stats.theorems += 1
        if len(thm.traced_tactics) != 1:
            stats.passed_through += 1
            out.append(thm)
            continue
        out.append(dataclasses.replace(thm, traced_tactics=tuple(pseudo_steps(thm, max_target_bytes, stats))))
    return out, stats
