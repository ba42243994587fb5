"""CFR: the InfoNCE loss and its masking, fine-grained scores, accessibility-filtered search,
the FAISS index on disk, and training (loss goes down, resume continues where it stopped).

The encoder is a stand-in for the pre-trained one: a tokenizer trained on the texts at hand
and a randomly initialised tiny `BertForMaskedLM`, saved as pre-training would save it.
"""
from __future__ import annotations

import os

# Before torch loads OpenMP: on a shared CPU, threads that spin waiting for a descheduled
# sibling made every op of these tiny models ~10x slower (measured); waiting passively
# costs them nothing. Has no effect if torch was already imported by an earlier module.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from conftest import REPO, premise, write_jsonl
from prover.config import load_config
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.pairs import state_premise_pairs
from retriever.base import TheoremContext, top_k
from retriever.models.cfr import CFREncoder, CFRRetriever, model_fingerprint
from retriever.models.faiss_index import PremiseIndex, StaleIndexError, corpus_fingerprint
from retriever.registry import build_retriever
from retriever.settings import CFRConfig, RetrieverTrainConfig
from prover.data.premise import GOAL_TOKEN
from retriever.models.text import format_state, premise_args_text, premise_goal_text, premise_text
from retriever.models.tokenizer import train_tokenizer
from retriever.training.train_cfr import cfr_run_dir, info_nce, init_path, make_batch, train_cfr
from prover.training.run import Budget


def save_standin(texts: list[str], out: Path, seed: int = 0) -> Path:
    """A tokenizer on `texts` and a random tiny BertForMaskedLM: what pre-training saves."""
    tok = train_tokenizer(texts, vocab_size=2000, out_dir=out, min_frequency=1)
    torch.manual_seed(seed)
    BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64,
                               max_position_embeddings=128)).save_pretrained(out)
    return out


# --- a synthetic corpus: F0 <- F1 <- F2 (import chain), 60 premises per file ---------------

def synthetic_corpus(path: Path, per_file: int = 60, tag: str = "") -> Path:
    files = []
    for f in range(3):
        prems = [premise(f"T{tag}{f}_{i}", (2 * i + 1, 1), (2 * i + 1, 40),
                         code=f"theorem T{f}_{i} (a b : ℕ) (h : a ≤ b + {i}) : a * {f} + {i % 7} ≤ b ^ {i % 5}",
                         args=["(a b : ℕ)", f"(h : a ≤ b + {i})"] if i % 3 else [],
                         goal=f"a * {f} + {i % 7} ≤ b ^ {i % 5}")
                 for i in range(per_file)]
        files.append({"path": f"F{f}.lean", "imports": [f"F{f - 1}.lean"] if f else [], "premises": prems})
    return write_jsonl(path / "corpus.jsonl", files)


STATES = ["a b : ℕ\nh : a ≤ b + 3\n⊢ a * 1 + 3 ≤ b ^ 2", "x : ℕ\n⊢ x + 0 = x",
          "a b c : ℕ\nh₁ : a ≤ b\n⊢ a * 2 + 5 ≤ c ^ 4"]


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> tuple[Corpus, Path]:
    root = tmp_path_factory.mktemp("synth")
    corpus = Corpus.load(synthetic_corpus(root))
    texts = [premise_text(p) for p in corpus.premises] + [format_state(s) for s in STATES]
    model_dir = root / "cfr-model"
    CFREncoder.from_pretrained(save_standin(texts, root / "encoder"), CFRConfig()).save_pretrained(model_dir)
    return corpus, model_dir


@pytest.fixture(scope="module")
def synth_retriever(synth) -> CFRRetriever:
    corpus, model_dir = synth
    return CFRRetriever(corpus, model_dir, CFRConfig(), device="cpu")


# --- the loss -------------------------------------------------------------------------------

