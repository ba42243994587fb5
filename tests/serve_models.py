"""A stand-in retriever run folder for the serve tests: what training and indexing would leave.

The models are random (a tokenizer trained on the corpus, a one-layer BERT): the tests check
plumbing, that the service ranks exactly as the in-process retriever does, not quality. The
index is built by `prover retriever index`'s own code, as a user would build it.
"""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM

from conftest import REPO
from prover.commands.retriever_train_cfr import run_index
from prover.config import load_config
from prover.data.dataset import Dataset
from retriever.models.car import CARScorer
from retriever.models.cfr import CFREncoder
from retriever.settings import RetrieverTrainConfig
from retriever.models.text import premise_text
from retriever.models.tokenizer import train_tokenizer
from retriever.models.cfr import cfr_config

TINY = str(REPO / "configs" / "retriever" / "tiny.yaml")


def standin_overrides(run_dir: Path, corpus_dir: Path) -> list[str]:
    return [f"run_dir={run_dir}", f"data.root={corpus_dir}", "device=cpu", "cfr.max_state_len=64",
            "cfr.max_premise_len=32", "car.max_len=64", "car.k1=8"]


def build_standin_run(run_dir: Path, corpus_dir: Path, seed: int = 0) -> Path:
    """<run_dir>/{pretrain,cfr,car}/model and <run_dir>/cfr/index for the corpus of `corpus_dir`."""
    corpus = Dataset(corpus_dir).corpus()
    encoder = run_dir / "pretrain" / "model"
    tok = train_tokenizer([premise_text(p) for p in corpus.premises], vocab_size=2000, out_dir=encoder,
                          min_frequency=1)
    torch.manual_seed(seed)
    BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=128,
                               pad_token_id=tok.pad_token_id)).save_pretrained(encoder)
    cfg = load_config(RetrieverTrainConfig, TINY, standin_overrides(run_dir, corpus_dir))
    CFREncoder.from_pretrained(encoder, cfr_config(cfg)).save_pretrained(run_dir / "cfr" / "model")
    CARScorer.from_encoder(encoder, max_len=cfg.car.max_len).save_pretrained(run_dir / "car" / "model")
    run_index(TINY, standin_overrides(run_dir, corpus_dir))
    return run_dir


def models_yaml(tmp: Path, run_dir: Path, corpus_dir: Path) -> Path:
    """A retriever training YAML naming the stand-in run (what `serve.models` points at)."""
    from omegaconf import OmegaConf
    cfg = load_config(RetrieverTrainConfig, TINY, standin_overrides(run_dir, corpus_dir))
    path = tmp / "retriever.yaml"
    OmegaConf.save(cfg, path)
    return path


def standin_run(tmp_path_factory, corpus_dir: Path) -> Path:
    """The stand-in run for `corpus_dir`, built once per test session (every serve test module
    shares it: building and indexing takes ~30 s on a busy 2-core machine)."""
    run_dir = tmp_path_factory.getbasetemp() / "serve-standin-run"
    done = run_dir / "built"
    if not done.exists():
        build_standin_run(run_dir, corpus_dir)
        done.write_text("ok")
    return run_dir


def subset_corpus(src: Path, out: Path, n_files: int) -> Path:
    """A dataset folder holding the first `n_files` files of `src`'s corpus: a new corpus to reload."""
    import json
    from prover.data.jsonio import iter_jsonl
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for _, obj in iter_jsonl(src / "corpus.jsonl"):
        rows.append(obj)
        if len(rows) == n_files:
            break
    (out / "corpus.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                      encoding="utf-8")
    return out


def index_other_corpus(run_dir: Path, corpus_dir: Path, out_run: Path) -> Path:
    """A run folder that shares `run_dir`'s models (linked) and indexes `corpus_dir`."""
    for sub in ("cfr", "car"):
        (out_run / sub).mkdir(parents=True, exist_ok=True)
        link = out_run / sub / "model"
        if not link.exists():
            link.symlink_to(run_dir / sub / "model", target_is_directory=True)
    run_index(TINY, standin_overrides(out_run, corpus_dir))
    return out_run
