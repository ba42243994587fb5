"""CAR: the loss formula, hard-negative mining and its cache, re-ranking, training and resume."""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

import retriever.training.train_car as train_car_module
from prover.commands.retriever_train_car import run_train_car
from prover.config import load_config
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.data.pairs import state_premise_pairs
from retriever.base import RankedPremise, Retriever, TheoremContext
from retriever.baselines.bm25 import BM25Retriever
from retriever.models.car import CARScorer, RerankRetriever, car_loss, car_run_dir, truncate_pair
from retriever.settings import RetrieverTrainConfig
from retriever.models.text import format_state, premise_text
from retriever.models.tokenizer import train_tokenizer
from retriever.training.train_car import CARData, group_loss, mine_hard_negatives, train_car

REPO = Path(__file__).resolve().parents[1]
TINY = str(REPO / "configs" / "retriever" / "tiny.yaml")


# ---------------------------------------------------------------------------------------
# Fixtures: mini, BM25 over it, and a random tiny encoder with a tokenizer trained on mini.

@pytest.fixture(scope="module")
def mini(mini_root: Path):
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    pairs, _ = state_premise_pairs(ds.theorems("random/train"), corpus)
    return corpus, pairs, BM25Retriever(corpus)


@pytest.fixture(scope="module")
def encoder(mini, tmp_path_factory) -> Path:
    """Stands in for `<run_dir>/pretrain/model`: a BertForMaskedLM folder with its tokenizer."""
    corpus, pairs, _ = mini
    out = tmp_path_factory.mktemp("encoder")
    tok = train_tokenizer([format_state(p.state) for p in pairs] + [premise_text(p) for p in corpus.premises],
                          vocab_size=2000, out_dir=out)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=128, max_position_embeddings=128,
                               pad_token_id=tok.pad_token_id)).save_pretrained(out)
    return out


def car_overrides(mini_root: Path, run_dir: Path, **car) -> list[str]:
    """tiny.yaml made smaller still: a few optimizer steps of short sequences (with BERT's
    attention dropout, the setting the loss thresholds below were measured with)."""
    settings = dict(max_len=64, negatives=3, random_negatives=1, batch_size=8, grad_accum=1, lr=1e-3,
                    warmup_steps=2, hard_negatives_k=20, k1=10, eval_queries=10, log_every=1, max_steps=6,
                    checkpoint_every=100, attention_dropout=0.1) | car
    return [f"data.root={mini_root}", f"run_dir={run_dir}", "seed=7"] + [f"car.{k}={v}" for k, v in settings.items()]


def car_cfg(mini_root: Path, run_dir: Path, **car):
    return load_config(RetrieverTrainConfig, TINY, car_overrides(mini_root, run_dir, **car))


def log_rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "car-bm25" / "train_log.jsonl").read_text().splitlines()]


class CountingRetriever(Retriever):
    """Wraps a retriever and counts the states it was asked about."""

    def __init__(self, inner: Retriever) -> None:
        super().__init__(inner.corpus)
        self.inner, self.name, self.asked = inner, inner.name, 0

    def retrieve(self, states, k, contexts):
        self.asked += len(states)
        return self.inner.retrieve(states, k, contexts)


# ---------------------------------------------------------------------------------------
# Loss and encoding

def test_car_loss_matches_hand_computation():
    # Pr = sigmoid(2, 0, -1) = 0.880797, 0.5, 0.268941; sum 1.649738; -log(0.880797 / 1.649738) = -log(0.533901)
    assert car_loss(torch.tensor([[2.0, 0.0, -1.0]])).item() == pytest.approx(0.627545, abs=1e-6)
    sig = [1 / (1 + math.exp(-x)) for x in (2.0, 0.0, -1.0)]
    assert car_loss(torch.tensor([[2.0, 0.0, -1.0]])).item() == pytest.approx(-math.log(sig[0] / sum(sig)), rel=1e-6)
    # A batch is the mean of its rows; positive in column 0.
    rows = torch.tensor([[2.0, 0.0, -1.0], [-1.0, 0.0, 2.0]])
    assert car_loss(rows).item() == pytest.approx((0.627545 + -math.log(sig[2] / sum(sig))) / 2, abs=1e-6)
    # Far in the tail sigmoid(x) ≈ e^x underflows in float32; the log-space form does not:
    # the ratio becomes a softmax, -log(1 / (1 + e^-1 + e^-2)).
    logits = torch.tensor([[-200.0, -201.0, -202.0]], requires_grad=True)
    loss = car_loss(logits)
    loss.backward()
    assert loss.item() == pytest.approx(math.log(1 + math.exp(-1) + math.exp(-2)), abs=1e-5)
    assert torch.isfinite(logits.grad).all()