def test_info_nce_matches_hand_computation():
    tau = 0.5
    states = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    prem = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    targets = torch.tensor([0, 1])
    loss = info_nce(states, prem, targets, None, tau)

    def ce(logits: list[float], t: int) -> float:
        return -logits[t] + math.log(sum(math.exp(z) for z in logits))

    q0 = [1.0 / tau, 0.0, 0.6 / tau]
    q1 = [0.0, 1.0 / tau, 0.8 / tau]
    assert loss.item() == pytest.approx((ce(q0, 0) + ce(q1, 1)) / 2, rel=1e-6)

    # Premise 2 is another positive of query 0: out of its softmax, still in query 1's.
    mask = torch.tensor([[False, False, True], [False, False, False]])
    per_query = info_nce(states, prem, targets, mask, tau, reduction="none")
    assert per_query[0].item() == pytest.approx(ce(q0[:2], 0), rel=1e-6)
    assert per_query[1].item() == pytest.approx(ce(q1, 1), rel=1e-6)

    moved = prem.clone()
    moved[2] = torch.tensor([0.8, 0.6])  # the masked premise now looks a lot like query 0
    again = info_nce(states, moved, targets, mask, tau, reduction="none")
    assert again[0].item() == per_query[0].item()
    assert again[1].item() != per_query[1].item()


def test_make_batch_dedupes_and_masks_other_positives():
    positives = [[5, 7], [7], [1, 2, 3]]
    for seed in range(30):
        ids, targets, mask = make_batch(positives, n_premises=10, premises_per_query=4,
                                        rng=np.random.default_rng(seed))
        assert list(ids) == sorted(set(ids.tolist()))  # each premise is one candidate
        for i, pos in enumerate(positives):
            assert ids[targets[i]] in pos
            for j, p in enumerate(ids):
                assert mask[i, j] == (p in pos and j != targets[i])
        assert mask.shape == (3, len(ids))
    # Queries 0 and 1 sharing positive 7 share its column.
    ids, targets, _ = make_batch([[7], [7]], 10, 2, np.random.default_rng(0))
    assert targets[0] == targets[1]


def test_make_batch_draws_each_states_negatives_from_its_mined_ones():
    positives, hard = [[5, 7], [7], [1, 2, 3]], [[8, 9], [], [4]]
    for seed in range(30):
        ids, targets, _ = make_batch(positives, n_premises=100, premises_per_query=3,
                                     rng=np.random.default_rng(seed), hard=hard)
        chosen = {int(ids[t]) for t in targets}
        others = set(ids.tolist()) - chosen
        # State 0's two negatives come from {8, 9}, state 2's from {4}; state 1 has none mined
        # and draws uniformly: at most 2 candidates outside the mined lists and the positives.
        assert len(others - {8, 9, 4}) <= 2
        assert 4 in ids and ({8, 9} & set(ids.tolist()))


def test_training_with_hard_negatives_mines_every_pair_once_and_trains(tmp_path, mini_root, mini_encoder):
    cfg = tiny_cfg(mini_root, tmp_path / "run", mini_encoder, "cfr.batch_size=16", "cfr.max_steps=3",
                   "cfr.eval_every=-1", "cfr.hard_negatives=bm25", "cfr.hard_negatives_k=10")
    train_cfr(cfg)  # the training worker reads the cache only: it has no retriever to ask
    lines = [json.loads(line) for line in (tmp_path / "run/cfr/hard_negatives.jsonl").open()]
    ds = Dataset(mini_root)
    pairs, _ = state_premise_pairs(ds.theorems(cfg.train_split), ds.corpus())
    assert len(lines) == len(pairs) and all(len(r["negatives"]) <= 10 for r in lines)
    assert sum(len(r["negatives"]) > 0 for r in lines) > 0.9 * len(lines)
    summary = json.loads((tmp_path / "run/cfr/summary.json").read_text())
    assert summary["done"] and summary["steps"] == 3
    # What the retrieval benchmark checks before scoring it (retriever/evaluation/trained_on.py).
    assert summary["train_split"] == cfg.train_split == "random/train"


# --- similarity -----------------------------------------------------------------------------

