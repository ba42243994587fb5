"""ReProver's input layout, byte for byte, on real states (issue 59).

The reference below is written from the issue's description of ReProver's code (common.py
`Premise.serialize`, `format_augmented_state`; the tokenizer call of its generator), not from the
code under test. It is compared with what a generator in ReProver's layout
(`generator/input_format.py` "reprover") is handed, and with the text our ReProver retriever
encodes, on the first 120 real states of `leandojo-real/val` with two premise lists each:

- BM25's top 100 (the shipped fusion needs trained models the tests do not build; BM25 is its
  cheapest member) and a tiny, untrained ReProver retriever's top 100, both ranked over the
  files that hold the states' gold premises plus the files of a few premises chosen for their
  names (below), with every state's gold premises put first.
- The names cover the three ways ReProver's rule goes: marked through `_root_.`, through a
  shorter suffix than the full name, and not marked at all (`List.next?_nil`: the unescaped
  `?` makes the name not match itself).
"""
from __future__ import annotations

import gzip
import json
import re

import pytest

from tests.conftest import require

N_STATES = 120
# Premises of Mathlib at the Benchmark 4 commit whose names exercise the rule's three ways.
NAMED = ("List.next?_nil", "String.validFor_mkIterator", "Nat.cast_id", "Set.image_id")


def reference_premise(full_name: str, code: str) -> str:
    """The issue's description of ReProver's `Premise.serialize`."""
    marked = "<a>" + full_name + "</a>"
    code = code.replace("_root_." + full_name, marked)
    pieces = full_name.split(".")
    for start in range(len(pieces)):
        tail = ".".join(pieces[start:])
        out = re.sub("(?<=\\s)«?" + tail + "»?", marked, code)  # the name unescaped, as ReProver
        if out != code:
            return out
    return code


def reference_input(state: str, serialized: list[str], budget: int = 2300) -> str:
    """The issue's description of ReProver's `format_augmented_state`: best first, each premise
    followed by a blank line and put in front of those before it, skipped when it does not fit."""
    room = budget - len(state.encode("utf-8"))
    shown: list[str] = []
    spent = 0
    for text in serialized:
        size = len((text + "\n\n").encode("utf-8"))
        if spent + size <= room:
            spent += size
            shown.insert(0, text + "\n\n")
    return "".join(shown) + state


