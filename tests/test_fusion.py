"""`neighbors` (premises of the nearest training states) and `fusion` (learned weights over ranks)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from retriever.settings import RetrievalBenchmarkConfig
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.data.pairs import premise_queries
from retriever.base import TheoremContext
from retriever.models.learned_fusion import FusionModel, LearnedFusionRetriever, fit_fusion, order, rank_features
from retriever.registry import build_retriever, missing_training
from tests.conftest import REPO, tactic, theorem_record, write_json

# Corpus indices of TINY_CORPUS: A: a1 0, a2 1, dup 2 | B: b1 3, dup 4 | C: c1 5, c2 6, c3 7 | D: d1 8
A1, A2, DUP_A, B1, DUP_B, C1, C2, C3, D1 = range(9)


def _cfg(root: Path, split: str = "random/test") -> object:
    cfg = OmegaConf.structured(RetrievalBenchmarkConfig)
    cfg.data.root, cfg.data.split = str(root), split
    return cfg


@pytest.fixture
def states_dataset(tmp_path, tiny_corpus_path) -> Path:
    """Training proofs in C.lean: a state about rings used a1, one about orders used b1 and a2;
    `held` (about rings too, used dup of A) is also in random/test, so it must not vote."""
    root = tiny_corpus_path.parent
    ring = theorem_record("ring", "C.lean", [tactic("rw [a1]", [("a1", "A.lean")],
                                                    before="x : R\n⊢ x * 1 = x")])
    order_ = theorem_record("order", "C.lean", [tactic("exact b1.trans a2", [("b1", "B.lean"), ("a2", "A.lean")],
                                                       before="h : a ≤ b\n⊢ a ≤ c")])
    held = theorem_record("held", "C.lean", [tactic("exact dup", [("dup", "A.lean")],
                                                    before="x : R\n⊢ x * 1 = x")])
    write_json(root / "random" / "train.json", [ring, order_, held])
    write_json(root / "random" / "test.json", [held])
    return root


def _ranked(retriever, state: str, ctx=TheoremContext("C.lean", (10, 1)), k: int = 100) -> list[int]:
    return [h.index for h in retriever.retrieve([state], k, [ctx])[0]]


def test_neighbors_vote_for_the_premises_of_the_nearest_training_states(states_dataset):
    corpus = Corpus.load(states_dataset / "corpus.jsonl")
    nb = build_retriever("neighbors", corpus, _cfg(states_dataset))
    # Two training states index (held is in the evaluated split): ring's and order's.
    assert len(nb.doc_premises) == 2
    # A ring-like query: a1 first (the ring state is nearest), then b1 and a2 (the order state
    # shares only `:` and `⊢` with it, so it votes less), then the rest in locality order,
    # accessible only (c3 comes after a theorem at C.lean (10, 1); D is not imported).
    ranked = _ranked(nb, "y : R\n⊢ y * 1 = y")
    loc = build_retriever("locality", corpus, _cfg(states_dataset))
    assert ranked[0] == A1 and set(ranked[1:3]) == {B1, A2}
    assert ranked[3:] == [i for i in _ranked(loc, "") if i not in (A1, B1, A2)]
    assert set(ranked) == {A1, A2, DUP_A, B1, DUP_B, C1, C2}
    # An order-like query: b1 and a2 first (one neighbour voted for both), then locality.
    assert set(_ranked(nb, "h : p ≤ q\n⊢ p ≤ r")[:2]) == {B1, A2}
    # A query sharing no token with any training state gets locality order alone.
    assert _ranked(nb, "zzz") == _ranked(loc, "zzz")


def test_neighbors_count_training_proofs_only(states_dataset):
    corpus = Corpus.load(states_dataset / "corpus.jsonl")
    # Evaluating random/val (absent) holds nothing out: `held` votes for dup, tied with ring's a1.
    leaky = build_retriever("neighbors", corpus, _cfg(states_dataset, "random/val"))
    assert len(leaky.doc_premises) == 3 and DUP_A in _ranked(leaky, "y : R\n⊢ y * 1 = y")[:2]
    cfg = _cfg(states_dataset)
    cfg.retriever.usage_split = "random/test"
    with pytest.raises(UserInputError, match="evaluated split"):
        build_retriever("neighbors", corpus, cfg)


def test_rank_features_by_hand():
    cand, feats = rank_features([[7, 3], [3, 9]], depth=2)
    assert cand.tolist() == [7, 3, 9]
    ranks = np.array([[1, 3], [2, 1], [3, 2]], dtype=float)  # absent: depth + 1 = 3
    assert np.allclose(feats[:, :2], 1 / ranks)
    assert feats[:, 2:4].tolist() == [[1, 0], [1, 1], [0, 1]]
    assert np.allclose(feats[:, 4:], np.log(ranks))


def test_fit_fusion_learns_which_member_to_trust():
    # Member 0 always puts a gold premise first; member 1 ranks at random. Fitted weights must
    # rank member 0's first pick first: R@1 of the fused order is 1.
    rng = np.random.default_rng(0)
    ex, truth = [], []
    for q in range(60):
        pool = rng.permutation(1000)[:40] + 1000 * q
        gold = int(pool[0])
        good = [gold] + pool[1:20].tolist()
        noisy = rng.permutation(pool).tolist()[:20]
        cand, feats = rank_features([good, noisy], depth=20)
        ex.append((feats, cand == gold))
        truth.append((cand, feats, gold))
    model = fit_fusion(ex, ["good", "noisy"], depth=20)
    assert all(order(c, model.score(f))[0] == g for c, f, g in truth)
    # 1/rank of the trusted member carries positive weight, of the noisy one less.
    assert model.weights[0] > 0 and model.weights[0] > abs(model.weights[1])


def test_learned_fusion_retriever_orders_by_the_model(tiny_corpus_path, tmp_path):
    corpus = Corpus.load(tiny_corpus_path)
    loc = build_retriever("locality", corpus)
    rnd = build_retriever("random", corpus)
    # Weights that follow the second member only (its 1/rank): the fused order is random's.
    model = FusionModel(["locality", "random"], depth=100, mean=[0.0] * 6, std=[1.0] * 6,
                        weights=[0, 1, 0, 0, 0, 0], bias=0.0)
    model.save(tmp_path / "m.json")
    fused = LearnedFusionRetriever([loc, rnd], FusionModel.load(tmp_path / "m.json"))
    ctx = TheoremContext("C.lean", (5, 8))
    assert _ranked(fused, "⊢ True", ctx) == _ranked(rnd, "⊢ True", ctx)
    assert len(_ranked(fused, "⊢ True", ctx, k=3)) == 3
    with pytest.raises(ValueError, match="members"):
        LearnedFusionRetriever([loc], model)


def test_train_fusion_on_mini_beats_its_best_member_out_of_fold(mini_root, tmp_path, monkeypatch):
    """The CLI stage end to end: fitted on random/val only, 5-fold R@10 above every member's,
    and the registered `fusion` row then loads it and ranks random/test."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "prover.cli", "retriever", "train-fusion", "--config",
           str(REPO / "configs/retriever/tiny.yaml"), f"data.root={mini_root}", f"run_dir={run}",
           "fusion.members=[bm25,usage,locality,neighbors,neighbors-tactic]"]  # the shipped set less CFR
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    s = json.loads((run / "fusion" / "summary.json").read_text())
    assert s["split"] == "random/val" and s["queries"] > 100 and s["cv_folds"] == 5
    assert s["cv_R@10"] > max(s["member_R@10"].values())
    assert s["cv_R@10"] <= s["candidates_recall"]
    cfg = _cfg(mini_root)
    cfg.retriever.models = str(REPO / "configs/retriever/tiny.yaml")
    cfg.retriever.run_dir = str(run)
    assert missing_training("fusion", cfg) is None
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    import retriever.registry as registry
    loads = []
    real_load = registry.training_theorems
    monkeypatch.setattr(registry, "training_theorems", lambda *a: loads.append(a[1]) or real_load(*a))
    fused = build_retriever("fusion", corpus, cfg)
    assert [m.name for m in fused.members] == ["bm25", "usage", "locality", "neighbors", "neighbors-tactic"]
    assert len(loads) == 1  # usage and both neighbours share one loaded training split
    usage, locality, near, near_tactic = fused.members[1:]
    assert usage.locality is locality is near.locality is near_tactic.locality  # and one locality order
    queries, _ = premise_queries(ds.theorems("random/test"), corpus)
    hits = fused.retrieve([q.state for q in queries[:5]], 10,
                          [TheoremContext(q.file_path, q.position) for q in queries[:5]])
    assert all(len(h) == 10 for h in hits)
    # A test split is refused as fitting data.
    bad = subprocess.run(cmd + ["fusion.split=random/test"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode != 0 and "test split" in bad.stderr


def test_a_retrained_member_changes_what_the_fitted_fusion_depends_on(tmp_path):
    from prover.config import load_config
    from retriever.registry import member_models
    from retriever.settings import RetrieverTrainConfig
    tc = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"), [f"run_dir={tmp_path}"])
    model = tmp_path / "cfr-conventional" / "model"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights one")
    members = ["bm25", "usage", "cfr-conventional"]
    first = member_models(tc, members)
    assert list(first) == ["cfr-conventional"] and member_models(tc, ["bm25", "usage"]) == {}
    assert member_models(tc, members) == first  # the same files: the same key
    (model / "model.safetensors").write_bytes(b"weights two")  # retrained in place
    assert member_models(tc, members) != first


def test_fusion_without_its_model_names_the_command(mini_root, tmp_path):
    cfg = _cfg(mini_root)
    cfg.retriever.models = str(REPO / "configs/retriever/tiny.yaml")
    cfg.retriever.run_dir = str(tmp_path / "none")
    msg = missing_training("fusion", cfg)
    assert "fusion" in msg and "train-fusion" in msg


def test_neighbors_tactic_votes_per_tactic(states_dataset):
    # A two-tactic training proof: the state of its `have` goal votes only for the premise
    # used inside that `have`, which whole-proof neighbors cannot tell apart.
    root = states_dataset
    proof = "by\n  have h : a ≤ c := b1.trans a2\n  exact a1"
    thm = theorem_record("two", "C.lean", [{
        "tactic": proof,
        "annotated_tactic": ["by\n  have h : a ≤ c := <a>b1</a>.trans <a>a2</a>\n  exact <a>a1</a>",
                             [{"full_name": n, "def_path": p, "def_pos": [1, 1], "def_end_pos": [1, 2]}
                              for n, p in (("b1", "B.lean"), ("a2", "A.lean"), ("a1", "A.lean"))]],
        "state_before": "x : R\n⊢ x * 1 = x", "state_after": "no goals"}])
    write_json(root / "random" / "train.json", [thm])
    corpus = Corpus.load(root / "corpus.jsonl")
    whole = build_retriever("neighbors", corpus, _cfg(root))
    steps = build_retriever("neighbors-tactic", corpus, _cfg(root))
    assert steps.name == "neighbors-tactic" and len(whole.doc_premises) == 1
    assert len(steps.doc_premises) > 1
    query = "⊢ a ≤ c"
    assert set(_ranked(steps, query)[:2]) == {B1, A2}
    assert set(_ranked(whole, query)[:3]) == {A1, B1, A2}


def _whole_corpus_ranking(retriever, scores: np.ndarray, ctx, k: int) -> list[int]:
    from retriever.base import top_k
    if ctx is not None:
        scores = np.where(ctx.accessible(retriever.corpus), scores, -np.inf)
    return top_k(scores, k).tolist()


def test_locality_usage_and_neighbors_rank_as_scoring_the_whole_corpus_would(mini_root):
    # Their retrieve() touches only the voted or used premises and the front of the locality
    # order; it must return exactly what top_k over every premise's score returns.
    from retriever.base import ImportsContext
    cfg = _cfg(mini_root)
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems("random/test"), corpus, ds.skips)
    loc, usage, nb = (build_retriever(n, corpus, cfg) for n in ("locality", "usage", "neighbors"))
    n = len(corpus)
    contexts = [TheoremContext(q.file_path, q.position) for q in queries[:40]]
    contexts += [None, ImportsContext(tuple(corpus.files[:3]))]
    states = [q.state for q in queries[:40]] + [queries[0].state, queries[1].state]
    checked_votes = 0
    for state, ctx in zip(states, contexts):
        for k in (1, 10, 100, n + 5):
            assert _ranked(loc, state, ctx, k) == _whole_corpus_ranking(loc, loc.context_scores(state, ctx), ctx, k)
            assert _ranked(usage, state, ctx, k) == _whole_corpus_ranking(usage, usage.context_scores(state, ctx), ctx, k)
            v = nb.votes(state)
            tie = (nb.locality.locality_scores(ctx) + n) / (n + 1)
            whole = _whole_corpus_ranking(nb, np.where(v > 0, 1.0 + v, tie), ctx, k)
            assert _ranked(nb, state, ctx, k) == whole
            checked_votes += int((v > 0).sum() > 0)
    assert checked_votes > 40  # most queries had votes to rank ahead of locality


def test_the_fusion_can_be_fitted_on_tactic_level_steps(mini_root):
    """fusion.granularity=tactic: one query per pseudo step that uses a known premise (more
    than the statements), each with the premises its own tactic uses; anything else is refused."""
    from prover.config import load_config
    from prover.data.tactic_steps import tactic_level
    from retriever.settings import RetrieverTrainConfig
    from retriever.training.train_fusion import member_rankings
    cfg = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"),
                      [f"data.root={mini_root}", "fusion.members=[bm25,locality]"])
    statement_ranks, statement_gold = member_rankings(cfg, "random/val")
    cfg.fusion.granularity = "tactic"
    ranks, gold = member_rankings(cfg, "random/val")
    ds = Dataset(mini_root)
    steps, _ = tactic_level(ds.theorems("random/val"), max_target_bytes=0)
    queries, _ = premise_queries(steps, ds.corpus(), ds.skips)
    assert len(gold) == len(queries) > len(statement_gold) and gold == [set(q.gold) for q in queries]
    assert all(len(r) == 2 and len(r[0]) == cfg.fusion.depth for r in ranks)
    cfg.fusion.granularity = "proof"
    with pytest.raises(ValueError, match="granularity"):
        member_rankings(cfg, "random/val")