def test_fine_score_is_mean_of_args_and_goal_scores(synth, synth_retriever):
    corpus, _ = synth
    enc = synth_retriever.encoder
    assert synth_retriever.name == "cfr" and enc.similarity == "fine"
    s = enc.encode([format_state(STATES[0])], enc.max_state_len)[0]
    for i in (0, 1, 65, 130):
        p = corpus.premises[i]
        g = enc.encode([premise_args_text(p)], enc.max_premise_len)[0]
        h = enc.encode([premise_goal_text(p)], enc.max_premise_len)[0]
        assert torch.linalg.norm(g).item() == pytest.approx(1.0, abs=1e-5)
        direct = 0.5 * (s @ g + s @ h).item()
        assert float(synth_retriever.premise_vectors[i] @ s.numpy()) == pytest.approx(direct, abs=1e-5)
    # The training path (with gradients, batched with other premises) scores the same.
    enc.eval()
    with torch.no_grad():
        train_vecs = enc.embed_premises(corpus.premises[:40]).numpy()
    np.testing.assert_allclose(train_vecs, synth_retriever.premise_vectors[:40], atol=1e-5)


def test_conventional_scores_whole_premise(synth):
    corpus, model_dir = synth
    enc = CFREncoder.from_pretrained(model_dir)
    enc.similarity = "conventional"
    vecs = enc.encode_premises(corpus.premises[:5])
    whole = enc.encode([premise_text(p) for p in corpus.premises[:5]], enc.max_premise_len)
    assert torch.equal(vecs, whole)
    with pytest.raises(ValueError, match="similarity"):
        CFREncoder(enc.bert, enc.tokenizer, similarity="coarse")


def test_left_state_truncation_keeps_the_goal_and_is_saved(synth, tmp_path):
    _, model_dir = synth
    enc = CFREncoder.from_pretrained(model_dir)
    assert enc.state_truncation_side == "right"  # saved before the option, or by default
    state = "\n".join(f"h{i} : x{i} = x{i}" for i in range(30)) + "\n⊢ zeta = omega"
    tok = enc.tokenizer
    right, left = (enc.tokenize([format_state(state)], 24, side)[0] for side in ("right", "left"))
    assert len(right) == len(left) == 24
    assert left[0] == right[0] == tok.cls_token_id and left[-1] == right[-1] == tok.sep_token_id
    goal = tok.convert_tokens_to_ids(GOAL_TOKEN)
    assert goal in left and goal not in right
    enc.state_truncation_side, enc.max_state_len = "left", 24
    enc.eval()  # embed_states runs in whatever mode the model is in
    with torch.no_grad():
        assert torch.allclose(enc.encode_states([state]), enc.embed_states([format_state(state)]), atol=1e-6)
    enc.save_pretrained(tmp_path / "cfr")
    assert CFREncoder.from_pretrained(tmp_path / "cfr").state_truncation_side == "left"
    with pytest.raises(ValueError, match="state_truncation_side"):
        CFREncoder(enc.bert, enc.tokenizer, state_truncation_side="middle")


# --- retrieval with accessibility -----------------------------------------------------------

def brute_force(vectors: np.ndarray, query: np.ndarray, mask: np.ndarray | None, k: int):
    s = vectors @ query
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    ids = top_k(s, k)
    return s[ids], ids


def test_retrieve_equals_masked_brute_force(synth, synth_retriever):
    corpus, _ = synth
    r = synth_retriever
    contexts = [TheoremContext("F1.lean", (31, 1)), TheoremContext("F0.lean", (9, 1)),
                TheoremContext("F2.lean", (200, 1)), None]
    states = [STATES[0], STATES[1], STATES[2], STATES[0]]
    queries = r.encode_states(states)
    for k in (1, 10, 50):
        hits = r.retrieve(states, k, contexts)
        for q, ctx, got in zip(queries, contexts, hits):
            mask = None if ctx is None else corpus.accessible_mask(ctx.file_path, ctx.position)
            scores, ids = brute_force(r.premise_vectors, q, mask, k)
            assert [h.index for h in got] == ids.tolist()
            np.testing.assert_allclose([h.score for h in got], scores, rtol=1e-5, atol=1e-6)
    # F0 at (9, 1): only 4 premises end before it; asking for 10 gives those 4.
    assert len(r.retrieve([STATES[1]], 10, [contexts[1]])[0]) == 4