def test_truncation_cuts_the_state_first():
    s, p = list(range(100)), list(range(1000, 1010))
    assert truncate_pair(s, p, 200) == (s, p)  # fits: nothing cut
    assert truncate_pair(s, p, 50) == (s[:40], p)  # the premise stays whole
    # A premise too long for half the window is cut too; the state keeps half.
    assert truncate_pair(s, list(range(80)), 50) == (s[:25], list(range(25)))
    assert truncate_pair(s[:5], list(range(80)), 50) == (s[:5], list(range(45)))
    # Cut on the left, the state keeps its end (the goal); the premise is cut as before.
    assert truncate_pair(s, p, 50, "left") == (s[60:], p)
    assert truncate_pair(s, list(range(80)), 50, "left") == (s[75:], list(range(25)))
    assert truncate_pair(s[:5], p, 50, "left") == (s[:5], p)
    with pytest.raises(ValueError, match="state_side"):
        truncate_pair(s, p, 50, "middle")


def test_left_truncation_keeps_the_goal_and_round_trips(mini, encoder, tmp_path):
    corpus, pairs, _ = mini
    long_state = "\n".join(f"h{i} : {i} < {i} + 1" for i in range(40)) + "\n⊢ Finite (Set.univ : Set ℕ)"
    premise = corpus.premises[0]
    for side, keeps_goal in (("right", False), ("left", True)):
        scorer = CARScorer.from_encoder(encoder, max_len=48, truncation_side=side)
        ids = scorer.encode([long_state], [premise])["input_ids"][0].tolist()
        assert len(ids) == 48
        state_part = scorer.tokenizer.decode(ids[1:ids.index(scorer.tokenizer.sep_token_id)])
        assert ("Finite" in state_part) == keeps_goal, (side, state_part)
    scorer.save_pretrained(tmp_path / "car")
    assert CARScorer.from_pretrained(tmp_path / "car").truncation_side == "left"
    with pytest.raises(ValueError, match="state_side"):
        CARScorer.from_encoder(encoder, max_len=48, truncation_side="up")


def test_scorer_encodes_pairs_and_round_trips(mini, encoder, tmp_path):
    corpus, pairs, _ = mini
    scorer = CARScorer.from_encoder(encoder, max_len=64, score_batch_size=3)
    tok = scorer.tokenizer
    states = [pairs[0].state] * 4 + [pairs[1].state] * 3
    premises = corpus.premises[:7]
    enc = scorer.encode(states, premises)
    ids = enc["input_ids"][0][enc["attention_mask"][0].bool()].tolist()
    seps = [i for i, t in enumerate(ids) if t == tok.sep_token_id]
    assert ids[0] == tok.cls_token_id and len(seps) == 2 and seps[1] == len(ids) - 1
    assert tok.decode(ids[seps[0] + 1: -1]) == tok.decode(tok(premise_text(premises[0]),
                                                             add_special_tokens=False)["input_ids"])
    assert enc["token_type_ids"][0][: seps[0] + 1].sum() == 0
    assert enc["token_type_ids"][0][seps[0] + 1: len(ids)].eq(1).all()
    assert enc["input_ids"].shape[1] <= 64
    scores = scorer.score(states, premises)  # three batches of 3, 3, 1
    assert scores.shape == (7,) and np.isfinite(scores).all()
    assert np.allclose(scores, scorer.score(states[:2], premises[:2]).tolist() + scores[2:].tolist(), atol=1e-5)
    scorer.meta = {"k1": 7, "first_stage": "bm25"}
    scorer.save_pretrained(tmp_path / "car")
    again = CARScorer.from_pretrained(tmp_path / "car")
    assert again.max_len == 64 and again.score_batch_size == 3 and again.meta == scorer.meta
    assert np.allclose(again.score(states, premises), scores, atol=1e-5)
    rr = RerankRetriever.load(mini[2], tmp_path / "car")  # k1 as trained
    assert (rr.k1, rr.name) == (7, "bm25+car")


