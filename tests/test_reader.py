"""Reading LeanDojo-format files: real records (leandojo-sample), gzip twins, mathlib-src-mini."""
from __future__ import annotations

import gzip
import json
import shutil

import pytest

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import iter_jsonl, load_json, resolve, write_json, write_jsonl
from prover.data.theorem import load_theorems, split_path

SAMPLE_TACTIC_COUNTS = [0, 0, 0, 2, 4, 0, 1, 3, 4, 2, 12, 3, 2, 0, 2, 1, 4, 0, 0, 0]


@pytest.fixture(scope="module")
def sample(leandojo_sample):
    return load_theorems(leandojo_sample)


@pytest.fixture(scope="module")
def sample_raw(leandojo_sample):
    return json.loads(leandojo_sample.read_text(encoding="utf-8"))


def test_sample_has_20_theorems_with_exact_tactic_counts(sample):
    assert len(sample) == 20
    assert [t.proof_length for t in sample] == SAMPLE_TACTIC_COUNTS
    assert sum(SAMPLE_TACTIC_COUNTS) == 40


def test_known_record_fields(sample):
    thm = sample[3]
    assert thm.full_name == "CategoryTheory.Equivalence.invFunIdAssoc_hom_app"
    assert thm.file_path == "Mathlib/CategoryTheory/Equivalence.lean"
    assert thm.commit == "29dcec074de168ac2bf835a77ef68bbe069194c5"
    assert (thm.start, thm.end) == ((344, 1), (347, 12))
    first, last = thm.traced_tactics
    assert first.tactic == "dsimp [invFunIdAssoc]"
    assert first.annotated_text == "dsimp [<a>invFunIdAssoc</a>]"
    assert first.state_before.startswith("C : Type u₁\ninst✝² : Category.{v₁, u₁} C\n")
    assert first.state_before.endswith("⊢ (e.invFunIdAssoc F).hom.app X = F.map (e.counit.app X)")
    (p,) = first.premises
    assert p.full_name == "CategoryTheory.Equivalence.invFunIdAssoc"
    assert p.def_path == "Mathlib/CategoryTheory/Equivalence.lean"
    assert (p.def_pos, p.def_end_pos) == ((339, 5), (339, 18))
    assert last.tactic == "aesop_cat" and last.premises == () and last.state_after == "no goals"
    assert last.state_before == first.state_after


def test_premise_names_are_distinct_in_first_use_order(sample):
    # CancelDenoms.cancel_factors_lt: rw [mul_lt_mul_left, ← ha, ← hb, ← mul_assoc, ← mul_assoc,
    # mul_comm bd, mul_lt_mul_left]: 5 annotated occurrences of 3 premises (ha, hb are local).
    tac = sample[7].traced_tactics[0]
    assert len(tac.premises) == 5
    assert tac.premise_names() == ["mul_lt_mul_left", "mul_assoc", "mul_comm"]


def test_to_json_round_trips_real_records_exactly(sample, sample_raw):
    assert len(sample_raw) == len(sample)
    for thm, raw in zip(sample, sample_raw):
        assert thm.to_json() == raw
    # And the round trip survives writing and reading back.
    assert sample[10].to_json() == json.loads(json.dumps(sample_raw[10]))


def test_written_split_reads_back_identically(sample, tmp_path):
    write_json(tmp_path / "s.json", [t.to_json() for t in sample])
    assert load_theorems(tmp_path / "s.json") == sample


def test_json_gz_equals_plain(leandojo_sample, sample, tmp_path):
    gz = tmp_path / "test.json.gz"
    with open(leandojo_sample, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert load_theorems(gz) == sample
    # `test.json` resolves to its .gz twin when only that exists (train splits ship gzipped).
    assert resolve(tmp_path / "test.json") == gz
    assert load_theorems(tmp_path / "test.json") == sample
    assert split_path(tmp_path.parent, f"{tmp_path.name}/test") == gz


def test_corpus_jsonl_gz_equals_plain(mini_root, tmp_path):
    shipped = resolve(mini_root / "corpus.jsonl")  # plain in the shared folder, gzipped in the fixtures
    plain = tmp_path / "corpus.jsonl"
    gz = tmp_path / "corpus.jsonl.gz"
    with (gzip.open if shipped.suffix == ".gz" else open)(shipped, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with open(plain, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    a, b = Corpus.load(plain), Corpus.load(gz)
    assert a.premises == b.premises and a.files == b.files and a.imports == b.imports
    assert [o for _, o in iter_jsonl(gz)][:3] == [o for _, o in iter_jsonl(plain)][:3]


def test_gz_writers_round_trip(tmp_path):
    rows = [{"a": "α ⊢ β"}, {"b": [1, 2]}]
    write_jsonl(tmp_path / "x.jsonl.gz", rows)
    assert [o for _, o in iter_jsonl(tmp_path / "x.jsonl.gz")] == rows
    write_json(tmp_path / "y.json.gz", rows)
    assert load_json(tmp_path / "y.json.gz") == rows
    assert not list(tmp_path.glob("*.tmp"))


def test_mini_counts_match_metadata(mini_root):
    meta = json.loads((mini_root / "metadata.json").read_text())["counts"]
    assert (meta["files"], meta["premises"]) == (362, 9375)
    assert meta["splits"]["random"] == {"train": 2350, "val": 200, "test": 200}
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    assert len(corpus.files) == meta["files"]
    assert len(corpus) == meta["premises"]
    kinds: dict[str, int] = {}
    for p in corpus.premises:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    assert kinds == meta["premises_by_kind"]
    assert ds.strategies() == ["novel_premises", "random"]
    for strategy, parts in meta["splits"].items():
        got = {part: len(ds.theorems(f"{strategy}/{part}")) for part in parts}
        assert got == parts
    assert ds.skips.total() == 0


def test_mini_records_are_single_pseudo_steps(mini_root):
    ts = load_theorems(mini_root / "random" / "test.json")
    assert all(t.proof_length == 1 for t in ts)
    assert all(t.traced_tactics[0].state_after == "no goals" for t in ts)
    raw = load_json(mini_root / "random" / "test.json")
    assert [t.to_json() for t in ts] == raw
