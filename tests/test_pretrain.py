"""MLM pre-training on mathlib-src-mini, shrunk to a few dozen steps: the loss falls, the
model and tokenizer reload, no val/test state is trained on, and an interrupted run resumes
exactly where it stopped."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM, BertModel, PreTrainedTokenizerFast

from conftest import DATA_ROOT, REPO, require
from prover.config import load_config
from prover.data.dataset import Dataset
from retriever.training.pretrain import (MLMBatches, build_model, corpus_texts, epoch_batches,
                                mlm_eval_loss, mlm_loss, pretrain, split_eval, tokenized_corpus)
from retriever.settings import RetrieverTrainConfig
from retriever.models.text import format_state, premise_text
from retriever.models.tokenizer import train_tokenizer
from prover.training.run import set_seed

MAX_STEPS = 40
SHRINK = ["device=cpu", "tokenizer.vocab_size=1000", "encoder.hidden_size=64",
          "encoder.intermediate_size=128", "pretrain.max_len=64", "pretrain.batch_size=16",
          "pretrain.grad_accum=2", "pretrain.lr=1e-3", "pretrain.warmup_steps=5",
          "pretrain.eval_fraction=0.02", f"pretrain.max_steps={MAX_STEPS}",
          "pretrain.log_every=5", "pretrain.checkpoint_every=1000"]


def tiny_cfg(run_dir: Path, *overrides: str):
    root = require(DATA_ROOT / "mathlib-src-mini")
    return load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"),
                       [f"data.root={root}", f"run_dir={run_dir}", *SHRINK, *overrides])


pytestmark = pytest.mark.usefixtures("one_thread")


def read_log(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "pretrain/train_log.jsonl").open()]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict:
    """A run stopped by a sub-second budget, then continued to MAX_STEPS without one."""
    run_dir = tmp_path_factory.mktemp("pretrain")
    pretrain(tiny_cfg(run_dir, "pretrain.max_minutes=0.005"))
    first = json.loads((run_dir / "pretrain/summary.json").read_text())
    model_dir = pretrain(tiny_cfg(run_dir))
    return {"run_dir": run_dir, "model_dir": model_dir, "first": first,
            "final": json.loads((run_dir / "pretrain/summary.json").read_text())}


def test_corpus_is_train_states_and_premises_only():
    cfg = tiny_cfg(Path("/nonexistent"))
    texts = corpus_texts(cfg)
    assert len(texts) == len(set(texts))
    ds = Dataset(cfg.data.root)
    train = {format_state(t.state_before) for thm in ds.theorems("random/train")
             for t in thm.traced_tactics}
    premises = {premise_text(p) for p in ds.corpus().premises}
    assert set(texts) == train | premises
    held_out = {format_state(t.state_before) for split in ("random/val", "random/test")
                for thm in ds.theorems(split) for t in thm.traced_tactics}
    unseen = held_out - train - premises  # a val state may coincide with a train state
    assert len(unseen) > 300
    assert not unseen & set(texts)


def test_tokenizer_training_is_reproducible(tmp_path):
    # HF's WordPiece trainer alone gave a different vocabulary on most runs (tokenizers#1794).
    cfg = tiny_cfg(Path("/nonexistent"))
    texts = corpus_texts(cfg)
    saved = []
    for run in range(3):
        tok = train_tokenizer(texts, cfg.tokenizer.vocab_size, tmp_path / str(run),
                              cfg.tokenizer.min_frequency)
        saved.append((tmp_path / str(run) / "tokenizer.json").read_text())
    assert saved[0] == saved[1] == saved[2]
    assert len(tok) == cfg.tokenizer.vocab_size
    # The continuation pieces declared up front are ordinary vocabulary, not special tokens.
    assert tok.all_special_tokens == ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]", "<VAR>", "<GOAL>"]
    assert tok.tokenize("<VAR> (h : 0 < n) <GOAL> n ≠ 0")[:3] == ["<VAR>", "(", "h"]


def test_special_tokens_are_never_masked(resumed):
    tok = PreTrainedTokenizerFast.from_pretrained(str(resumed["model_dir"]))
    ids = tok(["<VAR> a b : ℕ <VAR> h : a ≤ b <GOAL> a < b + 1"] * 8)["input_ids"]
    batch = MLMBatches(tok, mlm_probability=1.0, device=torch.device("cpu"))(
        [np.array(s) for s in ids])
    special = torch.isin(torch.tensor(ids), torch.tensor(tok.all_special_ids))
    assert special.sum() >= 8 * 5  # [CLS] <VAR> <VAR> <GOAL> [SEP] (and any [UNK])
    assert (batch["labels"][special] == -100).all()
    assert (batch["labels"][~special] != -100).all()  # probability 1: every other token
    assert torch.equal(batch["input_ids"][special], torch.tensor(ids)[special])


def test_epoch_batches_partition_and_repeat():
    lengths = np.random.default_rng(0).integers(1, 100, size=1000)
    a = epoch_batches(lengths, 16, seed=3, epoch=0)
    assert len(a) == 63 and sorted(np.concatenate(a).tolist()) == list(range(1000))
    assert all(np.array_equal(x, y) for x, y in zip(a, epoch_batches(lengths, 16, 3, 0)))
    assert not np.array_equal(a[0], epoch_batches(lengths, 16, 3, 1)[0])


def test_mlm_loss_is_the_models_loss(resumed):
    model = BertForMaskedLM.from_pretrained(str(resumed["model_dir"])).eval()
    tok = PreTrainedTokenizerFast.from_pretrained(str(resumed["model_dir"]))
    torch.manual_seed(0)
    ids = tok(["<VAR> x : α <GOAL> x = x", "<GOAL> 1 + 1 = 2 ∧ True"])["input_ids"]
    batch = MLMBatches(tok, 0.3, torch.device("cpu"))([np.array(s) for s in ids])
    with torch.no_grad():
        assert mlm_loss(model, batch).item() == pytest.approx(model(**batch).loss.item(), rel=1e-5)


def test_resume_continues_from_checkpoint(resumed):
    first, final = resumed["first"], resumed["final"]
    assert not first["done"] and first["stopped_by"] == "budget"
    assert 0 < first["steps"] < MAX_STEPS
    assert final["done"] and final["steps"] == MAX_STEPS and final["attempts"] == 2
    rows = read_log(resumed["run_dir"])
    starts = [r for r in rows if r.get("event") == "start"]
    assert [r["step"] for r in starts] == [0, first["steps"]]  # not from 0 again
    train = [r for r in rows if "loss" in r]
    assert {"step", "loss", "lr", "tokens_per_s"} <= set(train[0])
    second_start = rows.index(starts[1])
    assert all(r["step"] <= first["steps"] for r in train if rows.index(r) < second_start)
    assert any(rows.index(r) > second_start for r in train)
    assert all(r["step"] > first["steps"] for r in train if rows.index(r) > second_start)


def test_resumed_run_equals_uninterrupted_run(resumed, tmp_path):
    # Same tokenizer (copied, not retrained): the weights must come out the same to the bit.
    shutil.copytree(resumed["run_dir"] / "tokenizer", tmp_path / "tokenizer")
    pretrain(tiny_cfg(tmp_path))
    a = BertForMaskedLM.from_pretrained(str(resumed["model_dir"])).state_dict()
    b = BertForMaskedLM.from_pretrained(str(tmp_path / "pretrain/model")).state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_eval_loss_drops(resumed):
    cfg = tiny_cfg(resumed["run_dir"])
    tok = PreTrainedTokenizerFast.from_pretrained(str(resumed["model_dir"]))
    seqs = tokenized_corpus(cfg, tok, resumed["run_dir"] / "pretrain/tokens.pt")
    _, held_out = split_eval(seqs, cfg.pretrain.eval_fraction, cfg.seed)
    batches = MLMBatches(tok, cfg.pretrain.mlm_probability, torch.device("cpu"))
    set_seed(cfg.seed)
    bs = cfg.pretrain.batch_size  # the eval masks depend on the batch shapes
    before = mlm_eval_loss(build_model(cfg, tok), batches, held_out, bs)  # pretrain's init
    after = mlm_eval_loss(BertForMaskedLM.from_pretrained(str(resumed["model_dir"])),
                          batches, held_out, bs)
    assert before == pytest.approx(np.log(len(tok)), abs=0.5)  # untrained: about uniform
    assert after < before - 0.5
    final = resumed["final"]
    assert final["eval_loss"] == pytest.approx(after, abs=1e-4)  # the same held-out set
    assert final["eval_loss_init"] == pytest.approx(before, abs=1e-4)
    evals = [r["val_loss"] for r in read_log(resumed["run_dir"]) if "val_loss" in r]
    assert evals[0] > evals[-1]


def test_saved_model_and_tokenizer_reload(resumed):
    model_dir, run_dir = resumed["model_dir"], resumed["run_dir"]
    tok = PreTrainedTokenizerFast.from_pretrained(str(model_dir))
    text = "<VAR> a b : ℕ <VAR> h : a ≤ b <GOAL> a < b + 1"
    ids = tok(text, return_tensors="pt")
    assert tok.convert_ids_to_tokens(ids["input_ids"][0])[:2] == ["[CLS]", "<VAR>"]
    assert ids["input_ids"].tolist() == PreTrainedTokenizerFast.from_pretrained(
        str(run_dir / "tokenizer"))(text, return_tensors="pt")["input_ids"].tolist()
    # The in-memory model at the end of training is the final checkpoint's weights.
    cfg = tiny_cfg(run_dir)
    trained = build_model(cfg, tok)
    trained.load_state_dict(torch.load(run_dir / "pretrain/checkpoint/state.pt",
                                       weights_only=False)["model"])
    reloaded = BertForMaskedLM.from_pretrained(str(model_dir))
    with torch.no_grad():
        assert torch.equal(trained.eval()(**ids).logits, reloaded.eval()(**ids).logits)
    encoder = BertModel.from_pretrained(str(model_dir))  # what CFR/CAR load
    assert encoder.config.hidden_size == cfg.encoder.hidden_size


def test_finished_run_returns_at_once(resumed):
    n_rows = len(read_log(resumed["run_dir"]))
    assert pretrain(tiny_cfg(resumed["run_dir"])) == resumed["model_dir"]
    assert len(read_log(resumed["run_dir"])) == n_rows