def test_chunked_logits_equal_one_padded_batch_in_order(mini, encoder):
    corpus, pairs, _ = mini
    scorer = CARScorer.from_encoder(encoder, max_len=96)
    scorer.model.eval()
    states = [pairs[i % 5].state for i in range(70)]
    premises = corpus.premises[:70]
    with torch.no_grad():
        whole = scorer.model(**scorer.encode(states, premises)).logits.squeeze(-1)
        scorer.chunk_size = 8  # 9 chunks of similar length, each padded on its own
        chunked = scorer.logits(states, premises)
    assert chunked.shape == (70,)
    torch.testing.assert_close(chunked, whole, atol=1e-4, rtol=1e-4)
    assert scorer.logits([], []).shape == (0,)


# ---------------------------------------------------------------------------------------
# Hard negatives

def test_hard_negatives_exclude_positives_and_are_cached(mini, tmp_path):
    corpus, pairs, bm25 = mini
    pairs = pairs[:40]
    cache = tmp_path / "car" / "hard_negatives.jsonl"
    first = CountingRetriever(bm25)
    hard = mine_hard_negatives(first, pairs, corpus, k=30, cache_path=cache, batch_size=16)
    assert first.asked == 40 and sorted(hard) == list(range(40))
    for i, pair in enumerate(pairs):
        ranked = [h.index for h in bm25.retrieve([pair.state], 30,
                                                 [TheoremContext(pair.file_path, pair.position)])[0]]
        assert hard[i] == [j for j in ranked if j not in pair.premises]  # top-k minus positives, in order
        assert not set(hard[i]) & set(pair.premises)
        assert corpus.accessible_mask(pair.file_path, pair.position)[hard[i]].all()
    # A rerun reads the cache and asks the first stage nothing.
    again = CountingRetriever(bm25)
    assert mine_hard_negatives(again, pairs, corpus, k=30, cache_path=cache) == hard
    assert again.asked == 0
    # A run killed halfway (a partial last line) mines only what is missing.
    lines = cache.read_text().splitlines()
    cache.write_text("\n".join(lines[:25]) + "\n" + lines[25][:10])
    resumed = CountingRetriever(bm25)
    assert mine_hard_negatives(resumed, pairs, corpus, k=30, cache_path=cache) == hard
    assert resumed.asked == 15
    # Another k is another question.
    other_k = CountingRetriever(bm25)
    mine_hard_negatives(other_k, pairs, corpus, k=10, cache_path=cache)
    assert other_k.asked == 40


def test_groups_are_one_positive_then_negatives(mini):
    corpus, pairs, _ = mini
    pairs = pairs[:20]
    hard = {i: [j for j in range(1000, 1000 + 2 * i) if j not in pairs[i].premises] for i in range(len(pairs))}
    data = CARData(pairs, hard, corpus, negatives=5, seed=1)
    assert len(data) == sum(len(p.premises) for p in pairs)
    for j, (i, positive) in enumerate(data.examples):
        group = data.group(j, epoch=0)
        assert group[0] == positive and len(group) == 6
        assert not set(group[1:]) & set(pairs[i].premises)
        if len(hard[i]) >= 5:
            assert set(group[1:]) <= set(hard[i]) and len(set(group[1:])) == 5
        else:  # every hard negative, padded with random accessible premises
            assert set(hard[i]) <= set(group[1:]) and len(set(group[1:])) == 5
            extra = [g for g in group[1:] if g not in hard[i]]
            assert corpus.accessible_mask(pairs[i].file_path, pairs[i].position)[extra].all()
        assert data.group(j, epoch=0) == group  # a function of (seed, epoch, example)