@pytest.mark.parametrize("allowed", [1.0, 0.2, 0.01, 0.001])
def test_search_masked_is_exact(allowed):
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(3000, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    queries = rng.normal(size=(6, 16)).astype(np.float32)
    index = PremiseIndex.build(vecs, "flat")
    masks = [rng.random(3000) < allowed for _ in range(5)] + [None]
    # search_masked takes the scan on a CPU flat index; the pool (GPU's way) must agree with it.
    for search in (index.search_masked, index.scan_masked, index.pool_masked):
        for k in (1, 10, 100):
            for (s, ids), q, m in zip(search(queries, k, masks), queries, masks):
                want_s, want_ids = brute_force(vecs, q, m, k)
                assert ids.tolist() == want_ids.tolist()
                np.testing.assert_allclose(s, want_s, rtol=1e-5, atol=1e-6)


# --- the index on disk ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_index_round_trip_and_stale_refused(tmp_path, synth, kind):
    corpus, _ = synth
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(corpus), 24)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    fp = corpus_fingerprint(corpus)
    index = PremiseIndex.build(vecs, kind, fingerprint=fp, meta={"model_sha1": "abc"})
    index.save(tmp_path / "idx")
    loaded = PremiseIndex.load(tmp_path / "idx", fp, {"model_sha1": "abc"})
    queries = vecs[:20] + 0.1 * rng.normal(size=(20, 24)).astype(np.float32)
    s1, i1 = index.search(queries, 10)
    s2, i2 = loaded.search(queries, 10)
    assert np.array_equal(i1, i2) and np.array_equal(s1, s2)
    np.testing.assert_array_equal(loaded.vectors, vecs)
    if kind == "flat":
        assert i1[:, 0].tolist() == np.argmax(queries @ vecs.T, axis=1).tolist()

    other = Corpus.load(synthetic_corpus(tmp_path / "other", tag="X"))
    with pytest.raises(StaleIndexError, match="another corpus"):
        PremiseIndex.load(tmp_path / "idx", corpus_fingerprint(other))
    with pytest.raises(StaleIndexError, match="model_sha1"):
        PremiseIndex.load(tmp_path / "idx", fp, {"model_sha1": "def"})
    with pytest.raises(FileNotFoundError):
        PremiseIndex.load(tmp_path / "nothing", fp)


def test_retriever_loads_saved_index(tmp_path, synth, synth_retriever):
    corpus, model_dir = synth
    synth_retriever.save_index(tmp_path / "index")
    again = CFRRetriever(corpus, model_dir, CFRConfig(), device="cpu", index_path=tmp_path / "index")
    ctx = [TheoremContext("F2.lean", (50, 1)), None]
    a = synth_retriever.retrieve(STATES[:2], 20, ctx)
    b = again.retrieve(STATES[:2], 20, ctx)
    assert [[(h.index, h.score) for h in r] for r in a] == [[(h.index, h.score) for h in r] for r in b]
    other = Corpus.load(synthetic_corpus(tmp_path / "other", tag="X"))
    with pytest.raises(StaleIndexError):
        CFRRetriever(other, model_dir, CFRConfig(), device="cpu", index_path=tmp_path / "index")


# --- training on mathlib-src-mini -----------------------------------------------------------

@pytest.fixture(scope="module")
def mini_encoder(tmp_path_factory, request) -> Path:
    mini_root = request.getfixturevalue("mini_root")
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    pairs, _ = state_premise_pairs(ds.theorems("random/train"), corpus)
    texts = [premise_text(p) for p in corpus.premises] + [format_state(p.state) for p in pairs]
    return save_standin(texts, tmp_path_factory.mktemp("mini") / "encoder")


