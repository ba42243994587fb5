"""The ReProver-style baseline (loss, negatives, training, retrieval, checkpoints) and RRF hybrids."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import ByT5Tokenizer

from prover.commands.retriever_train_reprover import run_train_reprover
from prover.config import DEMO_DATA, load_config
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.pairs import PremiseQuery, premise_queries
from prover.data.premise import Premise
from retriever.base import RankedPremise, Retriever, ScoringRetriever, TheoremContext, top_k
from retriever.baselines.bm25 import BM25Retriever
from retriever.baselines.hybrid import HybridRetriever, rrf_fuse
from retriever.models.reprover import (ByteEncoder, ReProverRetriever, build_reprover, corpus_fingerprint,
                                label_matrix, load_tokenizer, premise_text, sample_negatives,
                                similarity_loss)
from retriever.settings import ReProverConfig, RetrieverTrainConfig
from retriever.training.train_reprover import make_batch

TINY = ReProverConfig(d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16,
                      max_state_len=128, max_premise_len=64, encode_batch_size=16)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def demo() -> tuple[Corpus, list[PremiseQuery], list[PremiseQuery]]:
    ds = Dataset(DEMO_DATA)
    corpus = ds.corpus()
    train, _ = premise_queries(ds.theorems("random/train"), corpus)
    val, _ = premise_queries(ds.theorems("random/val"), corpus)
    return corpus, train, val


def fresh_encoder(seed: int = 0) -> ByteEncoder:
    torch.manual_seed(seed)
    return ByteEncoder.fresh(TINY).eval()


# --- loss and batches ---------------------------------------------------------------------

def test_mse_loss_equals_hand_computation_and_labels_mark_all_gold():
    states = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    premises = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])  # corpus indices 5, 9, 7
    labels = label_matrix([{5, 7}, {9}], [5, 9, 7])
    assert labels.tolist() == [[1, 0, 1], [0, 1, 0]]  # 7 is query 0's other positive: 1
    # cos = [[1, .6, 0], [0, .8, 1]]; squared errors 0, .36, 1, 0, .04, 1 over 6 cells
    assert similarity_loss(states, premises, labels).item() == pytest.approx(2.4 / 6)


def test_gradient_checkpointing_gives_the_same_loss_and_gradients():
    """What paper.yaml turns on to fit batch 8 on one GPU must change memory, not the maths."""
    texts = ["theorem foo (n : Nat) : n + 0 = n", "a ≤ b → b ≤ c → a ≤ c", "x"]
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        encoder = ByteEncoder.fresh(dataclasses.replace(TINY, dropout=0.0)).train()
        if checkpointing:
            encoder.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        e = encoder(texts, 64)
        loss = similarity_loss(e[:1], e[1:], torch.tensor([[1.0, 0.0]]))
        loss.backward()
        grads.append((loss.item(), [p.grad.clone() for p in encoder.parameters()]))
    assert encoder.model.is_gradient_checkpointing
    assert grads[0][0] == pytest.approx(grads[1][0], abs=1e-6)
    for a, b in zip(grads[0][1], grads[1][1]):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_batch_labels_mark_other_examples_positives_of_the_same_state(demo):
    corpus, train, _ = demo
    qi = next(i for i, q in enumerate(train) if len(q.gold) >= 2)
    other = next(i for i, q in enumerate(train) if not set(q.gold) & set(train[qi].gold))
    batch = [(qi, train[qi].gold[0]), (qi, train[qi].gold[1]), (other, train[other].gold[0])]
    states, cands, labels = make_batch(batch, train, corpus, TINY, np.random.default_rng(0))
    assert states == [train[qi].state, train[qi].state, train[other].state]
    assert cands[:3] == [p for _, p in batch] and len(cands) == 3 * (1 + TINY.negatives)
    for row, (q, _) in enumerate(batch):
        assert labels[row].tolist() == [float(c in train[q].gold) for c in cands]
    assert labels[0, 1] == 1 and labels[1, 0] == 1  # each example's positive is the other's too
    assert labels[2, :2].tolist() == [0, 0]


def test_premise_text_marks_the_name_in_the_code():
    p = Premise("Nat.foo_le", "F.lean", (1, 1), (2, 1), "theorem",
                "theorem foo_le (n : ℕ) : n ≤ n", ("(n : ℕ)",), "n ≤ n")
    assert premise_text(p) == "theorem <a>Nat.foo_le</a> (n : ℕ) : n ≤ n"


# --- negatives ----------------------------------------------------------------------------

def test_negatives_by_hand_on_the_tiny_corpus(tiny_corpus_path: Path):
    corpus = Corpus.load(tiny_corpus_path)
    idx = {(p.path, p.full_name): i for i, p in enumerate(corpus.premises)}
    accessible = corpus.accessible_mask("C.lean", (5, 8))  # A, B, c1, c2 (not c3, not D)
    a_file = {idx["A.lean", n] for n in ("a2", "dup")}
    for seed in range(20):
        rng = np.random.default_rng(seed)
        negs = sample_negatives(corpus, idx["A.lean", "a1"], accessible, 3, 1, rng)
        assert len(set(negs)) == 3 and len(a_file & set(negs)) == 1
        assert all(accessible[n] for n in negs) and idx["A.lean", "a1"] not in negs
        # c1's file offers only c2 (c3 comes after the theorem); asking for 2 gives 1.
        negs = sample_negatives(corpus, idx["C.lean", "c1"], accessible, 3, 2, rng)
        assert negs[0] == idx["C.lean", "c2"] and len(set(negs)) == 3
        assert all(corpus.premises[n].path in ("A.lean", "B.lean") for n in negs[1:])
    # Not enough accessible premises: all of them, once, never the positive.
    negs = sample_negatives(corpus, idx["C.lean", "c2"], accessible, 10, 1, np.random.default_rng(0))
    assert sorted(negs) == sorted(set(np.flatnonzero(accessible)) - {idx["C.lean", "c2"]})


def test_negatives_on_demo_data_are_accessible_with_the_same_file_quota(demo):
    corpus, train, _ = demo
    seen_full = seen_short = 0
    rng = np.random.default_rng(0)
    for q in train:
        acc = corpus.accessible_mask(q.file_path, q.position)
        for pos in q.gold:
            negs = sample_negatives(corpus, pos, acc, 3, 1, rng)
            same = corpus.premise_file == corpus.premise_file[pos]
            available = int((acc & same).sum()) - int(acc[pos])
            assert all(acc[n] for n in negs) and pos not in negs and len(set(negs)) == len(negs)
            assert sum(same[n] for n in negs) == min(1, available)
            # The rest come from other files, as many as there are (never the same file twice).
            assert len(negs) == min(1, available) + min(3 - min(1, available), int((acc & ~same).sum()))
            seen_full += available >= 1
            seen_short += available == 0
    assert seen_full > 0  # the quota case is exercised


# --- training -----------------------------------------------------------------------------

def _overrides(run_dir: Path, **extra) -> list[str]:
    base = {"data.root": DEMO_DATA, "run_dir": str(run_dir), "reprover.d_model": 32,
            "reprover.d_ff": 64, "reprover.num_layers": 1, "reprover.num_heads": 2,
            "reprover.d_kv": 16, "reprover.max_state_len": 128, "reprover.max_premise_len": 64,
            "reprover.batch_size": 8, "reprover.lr": 2e-3, "reprover.warmup_steps": 2,
            "reprover.log_every": 1, "reprover.encode_batch_size": 32, "reprover.epochs": 3}
    return [f"{k}={v}" for k, v in (base | extra).items()]


def test_short_training_run_lowers_the_loss_and_resumes(tmp_path: Path, monkeypatch):
    assert run_train_reprover(None, _overrides(tmp_path)) == 0
    out = tmp_path / "reprover"
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in rows if "loss" in r]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:3])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["done"] and summary["epochs_completed"] == 3
    assert len(summary["evaluations"]) == 3 and summary["best_val_R@10"] is not None
    assert (out / "model" / "config.json").exists()
    # Validation cached the saved model's premise embeddings, and they are what a load computes.
    cached = list((out / "model").glob("corpus_embeddings-*.npy"))
    assert len(cached) == 1
    cfg = load_config(RetrieverTrainConfig, None, _overrides(tmp_path))
    with monkeypatch.context() as m:
        m.setattr(ByteEncoder, "encode", lambda *a, **k: pytest.fail("re-encoded the corpus"))
        loaded = build_reprover(Dataset(DEMO_DATA).corpus(), cfg)
    fresh = loaded.encoder.encode([premise_text(p) for p in loaded.corpus.premises],
                                  cfg.reprover.max_premise_len, 32)
    np.testing.assert_allclose(loaded.embeddings, fresh, atol=1e-5)
    # Running it again resumes a finished run: nothing more is trained.
    assert run_train_reprover(None, _overrides(tmp_path)) == 0
    again = json.loads((out / "summary.json").read_text())
    assert again["steps"] == summary["steps"] and len(again["evaluations"]) == 3


def test_budget_stop_keeps_a_validated_model_and_the_budget_spans_attempts(tmp_path: Path):
    args = _overrides(tmp_path, **{"reprover.max_minutes": 1e-4})
    assert run_train_reprover(None, args) == 0
    summary = json.loads((tmp_path / "reprover" / "summary.json").read_text())
    assert summary["stopped_by_budget"] and not summary["done"] and summary["steps"] == 1
    assert (tmp_path / "reprover" / "model" / "config.json").exists()
    assert run_train_reprover(None, args) == 0  # the budget is spent: no further step
    assert json.loads((tmp_path / "reprover" / "summary.json").read_text())["steps"] == 1


def test_max_steps_stops_training_done_and_validated(tmp_path: Path):
    # A GPU run given the steps a CPU budget buys stops there, as a finished run.
    assert run_train_reprover(None, _overrides(tmp_path, **{"reprover.max_steps": 3})) == 0
    summary = json.loads((tmp_path / "reprover" / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["done"] and not summary["stopped_by_budget"]
    assert summary["evaluations"][-1]["step"] == 3 and summary["warmup_steps"] == 2
    assert (tmp_path / "reprover" / "model" / "config.json").exists()


def test_left_truncation_keeps_the_end_of_a_state():
    enc = ByteEncoder.fresh(ReProverConfig(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8))
    enc.eval()
    goal = "⊢ a + b = b + a"
    long_a, long_b = "x : Nat\n" * 40 + goal, "y : Int\n" * 40 + goal
    with torch.no_grad():
        left = enc([long_a, long_b], 18, "left")  # the goal's 17 bytes + EOS
        right = enc([long_a, long_b], 18, "right")
    # Kept ends are the same goal: equal embeddings; kept starts differ.
    torch.testing.assert_close(left[0], left[1])
    assert not torch.allclose(right[0], right[1])


# --- retrieval and checkpoints ------------------------------------------------------------

def test_retriever_equals_brute_force_masked_ranking(demo):
    corpus, _, val = demo
    enc = fresh_encoder()
    r = ReProverRetriever(corpus, enc, TINY.max_state_len, TINY.max_premise_len, TINY.encode_batch_size)
    states = [q.state for q in val]
    hits = r.retrieve(states, len(corpus), [TheoremContext(q.file_path, q.position) for q in val])
    premises = enc.encode([premise_text(p) for p in corpus.premises], TINY.max_premise_len, 16)
    queries = enc.encode(states, TINY.max_state_len, 16)
    for q, qv, got in zip(val, queries, hits):
        mask = corpus.accessible_mask(q.file_path, q.position)
        expected = top_k(np.where(mask, premises @ qv, -np.inf), len(corpus))
        assert [h.index for h in got] == expected.tolist()
        assert len(got) == int(mask.sum()) and all(mask[h.index] for h in got)


def test_local_checkpoint_loads_to_identical_embeddings_and_caches_them(demo, tmp_path: Path,
                                                                       monkeypatch):
    corpus, _, _ = demo
    enc = fresh_encoder(seed=3)
    direct = ReProverRetriever(corpus, enc, TINY.max_state_len, TINY.max_premise_len, 16).embeddings
    model_dir = tmp_path / "public"
    enc.save(model_dir)
    cfg = load_config(RetrieverTrainConfig, None, [f"run_dir={tmp_path / 'runs'}"]
                      + [f"reprover.{k}={getattr(TINY, k)}" for k in ("max_state_len", "max_premise_len")]
                      + [f"reprover.checkpoint={model_dir}"])
    loaded = build_reprover(corpus, cfg)
    np.testing.assert_allclose(loaded.embeddings, direct, atol=1e-6)
    assert len(list(model_dir.glob("corpus_embeddings-*.npy"))) == 1
    # A second load reads the cache instead of encoding the corpus again.
    monkeypatch.setattr(ByteEncoder, "encode", lambda *a, **k: pytest.fail("re-encoded"))
    np.testing.assert_array_equal(build_reprover(corpus, cfg).embeddings, loaded.embeddings)
    # Other weights, other fingerprint: a retrained model never reads stale embeddings.
    texts = [premise_text(p) for p in corpus.premises]
    before = corpus_fingerprint(texts, loaded.encoder, 64)
    with torch.no_grad():
        next(loaded.encoder.parameters()).add_(1e-3)
    assert corpus_fingerprint(texts, loaded.encoder, 64) != before
    # A checkpoint without tokenizer files still reads bytes.
    for f in model_dir.iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            f.unlink()
    assert isinstance(load_tokenizer(str(model_dir)), ByT5Tokenizer)


def test_interrupted_corpus_encode_resumes_to_the_same_embeddings(demo, tmp_path: Path,
                                                                  monkeypatch):
    corpus, _, _ = demo
    texts = [premise_text(p) for p in corpus.premises]
    enc = fresh_encoder(seed=4)
    whole = enc.encode(texts, TINY.max_premise_len, 4)
    partial = tmp_path / "enc.partial.npz"
    forward, calls = ByteEncoder.forward, []

    def dies_after_five(self, batch, max_len, *side):
        calls.append(len(batch))
        if len(calls) > 5:
            raise KeyboardInterrupt  # the session ends mid-encode
        return forward(self, batch, max_len, *side)

    monkeypatch.setattr(ByteEncoder, "forward", dies_after_five)
    with pytest.raises(KeyboardInterrupt):
        enc.encode(texts, TINY.max_premise_len, 4, partial=partial, save_every=2)
    with np.load(partial) as z:
        assert int(z["done"]) == 16  # the save after batch 4; batch 5 was lost with the process
    monkeypatch.setattr(ByteEncoder, "forward", forward)
    done_again = []
    monkeypatch.setattr(ByteEncoder, "forward",
                        lambda self, b, m, *side: done_again.append(len(b)) or forward(self, b, m, *side))
    resumed = enc.encode(texts, TINY.max_premise_len, 4, partial=partial, save_every=2)
    assert sum(done_again) == len(texts) - 16  # only the rows not saved were encoded again
    np.testing.assert_allclose(resumed, whole, atol=1e-6)
    assert not partial.exists()


# --- hybrid -------------------------------------------------------------------------------

class FixedRanking(Retriever):
    """Returns a fixed ranking of corpus indices, filtered by accessibility."""

    def __init__(self, corpus: Corpus, ranking: list[int], name: str = "fixed") -> None:
        super().__init__(corpus)
        self.ranking = ranking
        self.name = name

    def retrieve(self, states, k, contexts):
        out = []
        for ctx in contexts:
            mask = (np.ones(len(self.corpus), bool) if ctx is None
                    else self.corpus.accessible_mask(ctx.file_path, ctx.position))
            keep = [i for i in self.ranking if mask[i]][:k]
            out.append([RankedPremise(i, self.corpus.premises[i], -float(r)) for r, i in enumerate(keep)])
        return out


class RandomScores(ScoringRetriever):
    name = "random"

    def score(self, states):
        return np.random.default_rng(len(states)).random((len(states), len(self.corpus)))


def test_rrf_fusion_equals_hand_computation():
    fused = rrf_fuse([[0, 1, 2], [2, 3, 0]], [1.0, 1.0], k_rrf=60)
    # 0 and 2 tie at 1/61 + 1/63: the first ranking decides; 1 and 3 tie at 1/62: 1 is in it.
    assert [i for i, _ in fused] == [0, 2, 1, 3]
    assert [s for _, s in fused] == pytest.approx([1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62, 1 / 62])
    weighted = dict(rrf_fuse([[0, 1, 2], [2, 3, 0]], [2.0, 1.0], k_rrf=60))
    assert weighted == pytest.approx({0: 2 / 61 + 1 / 63, 1: 2 / 62, 2: 2 / 63 + 1 / 61, 3: 1 / 62})
    # Neither 6 nor 7 is in the first ranking and they tie: the lower corpus index wins.
    assert [i for i, _ in rrf_fuse([[0], [7, 6], [6, 7]], [1, 1, 1], k_rrf=60)] == [6, 7, 0]


def test_hybrid_through_the_retriever_interface(tiny_corpus_path: Path):
    corpus = Corpus.load(tiny_corpus_path)
    h = HybridRetriever([FixedRanking(corpus, [0, 1, 2]), FixedRanking(corpus, [2, 3, 0])], depth=3)
    hits = h.retrieve(["⊢ True"], 3, [None])[0]
    assert [x.index for x in hits] == [0, 2, 1]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 63) and h.name == "hybrid"
    # The theorem at C.lean (5, 8) cannot see c3 (index 7) or D's d1 (index 8).
    h = HybridRetriever([FixedRanking(corpus, [8, 7, 5]), FixedRanking(corpus, [7, 6, 0])], depth=10)
    got = [x.index for x in h.retrieve(["⊢ True"], 10, [TheoremContext("C.lean", (5, 8))])[0]]
    assert got == [5, 6, 0]
    with pytest.raises(ValueError):
        HybridRetriever([FixedRanking(corpus, [0])], weights=[1.0, 2.0])


def test_hybrid_bm25_and_another_retriever_return_only_accessible_premises(demo):
    corpus, _, val = demo
    members = [BM25Retriever(corpus), RandomScores(corpus)]
    h = HybridRetriever(members, depth=10, weights=[1.0, 0.5], name="bm25+random")
    ctxs = [TheoremContext(q.file_path, q.position) for q in val]
    states = [q.state for q in val]
    member_hits = [m.retrieve(states, 20, ctxs) for m in members]
    for q, hits, *per_member in zip(val, h.retrieve(states, 20, ctxs), *member_hits):
        mask = corpus.accessible_mask(q.file_path, q.position)
        idx = [x.index for x in hits]
        assert all(mask[i] for i in idx) and len(set(idx)) == len(idx)
        assert set(idx) <= {x.index for m in per_member for x in m}
        assert len(idx) == min(20, len({x.index for m in per_member for x in m}))
        scores = [x.score for x in hits]
        assert scores == sorted(scores, reverse=True) and all(math.isfinite(s) for s in scores)