def test_random_negatives_replace_part_of_the_hard_ones(mini):
    corpus, pairs, _ = mini
    pairs = pairs[:20]
    hard = {i: [j for j in range(1000, 1030) if j not in pairs[i].premises] for i in range(len(pairs))}
    data = CARData(pairs, hard, corpus, negatives=5, seed=1, random_negatives=3)
    for j, (i, positive) in enumerate(data.examples):
        group = data.group(j, epoch=0)
        mask = corpus.accessible_mask(pairs[i].file_path, pairs[i].position)
        assert group[0] == positive and len(set(group[1:])) == 5
        assert not set(group[1:]) & set(pairs[i].premises)
        from_hard = [g for g in group[1:] if g in hard[i]]
        others = [g for g in group[1:] if g not in hard[i]]
        assert len(from_hard) >= 2 and mask[others].all()
    with pytest.raises(ValueError, match="random_negatives"):
        CARData(pairs, hard, corpus, negatives=2, seed=1, random_negatives=3)


# ---------------------------------------------------------------------------------------
# Re-ranking

class FixedRetriever(Retriever):
    """Always the same ranking: premises 0, 1, 2, ... with falling scores."""

    name = "fixed"

    def __init__(self, corpus, n: int) -> None:
        super().__init__(corpus)
        self.n, self.asked_k = n, []

    def retrieve(self, states, k, contexts):
        self.asked_k.append(k)
        return [[RankedPremise(i, self.corpus.premises[i], float(self.n - i)) for i in range(min(k, self.n))]
                for _ in states]


class FakeScorer:
    """Scores premise i as (i * 7) % 10, so CAR's order differs from the first stage's."""

    def __init__(self, corpus) -> None:
        self.index = {id(p): i for i, p in enumerate(corpus.premises)}
        self.calls = 0

    def score(self, states: Sequence[str], premises) -> np.ndarray:
        self.calls += 1
        return np.array([(self.index[id(p)] * 7) % 10 for p in premises], dtype=np.float32)


def test_rerank_reorders_the_head_and_keeps_the_tail(mini):
    corpus = mini[0]
    first = FixedRetriever(corpus, n=30)
    scorer = FakeScorer(corpus)
    rr = RerankRetriever(first, scorer, k1=10)
    assert rr.name == "fixed+car" and rr.corpus is corpus
    ctx = [TheoremContext("x", (1, 1))] * 2
    out = rr.retrieve(["s1", "s2"], 25, ctx)
    assert first.asked_k == [25] and scorer.calls == 1  # one scorer call for the batch
    for hits in out:
        idx = [h.index for h in hits]
        assert len(idx) == 25
        assert sorted(idx[:10]) == list(range(10))  # exactly the first stage's top k1 ...
        assert idx[:10] == sorted(range(10), key=lambda i: -((i * 7) % 10))  # ... by CAR score
        assert [h.score for h in hits[:10]] == sorted((h.score for h in hits[:10]), reverse=True)
        assert idx[10:] == list(range(10, 25))  # the tail in first-stage order
    # Fewer than k1 asked: the first stage still supplies k1, the best re-ranked come back.
    few = rr.retrieve(["s"], 3, ctx[:1])[0]
    assert first.asked_k[-1] == 10 and [h.index for h in few] == [7, 4, 1]


def test_fused_head_orders_by_standardized_car_plus_weighted_first_stage(mini):
    corpus = mini[0]
    first = FixedRetriever(corpus, n=30)  # head scores 30, 29, ..., 21
    ctx = [TheoremContext("x", (1, 1))]
    car = np.array([(i * 7) % 10 for i in range(10)], dtype=np.float64)
    fs = np.arange(30, 20, -1, dtype=np.float64)
    z = lambda x: (x - x.mean()) / x.std()
    for w in (0.5, 1.3, 3.0):  # weights without exact ties in this toy
        hits = RerankRetriever(first, FakeScorer(corpus), 10, first_stage_weight=w).retrieve(["s"], 12, ctx)[0]
        fused = z(car) + w * z(fs)
        assert [h.index for h in hits[:10]] == sorted(range(10), key=lambda i: -fused[i])
        np.testing.assert_allclose([h.score for h in hits[:10]], np.sort(fused)[::-1], rtol=1e-6)
        assert [h.index for h in hits[10:]] == [10, 11]
    # A heavy first-stage weight keeps the first stage's order; weight 0 is CAR's alone.
    heavy = RerankRetriever(first, FakeScorer(corpus), 10, first_stage_weight=1e6)
    assert [h.index for h in heavy.retrieve(["s"], 10, ctx)[0]] == list(range(10))
    plain = RerankRetriever(first, FakeScorer(corpus), 10, first_stage_weight=0.0)
    assert [h.index for h in plain.retrieve(["s"], 10, ctx)[0]] == sorted(range(10), key=lambda i: -car[i])