def tiny_cfg(mini_root: Path, run_dir: Path, encoder: Path, *overrides: str):
    return load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"), [
        f"data.root={mini_root}", f"run_dir={run_dir}", f"cfr.init={encoder}", "device=cpu",
        "cfr.max_state_len=64", "cfr.max_premise_len=32", *overrides])


def fixed_batch_loss(model_dir: Path, cfg, n: int = 32) -> float:
    ds = Dataset(cfg.data.root)
    corpus = ds.corpus()
    pairs, _ = state_premise_pairs(ds.theorems(cfg.train_split), corpus)
    enc = CFREncoder.from_pretrained(model_dir, cfg.cfr).eval()
    ids, targets, mask = make_batch([p.premises for p in pairs[:n]], len(corpus), 2,
                                    np.random.default_rng(0))
    with torch.no_grad():
        s = enc.embed_states([format_state(p.state) for p in pairs[:n]])
        p = enc.embed_premises([corpus.premises[i] for i in ids])
        return info_nce(s, p, targets, mask, cfg.cfr.temperature).item()


def test_training_lowers_loss_and_keeps_best(tmp_path, mini_root, mini_encoder, monkeypatch):
    cfg = tiny_cfg(mini_root, tmp_path / "run", mini_encoder, "cfr.batch_size=16",
                   "cfr.max_steps=40", "cfr.lr=1e-3", "cfr.warmup_steps=5", "cfr.log_every=10",
                   "cfr.eval_queries=30")
    assert init_path(cfg) == mini_encoder
    model_dir = train_cfr(cfg)
    assert model_dir == cfr_run_dir(cfg) / "model" == tmp_path / "run" / "cfr" / "model"
    assert (model_dir / "cfr.json").exists()
    before = fixed_batch_loss(mini_encoder, cfg)
    after = fixed_batch_loss(model_dir, cfg)
    assert after < 0.8 * before, (before, after)

    summary = json.loads((model_dir.parent / "summary.json").read_text())
    assert summary["done"] and summary["steps"] == 40 and summary["val_queries"] == 30
    rows = [json.loads(line) for line in (model_dir.parent / "train_log.jsonl").open()]
    evals = [r for r in rows if "val_R@10" in r]
    assert [r["step"] for r in evals] == [0, 40]  # the untrained baseline, then the last step
    assert summary["best_val_R@10"] == max(r["val_R@10"] for r in evals)
    assert summary["untrained_val_R@10"] == evals[0]["val_R@10"]

    # Validation left the best model's index beside it; the registry loads it instead of
    # re-encoding, and it equals a fresh encoding of the corpus with the saved weights.
    corpus = Dataset(mini_root).corpus()
    fresh = CFRRetriever(corpus, model_dir, cfg.cfr, "cpu")
    with monkeypatch.context() as m:
        m.setattr(CFREncoder, "encode_premises", lambda *a, **k: pytest.fail("re-encoded the corpus"))
        saved = build_retriever("cfr", corpus, cfg)
    assert saved.index.meta["model_sha1"] == model_fingerprint(model_dir)
    np.testing.assert_allclose(saved.premise_vectors, fresh.premise_vectors, atol=1e-5)


