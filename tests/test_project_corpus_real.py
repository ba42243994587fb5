"""The source-built corpus against real data: LeanDojo's premise provenance and an independent corpus.

The 300 real Mathlib files of `mathlib-src/leandojo-real/source/` (Mathlib at 29dcec07, the
commit LeanDojo Benchmark 4 traced) are built into a corpus once for this module (a folder
without a lakefile: read as one package, which also exercises that path).
"""
from __future__ import annotations

import json

import pytest

from prover.data.corpus_reference import annotated_premises, compare_by_kind, placement
from prover.data.project_corpus import build_corpus
from tests.conftest import require


@pytest.fixture(scope="module")
def real(data_root, tmp_path_factory):
    source = require(data_root / "mathlib-src" / "leandojo-real" / "source")
    out = tmp_path_factory.mktemp("real-corpus")
    said = []
    meta = build_corpus(source, out, progress=False, say=said.append)
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    return source, meta, rows, said


def test_annotated_premises_found_at_leandojo_positions(real, data_root):
    """Every premise the 348 real val records annotate and that one of the 300 files defines is
    found by name in that file at LeanDojo's def_pos (to_additive twins at the attribute,
    aliases, private names as `_private.<module>.0.<name>`, irreducible_defs after modifiers,
    @[simps p] lemmas)."""
    _, _, rows, _ = real
    wanted = annotated_premises(require(data_root / "mathlib-src" / "leandojo-real" / "val.json"), {r["path"] for r in rows})
    result = placement(rows, wanted)
    assert result["annotated"] == 352
    assert result["share"] >= 0.95, [(m["full_name"], m["why"]) for m in result["missed"]]
    assert result["missed"] == []  # all 352 at present
    names = {w["full_name"] for w in wanted}
    # One of each kind the plain declaration scan cannot see:
    for name in ("AddMonoidHom.map_finsum_of_injective", "neg_pos", "sup_of_le_right",
                 "MeasureTheory.Measure.rnDeriv", "TensorAlgebra.lift_symm_apply",
                 "_private.Mathlib.Data.Nat.Prime.0.Nat.minFacProp"):
        assert name in names


def test_compared_with_the_independent_corpus_by_kind(real, data_root):
    _, meta, rows, said = real
    cmp = compare_by_kind(rows, require(data_root / "mathlib-src" / "corpus.jsonl.gz"))
    assert cmp["files"] == 300
    assert cmp["both"] / cmp["reference"] >= 0.99
    only_ref = {k: v["count"] for k, v in cmp["only_reference"].items()}
    only_ours = {k: v["count"] for k, v in cmp["only_ours"].items()}
    # Plain declarations agree almost everywhere: the rest is `«exists»`/`«forall»` spellings.
    assert only_ref.get("theorem", 0) + only_ref.get("lemma", 0) + only_ref.get("def", 0) <= 10
    # The reference's own misreadings (`RingHom.toα` from `extends α →+* β`) are most of the rest.
    assert only_ref.get("ctor", 0) == 0 and only_ref.get("field", 0) <= 12
    # The reference has no private names nor @[simps] lemmas; we have them.
    assert only_ours["simps"] > 100 and only_ours["theorem"] > 50
    assert all(e.split(": ")[1].startswith("_private.") for e in cmp["only_ours"]["theorem"]["examples"])
    # Its `alias ⟨_, b⟩` rows named `_` are placeholders, not premises.
    assert all(e.endswith("_") for e in cmp["only_reference"]["alias"]["examples"])
    # Metadata: the folder has no lakefile (said, counted) and what was not certain is counted.
    assert meta["problems"]["not_a_lake_project"] == 1 and len(said) == 1 and "not a Lake project" in said[0]
    assert meta["files"] == 300 and meta["premises"] == sum(len(r["premises"]) for r in rows)
    assert meta["uncertain"]["anonymous instances (Lean names them; not listed)"] > 500
    assert meta["derived"]["to_additive names from #align"] > 1000


def test_doc_comments_kept_in_their_own_field(real):
    """LeanDojo's `code` drops doc comments; the corpus keeps them in `doc` (issue 51): the
    informal search reads what Mathlib says in words from there."""
    _, _, rows, _ = real
    by_name = {p["full_name"]: p for r in rows for p in r["premises"]}
    assert by_name["irrational_sqrt_two"]["doc"] == "**Irrationality of the Square Root of 2**"
    assert by_name["Irrational"]["doc"] == "A real number is irrational if it is not equal to any rational number."
    assert "/--" not in by_name["irrational_sqrt_two"]["code"]
    # A declaration after an ordinary comment, or after none, has no `doc`.
    assert "doc" not in by_name["Nat.Prime.irrational_sqrt"]
    docs = [p for p in by_name.values() if p.get("doc")]
    theorems = [p for p in docs if p["kind"] in ("theorem", "lemma")]
    assert len(docs) > 5000 and len(theorems) > 2000
    assert not any("-/" in p["doc"] or "/--" in p["doc"] for p in docs)