# ---------------------------------------------------------------------------------------
# Training

def test_short_training_lowers_the_training_loss(mini, mini_root, encoder, tmp_path):
    corpus, pairs, bm25 = mini
    run = tmp_path / "run"
    model_dir = train_car(car_cfg(mini_root, run, max_steps=20, lr=4e-3), bm25, init_path=encoder)
    assert sorted(r["step"] for r in log_rows(run) if "loss" in r) == list(range(1, 21))
    summary = json.loads((run / "car-bm25" / "summary.json").read_text())
    assert summary["steps"] == 20 and summary["done"] and summary["first_stage"] == "bm25"
    assert "R@5" in summary["first_stage_val"] and summary["best_val_R@5"] is not None

    # On fixed training groups (positive + hard negatives), the trained model's loss is
    # clearly below the untrained one's, which sits at log(1 + negatives).
    cfg = car_cfg(mini_root, run)
    hard = mine_hard_negatives(bm25, pairs, corpus, cfg.car.hard_negatives_k,
                               run / "car-bm25" / "hard_negatives.jsonl")
    data = CARData(pairs, hard, corpus, cfg.car.negatives, cfg.seed)
    examples = np.arange(0, len(data), len(data) // 96)[:96]
    with torch.no_grad():
        before = group_loss(CARScorer.from_encoder(encoder, 64), data, examples, 0).item()
        trained = CARScorer.from_pretrained(model_dir)
        trained.model.eval()
        after = group_loss(trained, data, examples, 0).item()
    assert before == pytest.approx(math.log(4), abs=0.02)
    assert after < before - 0.1, (before, after)


def test_resume_continues_from_the_checkpoint(mini, mini_root, encoder, tmp_path, monkeypatch):
    bm25 = mini[2]
    ref = tmp_path / "ref"
    train_car(car_cfg(mini_root, ref, max_steps=6), bm25, init_path=encoder)
    ref_losses = {r["step"]: r["loss"] for r in log_rows(ref) if "loss" in r}

    # Killed during step 5, after the checkpoint of step 4 ...
    run = tmp_path / "killed"
    real_loss = train_car_module.group_loss
    calls = []

    def dying_loss(*args, **kwargs):  # one micro-batch a step here: call 5 is step 5
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(train_car_module, "group_loss", dying_loss)
    with pytest.raises(KeyboardInterrupt):
        train_car(car_cfg(mini_root, run, max_steps=6, checkpoint_every=4), bm25, init_path=encoder)
    monkeypatch.setattr(train_car_module, "group_loss", real_loss)
    assert torch.load(run / "car-bm25" / "checkpoint" / "state.pt", weights_only=False)["progress"]["step"] == 4

    # ... the rerun resumes at step 5 and sees exactly the batches (and losses) of the
    # uninterrupted run; the hard negatives and the first-stage baseline come from the cache.
    counting = CountingRetriever(bm25)
    train_car(car_cfg(mini_root, run, max_steps=6, checkpoint_every=4), counting, init_path=encoder)
    assert counting.asked == 10  # the final validation's first stage, nothing else
    rows = [r for r in log_rows(run) if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    for r in rows:
        assert r["loss"] == pytest.approx(ref_losses[r["step"]], abs=1e-4)
    # A finished run is not trained again.
    train_car(car_cfg(mini_root, run, max_steps=6, checkpoint_every=4), bm25, init_path=encoder)
    assert len([r for r in log_rows(run) if "loss" in r]) == 6


def test_command_trains_with_a_registered_first_stage(mini_root, encoder, tmp_path, capsys):
    over = car_overrides(mini_root, tmp_path / "cmd", max_steps=2, eval_queries=5)
    assert run_train_car(TINY, over, first_stage_name="bm25", init=str(encoder)) == 0
    assert "bm25+car" in capsys.readouterr().out
    assert json.loads((tmp_path / "cmd" / "car-bm25" / "model" / "car.json").read_text())["first_stage"] == "bm25"
    assert not (tmp_path / "cmd" / "car").exists()


def test_command_takes_the_first_stage_from_the_config(mini_root, encoder, tmp_path, capsys):
    over = car_overrides(mini_root, tmp_path / "cmd", max_steps=1, eval_queries=5, first_stage="bm25-plain")
    assert run_train_car(TINY, over, init=str(encoder)) == 0
    assert "bm25-plain+car" in capsys.readouterr().out
    assert (tmp_path / "cmd" / "car-bm25-plain" / "model" / "car.json").exists()


def test_car_folder_is_named_for_its_first_stage():
    assert car_run_dir("r", "cfr") == Path("r/car")  # the paper's pairing keeps the plain name
    assert car_run_dir("r", "cfr-conventional") == Path("r/car-conventional")
    assert car_run_dir(Path("r"), "bm25") == Path("r/car-bm25")


def test_registry_pairs_each_cfr_with_the_car_trained_over_it(mini, mini_root, encoder, tmp_path):
    from retriever.models.cfr import CFREncoder
    from retriever.registry import build_retriever
    from retriever.models.cfr import cfr_config
    corpus = mini[0]
    run = tmp_path / "run"
    cfg = load_config(RetrieverTrainConfig, TINY, [f"data.root={mini_root}", f"run_dir={run}", "device=cpu",
                                                   "car.k1=8", "car.first_stage_weight=0.5"])
    for sub, similarity in (("cfr", "fine"), ("cfr-conventional", "conventional")):
        CFREncoder.from_pretrained(encoder, replace(cfr_config(cfg), similarity=similarity)).save_pretrained(
            run / sub / "model")
    with pytest.raises(UserInputError, match="train-car --first-stage cfr-conventional"):
        build_retriever("cfr-conventional+car", corpus, cfg)

    scorer = CARScorer.from_encoder(encoder, 64)
    scorer.meta = {"first_stage": "cfr-conventional"}
    scorer.save_pretrained(run / "car-conventional" / "model")
    fused = build_retriever("cfr-conventional+car", corpus, cfg)
    alone = build_retriever("cfr-conventional+car-only", corpus, cfg)
    assert (fused.name, alone.name) == ("cfr-conventional+car", "cfr-conventional+car-only")
    assert fused.first_stage.name == "cfr-conventional" and fused.first_stage.encoder.similarity == "conventional"
    assert (fused.k1, fused.first_stage_weight, alone.first_stage_weight) == (8, 0.5, 0.0)
    # The fine-grained CFR's CAR lives elsewhere: not trained yet, so it is not silently shared.
    with pytest.raises(UserInputError, match="car/model"):
        build_retriever("cfr+car", corpus, cfg)
    # A CAR trained over another first stage is refused rather than re-ranking the wrong list.
    scorer.meta = {"first_stage": "cfr-conventional"}
    scorer.save_pretrained(run / "car" / "model")
    with pytest.raises(ValueError, match="trained over cfr-conventional, not cfr"):
        build_retriever("cfr+car", corpus, cfg)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_fusion_car_reranks_the_fitted_fusions_head_with_the_car_of_its_cfr(mini, mini_root, encoder, tmp_path):
    from retriever.models.learned_fusion import FusionModel
    from retriever.registry import build_retriever
    corpus = mini[0]
    run = tmp_path / "run"
    cfg = load_config(RetrieverTrainConfig, TINY, [f"data.root={mini_root}", f"run_dir={run}", "device=cpu",
                                                   "car.k1=8", "car.first_stage=cfr-conventional",
                                                   "car.fusion_weight=2.0", "fusion.members=[locality,random]"])
    # A fusion that follows `random` alone (its 1/rank feature), as in test_fusion.py.
    FusionModel(["locality", "random"], depth=100, mean=[0.0] * 6, std=[1.0] * 6,
                weights=[0, 1, 0, 0, 0, 0], bias=0.0).save(_mkdir(run / "fusion") / "model.json")
    with pytest.raises(UserInputError, match="train-car --first-stage cfr-conventional"):
        build_retriever("fusion+car", corpus, cfg)
    from retriever.models.cfr import CFREncoder
    from retriever.models.cfr import cfr_config
    CFREncoder.from_pretrained(encoder, replace(cfr_config(cfg), similarity="conventional")).save_pretrained(
        run / "cfr-conventional" / "model")  # the CFR that CAR's negatives came from
    scorer = CARScorer.from_encoder(encoder, 64)
    scorer.meta = {"first_stage": "cfr-conventional"}
    scorer.save_pretrained(run / "car-conventional" / "model")
    rr = build_retriever("fusion+car", corpus, cfg)
    assert (rr.first_stage.name, rr.k1, rr.first_stage_weight) == ("fusion", 8, 2.0)
    state = mini[1][0].state
    ctx = TheoremContext(corpus.premises[-1].path, (10 ** 6, 0))
    fused = rr.retrieve([state], 12, [ctx])[0]
    first = rr.first_stage.retrieve([state], 12, [ctx])[0]
    # The head is the fusion's top 8 in CAR's fused order; the tail is the fusion's own.
    assert sorted(h.index for h in fused[:8]) == sorted(h.index for h in first[:8])
    assert [h.index for h in fused[8:]] == [h.index for h in first[8:]]
    car = scorer.score([state] * 8, [h.premise for h in first[:8]])
    expected = rr.head_scores(car, np.array([h.score for h in first[:8]]))
    assert [h.index for h in fused[:8]] == [first[i].index for i in np.argsort(-expected, kind="stable")]


def test_max_train_pairs_mines_and_trains_a_fixed_subset(mini, mini_root, encoder, tmp_path):
    corpus, pairs, bm25 = mini
    counting = CountingRetriever(bm25)
    run = tmp_path / "run"
    train_car(car_cfg(mini_root, run, max_steps=2, max_train_pairs=50), counting, init_path=encoder)
    mined = [json.loads(line) for line in (run / "car-bm25" / "hard_negatives.jsonl").read_text().splitlines()]
    assert len(mined) == 50  # only the subset is mined, not all pairs
    summary = json.loads((run / "car-bm25" / "summary.json").read_text())
    assert summary["examples"] <= 50 * 10 and summary["examples"] >= 50
    # The subset is a function of the seed: a second run mines the same theorems.
    run2 = tmp_path / "run2"
    train_car(car_cfg(mini_root, run2, max_steps=2, max_train_pairs=50), bm25, init_path=encoder)
    mined2 = [json.loads(line) for line in (run2 / "car-bm25" / "hard_negatives.jsonl").read_text().splitlines()]
    assert [m["key"] for m in mined2] == [m["key"] for m in mined]


def test_fusion_sweep_scores_each_pair_once_and_matches_direct_reranking(mini, mini_root):
    from conftest import benchmark_script
    from retriever.settings import RetrievalBenchmarkConfig
    from prover.data.pairs import premise_queries
    from retriever.evaluation.evaluate import evaluate
    car_fusion = benchmark_script("car_fusion")

    class PairCounter(FakeScorer):
        pairs = 0

        def score(self, states, premises):
            self.pairs += len(premises)
            return super().score(states, premises)

    corpus, _, bm25 = mini
    queries, _ = premise_queries(Dataset(mini_root).theorems("random/val"), corpus)
    queries = queries[:40]
    cfg = load_config(RetrievalBenchmarkConfig, None, ["eval.batch_size=16"])
    scorer = PairCounter(corpus)
    rows = car_fusion.sweep(RerankRetriever(bm25, scorer, 5), queries, [4, 8], [0.0, 1.0], cfg)
    assert [(r["k1"], r["first_stage_weight"]) for r in rows] == [(0, None), (8, 0.0), (8, 1.0), (4, 0.0), (4, 1.0)]
    assert rows[0]["metrics"] == evaluate(bm25, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k).metrics
    assert scorer.pairs == 8 * len(queries)  # every later setting re-used the logits of k1 = 8
    for k1, w, row in ((8, 0.0, rows[1]), (4, 1.0, rows[4])):
        direct = RerankRetriever(bm25, FakeScorer(corpus), k1, w)
        assert row["metrics"] == evaluate(direct, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k).metrics
    assert rows[1]["metrics"] != rows[0]["metrics"]  # the fake CAR does change the order