def test_resume_continues_from_checkpoint(tmp_path, mini_root, mini_encoder, monkeypatch):
    args = ("cfr.batch_size=8", "cfr.max_steps=8", "cfr.log_every=1", "cfr.checkpoint_every=3",
            "cfr.eval_every=-1")
    straight = train_cfr(tiny_cfg(mini_root, tmp_path / "a", mini_encoder, *args))

    cfg = tiny_cfg(mini_root, tmp_path / "b", mini_encoder, *args)

    def kill_at_5(self):
        if self.progress.step >= 5:
            raise KeyboardInterrupt  # killed; the last checkpoint is step 3's
        return False

    with monkeypatch.context() as m:
        m.setattr(Budget, "exhausted", kill_at_5)
        with pytest.raises(KeyboardInterrupt):
            train_cfr(cfg)
    with monkeypatch.context() as m:  # then the budget runs out after step 7
        m.setattr(Budget, "exhausted", lambda self: self.progress.step >= 7)
        train_cfr(cfg)
    stopped = json.loads((tmp_path / "b/cfr/summary.json").read_text())
    assert stopped["steps"] == 7 and not stopped["done"]
    resumed = train_cfr(cfg)
    assert json.loads((tmp_path / "b/cfr/summary.json").read_text())["done"]

    def losses(run: str) -> list[tuple[int, float]]:
        rows = [json.loads(line) for line in (tmp_path / run / "cfr/train_log.jsonl").open()]
        return [(r["step"], r["loss"]) for r in rows if "loss" in r]

    a, b = dict(losses("a")), losses("b")
    assert [step for step, _ in b] == [1, 2, 3, 4, 5, 4, 5, 6, 7, 8]
    for step, loss in b:  # the same batches, negatives and dropout as the straight run
        assert loss == pytest.approx(a[step], abs=1e-4)
    wa = CFREncoder.from_pretrained(straight).state_dict()
    wb = CFREncoder.from_pretrained(resumed).state_dict()
    assert all(torch.allclose(wa[key], wb[key], atol=1e-5) for key in wa)


def test_masked_search_benchmark_compares_identical_rankings(synth, synth_retriever):
    from conftest import benchmark_script
    from prover.data.pairs import PremiseQuery
    corpus, _ = synth
    queries = [PremiseQuery(theorem="t", tactic_index=i, file_path="F2.lean", position=(50, 1), state=s, gold=())
               for i, s in enumerate(STATES * 4)]
    row = benchmark_script("tried/masked_search").compare(synth_retriever, queries, n=8, k=20, batch=3)
    assert row["identical_rankings"] == row["queries"] == 8 and row["n_premises"] == len(corpus)
    assert row["max_score_difference"] < 1e-5
    for part in ("encode_batch1", "mask_batch1", "scan_masked", "pool_masked"):
        assert 0 <= row[part]["p50_ms"] <= row[part]["p95_ms"]
    # Masking 180 premises can take under the 5 µs that rounding to 0.01 ms keeps; a forward pass cannot.
    assert row["encode_batch1"]["p50_ms"] > 0
    assert row["scan_masked"]["queries_per_s_batch3"] > 0


def test_tactic_level_pairs_add_stated_goals_and_exact_steps_keep_their_own_premises():
    from conftest import DATA_ROOT, require
    from retriever.training.train_cfr import training_theorems
    ds = Dataset(require(DATA_ROOT / "mathlib-src-mini"))
    corpus = ds.corpus()
    theorems = list(ds.theorems("random/train"))[:400]
    by = {mode: state_premise_pairs(training_theorems(theorems, mode), corpus)[0]
          for mode in ("statement", "steps", "exact-steps")}
    statement = {(p.theorem, p.state): set(p.premises) for p in by["statement"]}
    steps = {(p.theorem, p.state): set(p.premises) for p in by["steps"]}
    exact = {(p.theorem, p.state): set(p.premises) for p in by["exact-steps"]}
    # Later steps sit at the initial state and merge back into it: every statement pair is
    # there with its premises (an equation-compiler proof has no step, so a few are missing);
    # the goals a proof states add states of their own.
    shared = statement.keys() & steps.keys()
    assert len(shared) > 0.9 * len(statement)
    assert all(steps[k] == statement[k] for k in shared)
    assert len(steps.keys() - statement.keys()) >= 5  # few: most stated goals carry no premise
    # An exact step keeps only its own tactic's premises: a subset, strict where a later step used others.
    assert exact.keys() <= statement.keys()
    assert all(exact[k] <= statement[k] for k in exact)
    assert sum(exact[k] < statement[k] for k in exact) >= 5
    with pytest.raises(ValueError, match="cfr.pairs"):
        training_theorems(theorems, "tactics")