class _KeywordEncoder:
    """A stand-in for CFR's state encoder: a unit vector over the symbols the state holds."""

    WORDS = ("*", "≤", "∈")

    def __init__(self):
        self.encoded = 0

    def encode_states(self, states, batch_size=128):
        import torch
        self.encoded += len(states)
        v = torch.tensor([[float(w in s) for w in self.WORDS] + [0.1] for s in states])
        return torch.nn.functional.normalize(v, dim=-1)


def test_dense_neighbours_vote_by_the_encoders_similarity_and_keep_their_vectors(states_dataset, tmp_path):
    """neighbors-cfr: the nearest training states by the encoder (not by shared tokens) vote for
    their premises, weighted by exp(similarity / T); the rest follow in locality order; the
    training states are encoded once and their vectors kept."""
    from retriever.tried.dense_neighbors import DenseNeighborRetriever
    corpus = Corpus.load(states_dataset / "corpus.jsonl")
    train = [t for t in Dataset(states_dataset).theorems("random/train") if t.full_name != "held"]
    enc = _KeywordEncoder()
    r = DenseNeighborRetriever(corpus, train, enc, k=1, cache_dir=tmp_path, model_sha1="m")
    assert enc.encoded == 2 and len(list(tmp_path.glob("state_vectors-*.npy"))) == 1
    assert _ranked(r, "⊢ p ≤ q")[:2] in ([B1, A2], [A2, B1])  # the order state's premises
    assert _ranked(r, "⊢ 2 * y = y")[0] == A1  # the ring state's
    loc = build_retriever("locality", corpus, _cfg(states_dataset))
    assert _ranked(r, "⊢ 2 * y = y")[1:] == [i for i in _ranked(loc, "") if i != A1]
    before = enc.encoded
    again = DenseNeighborRetriever(corpus, train, enc, k=2, cache_dir=tmp_path, model_sha1="m")
    assert enc.encoded == before  # the kept vectors: no training state encoded again
    votes = dict(zip(*again.sparse_votes_batch(["⊢ 2 * y = y"])[0]))
    # k=2: ring's state (similarity 1.0 by its keyword) outvotes order's by exp(Δ / 0.05).
    assert votes[A1] > 1e3 * votes[B1] and votes[B1] == votes[A2]
    before = enc.encoded
    DenseNeighborRetriever(corpus, train, enc, k=1, cache_dir=tmp_path, model_sha1="other")
    assert enc.encoded == before + 2  # another model: its own vectors


@pytest.mark.parametrize("script, stem", [("tried.fusion_queries", "fusion-queries-mathlib-src"),
                                          ("tried.dense_neighbors", "dense-neighbors-mathlib-src")])
def test_committed_fusion_choices_render_from_their_json(script, stem):
    """The Markdown the README quotes is what the JSON says, and report was scored only when a
    recipe other than the shipped one won on select."""
    import importlib
    mod = importlib.import_module(f"benchmarks.{script}")
    path = REPO / "benchmarks" / "results" / f"{stem}.json"
    res = json.loads(path.read_text())
    assert mod.markdown(res) == path.with_suffix(".md").read_text()
    shipped = next(n for n in res["rows"] if "shipped" in n)
    assert bool(res["report"]) == (res["chosen_on_select"] != shipped)