@pytest.fixture(scope="module")
def real(data_root):
    """(states with gold names, a small corpus holding their gold premises and NAMED's)."""
    from prover.data.corpus import Corpus
    val = json.loads(require(data_root / "mathlib-src" / "leandojo-real" / "val.json").read_text())
    states = []
    for thm in val:
        for tac in thm["traced_tactics"]:
            gold = [p["full_name"] for p in tac["annotated_tactic"][1]]
            states.append((tac["state_before"], list(dict.fromkeys(gold)), thm["file_path"]))
    states = states[:N_STATES]
    wanted = {g for _, gold, _ in states for g in gold} | set(NAMED)
    lines = []
    with gzip.open(require(data_root / "mathlib-src" / "corpus.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            if any(f'"full_name": "{n}"' in line for n in wanted):
                obj = json.loads(line)
                if any(p["full_name"] in wanted for p in obj["premises"]):
                    obj["imports"] = []
                    lines.append(json.dumps(obj))
    return states, lines, Corpus


@pytest.fixture(scope="module")
def corpus(real, tmp_path_factory):
    _, lines, Corpus = real
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return Corpus.load(path)


@pytest.fixture(scope="module")
def premise_lists(real, corpus, one_thread):
    from retriever.baselines.bm25 import BM25Retriever
    from retriever.models.reprover import ByteEncoder, ReProverRetriever
    from retriever.settings import ReProverConfig
    import torch
    states, _, _ = real
    by_name = {p.full_name: p for p in corpus.premises}
    named = [by_name[n] for n in NAMED]
    torch.manual_seed(0)
    tiny = ReProverConfig(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, max_state_len=256,
                          max_premise_len=128, encode_batch_size=64)
    retrievers = {"bm25": BM25Retriever(corpus),
                  "reprover": ReProverRetriever(corpus, ByteEncoder.fresh(tiny), tiny.max_state_len,
                                                tiny.max_premise_len, tiny.encode_batch_size)}
    out = {}
    for name, r in retrievers.items():
        ranked = r.retrieve([s for s, _, _ in states], 100, [None] * len(states))
        rows = []
        for (state, gold, _), row in zip(states, ranked):
            first = [by_name[g] for g in gold if g in by_name] + named
            rows.append(list(dict.fromkeys(first + [h.premise for h in row])))
        out[name] = rows
    return out


def test_the_names_cover_the_three_ways_the_rule_goes(corpus):
    by_name = {p.full_name: p for p in corpus.premises}
    ways = set()
    for p in corpus.premises:
        text = reference_premise(p.full_name, p.code)
        if "<a>" not in text:
            ways.add("unmarked")
        elif f"_root_.{p.full_name}" in p.code:
            ways.add("_root_")
        elif p.full_name.split(".")[-1] != p.full_name and not re.search(
                rf"(?<=\s)«?{re.escape(p.full_name)}»?", p.code):
            ways.add("suffix")
    assert ways == {"unmarked", "_root_", "suffix"}
    root = by_name["String.validFor_mkIterator"]
    assert f"<a>{root.full_name}</a>" in reference_premise(root.full_name, root.code)
    find = by_name["List.next?_nil"]
    assert "<a>" not in reference_premise(find.full_name, find.code)


@pytest.mark.parametrize("retriever", ["bm25", "reprover"])
def test_the_generator_input_is_reprovers_byte_for_byte(real, premise_lists, retriever):
    from generator.input_format import FORMATS
    from generator.model import TacticGenerator, fresh_model
    from generator.settings import ModelConfig
    states, _, _ = real
    gen = TacticGenerator(fresh_model(ModelConfig(d_model=8, d_ff=16, num_layers=1, num_decoder_layers=1,
                                                  num_heads=1, d_kv=8)), FORMATS["reprover"])
    assert len(states) >= 100
    skipped_then_kept = 0
    for (state, _, _), premises in zip(states, premise_lists[retriever]):
        serialized = [reference_premise(p.full_name, p.code) for p in premises]
        want = reference_input(state, serialized)
        got, kept = gen.input_text(state, premises)
        assert got.encode("utf-8") == want.encode("utf-8")
        assert 0 <= kept <= len(premises) and want.count("\n\n") >= kept
        # Skipping, not cutting: some premise after one that did not fit is still shown.
        sizes = [len((s + "\n\n").encode()) for s in serialized]
        room, spent, first_miss = 2300 - len(state.encode()), 0, None
        for i, size in enumerate(sizes):
            if spent + size <= room:
                spent += size
                if first_miss is not None:
                    skipped_then_kept += 1
                    break
            elif first_miss is None:
                first_miss = i
    assert skipped_then_kept > 0


@pytest.mark.parametrize("retriever", ["bm25", "reprover"])
def test_the_retriever_reads_reprovers_premise_text(premise_lists, retriever):
    from retriever.models.reprover import premise_text
    seen = 0
    for row in premise_lists[retriever]:
        for p in row:
            assert premise_text(p) == reference_premise(p.full_name, p.code)
            seen += 1
    assert seen >= 100 * 100


def test_the_tokens_are_reprovers_tokenizer_call(real, premise_lists):
    """ReProver's generator tokenizes with max_length 2300 and truncation at the end."""
    from transformers import ByT5Tokenizer
    from generator.input_format import FORMATS
    from generator.model import TacticGenerator, fresh_model
    from generator.settings import ModelConfig
    states, _, _ = real
    gen = TacticGenerator(fresh_model(ModelConfig(d_model=8, d_ff=16, num_layers=1, num_decoder_layers=1,
                                                  num_heads=1, d_kv=8)), FORMATS["reprover"])
    tok = ByT5Tokenizer()
    long_state = states[0][0] + "\n" + "x : ℕ\n" * 600  # past the budget: ReProver cuts the end
    texts = [gen.input_text(s, ps)[0] for (s, _, _), ps in zip(states[:8], premise_lists["bm25"][:8])]
    texts.append(gen.input_text(long_state, [])[0])
    ours = gen._tokenize(texts, gen.max_input_tokens)
    theirs = tok(texts, padding="longest", max_length=2300, truncation=True, return_tensors="pt")
    assert ours["input_ids"].tolist() == theirs["input_ids"].tolist()
    assert ours["attention_mask"].tolist() == theirs["attention_mask"].tolist()
