"""Masked-language-model pre-training of the BERT encoder that CFR and CAR both start from.

The corpus is formal text only: the training split's proof states and every premise of the
corpus, in the `<VAR> … <GOAL> …` form the retrievers read (never a validation or test
state). A WordPiece tokenizer is trained on the same text, then a BERT of `cfg.encoder`'s
size learns to fill in 15% masked tokens (BERT's 80/10/10 rule; special tokens, `<VAR>` and
`<GOAL>` included, are never masked).

Layout under `run_dir`:

    tokenizer/                  shared by every stage of the experiment
    pretrain/tokens.pt          token ids, tokenized once (a resumed run does not re-tokenize)
    pretrain/checkpoint/        resumable state (see prover.training.run.RunDir)
    pretrain/train_log.jsonl    train rows (step, loss, lr, tokens_per_s), eval rows (eval_loss)
    pretrain/model/             BertForMaskedLM + tokenizer, both `from_pretrained`-loadable
    pretrain/summary.json

CFR and CAR load an encoder with `BertModel.from_pretrained(folder)` and the tokenizer with
`PreTrainedTokenizerFast.from_pretrained(folder)`, so they can equally start from any other
BERT folder or hub id (one with a tokenizer saved beside it): point their model path there
and skip this stage.
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from pathlib import Path

import numpy as np
import torch
from transformers import (BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling,
                          PreTrainedTokenizerFast)

from prover.config import to_plain
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.state import NO_GOALS
from retriever.settings import RetrieverTrainConfig
from retriever.models.text import format_state, premise_text
from retriever.models.tokenizer import load_tokenizer, train_tokenizer
from prover.training.settings import recipe_of
from prover.training.engine import Stage, begin, fit
from prover.training.launch import launch
from prover.training.run import RunDir, epoch_order, mixed_precision
from prover.utils.files import save_dir_atomically

log = logging.getLogger(__name__)

EVAL_MASK_SEED = 1234  # every evaluation masks the same tokens, so eval losses compare


def corpus_texts(cfg: RetrieverTrainConfig) -> list[str]:
    """Training-split states (before, and after unless the proof is done) and all premises,
    formatted for the retrievers, without repeats, in a fixed order."""
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error,
                 max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    texts: dict[str, None] = {}  # an ordered set
    for thm in ds.theorems(cfg.train_split):
        for tac in thm.traced_tactics:
            texts[format_state(tac.state_before)] = None
            if tac.state_after.strip() != NO_GOALS:
                texts[format_state(tac.state_after)] = None
    n_states = len(texts)
    for p in ds.corpus().premises:
        texts[premise_text(p)] = None
    log.info("MLM corpus: %d distinct texts (%d states of %s, %d premise texts)", len(texts),
             n_states, cfg.train_split, len(texts) - n_states)
    return list(texts)


def ensure_tokenizer(cfg: RetrieverTrainConfig, texts: list[str] | None = None) -> PreTrainedTokenizerFast:
    """`run_dir/tokenizer`, trained on `texts` (default: corpus_texts(cfg)) the first time."""
    path = Path(cfg.run_dir) / "tokenizer"
    if (path / "tokenizer.json").exists():
        return load_tokenizer(path)
    texts = corpus_texts(cfg) if texts is None else texts
    return train_tokenizer(texts, cfg.tokenizer.vocab_size, path, cfg.tokenizer.min_frequency)


def build_model(cfg: RetrieverTrainConfig, tokenizer: PreTrainedTokenizerFast) -> BertForMaskedLM:
    enc = cfg.encoder
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=enc.hidden_size, num_hidden_layers=enc.num_layers,
        num_attention_heads=enc.num_heads, intermediate_size=enc.intermediate_size,
        max_position_embeddings=enc.max_positions, hidden_dropout_prob=enc.dropout,
        attention_probs_dropout_prob=enc.dropout, pad_token_id=tokenizer.pad_token_id)
    return BertForMaskedLM(config)


def _tokenizer_hash(tokenizer: PreTrainedTokenizerFast) -> str:
    return hashlib.sha1(tokenizer.backend_tokenizer.to_str().encode()).hexdigest()


def tokenized_corpus(cfg: RetrieverTrainConfig, tokenizer: PreTrainedTokenizerFast, path: Path,
                     texts: list[str] | None = None) -> list[np.ndarray]:
    """Token ids of `texts` (default: corpus_texts(cfg)), `[CLS] … [SEP]`, cut to
    pretrain.max_len; cached at `path` (flat ids + offsets) and rebuilt only when the data,
    max_len or tokenizer changed."""
    meta = {"data": str(Path(cfg.data.root).resolve()), "split": cfg.train_split,
            "max_len": int(cfg.pretrain.max_len), "tokenizer": _tokenizer_hash(tokenizer)}
    if path.exists():
        cache = torch.load(path, weights_only=True)
        if cache["meta"] == meta:
            ids, offsets = cache["ids"].numpy(), cache["offsets"].numpy()
            return [ids[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        log.warning("token cache %s is stale (%s); tokenizing again", path, cache["meta"])
    texts = corpus_texts(cfg) if texts is None else texts
    t0 = time.perf_counter()
    enc = tokenizer(texts, truncation=True, max_length=cfg.pretrain.max_len,
                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    seqs = [np.asarray(s, dtype=np.int32) for s in enc]
    offsets = np.cumsum([0] + [len(s) for s in seqs])
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"meta": meta, "ids": torch.from_numpy(np.concatenate(seqs)),
                "offsets": torch.from_numpy(offsets)}, tmp)
    tmp.replace(path)
    log.info("tokenized %d texts (%d tokens) in %.1f s", len(seqs), offsets[-1],
             time.perf_counter() - t0)
    return seqs


def split_eval(seqs: list[np.ndarray], fraction: float,
               seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(train, held-out eval): a fixed random `fraction` of the texts is never trained on."""
    n_eval = min(len(seqs) - 1, math.ceil(fraction * len(seqs))) if fraction > 0 else 0
    perm = np.random.default_rng(seed).permutation(len(seqs))
    return [seqs[i] for i in perm[n_eval:]], [seqs[i] for i in perm[:n_eval]]


class MLMBatches:
    """Padded, masked batches: the collator's labels are -100 except at masked positions."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast, mlm_probability: float,
                 device: torch.device) -> None:
        self.special_ids = np.array(tokenizer.all_special_ids)  # [CLS] [SEP] [PAD] <VAR> <GOAL> …
        self.device = device
        self.collator = DataCollatorForLanguageModeling(
            tokenizer, mlm=True, mlm_probability=mlm_probability,
            pad_to_multiple_of=8 if device.type == "cuda" else None)

    def __call__(self, seqs: list[np.ndarray]) -> dict[str, torch.Tensor]:
        # The explicit mask is what keeps <VAR>/<GOAL> (and [CLS]/[SEP]) from ever being masked.
        batch = self.collator([{"input_ids": s.tolist(),
                                "special_tokens_mask": np.isin(s, self.special_ids).tolist()}
                               for s in seqs])
        return {k: v.to(self.device) for k, v in batch.items()}


def mlm_loss(model: BertForMaskedLM, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Cross-entropy of the original tokens at the masked positions, averaged over them:
    `model(**batch).loss`, but the vocabulary projection runs on the ~15% masked positions
    only, not on every position and pad (most of the cost of a small BERT)."""
    labels = batch["labels"]
    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])[0]
    masked = labels != -100
    logits = model.cls(hidden[masked])
    return torch.nn.functional.cross_entropy(logits.float(), labels[masked])


def epoch_batches(lengths: np.ndarray, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The batches of an epoch, a function of (seed, epoch) only, so a resumed run sees the
    batches it would have seen. The shuffled order is sorted by length within windows of
    50 batches (texts of a batch have similar lengths: little padding), then the batches
    are shuffled so that lengths do not trend within an epoch."""
    order = epoch_order(len(lengths), seed, epoch)
    window = 50 * batch_size
    batches = []
    for w in range(0, len(order), window):
        chunk = order[w:w + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    shuffle = np.random.default_rng([seed, epoch]).permutation(len(batches))
    return [batches[i] for i in shuffle]


@torch.no_grad()
def mlm_eval_loss(model: BertForMaskedLM, batches: MLMBatches, seqs: list[np.ndarray],
                  batch_size: int, seed: int = EVAL_MASK_SEED) -> float:
    """Mean cross-entropy over all masked tokens of `seqs`; the masks come from `seed`, not
    from (nor disturbing) the training RNG, so every evaluation sees the same masks."""
    was_training = model.training
    model.eval()
    seqs = sorted(seqs, key=len)  # less padding; the token-weighted mean ignores the order
    total, count = 0.0, 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for i in range(0, len(seqs), batch_size):
            batch = batches(seqs[i:i + batch_size])
            n = int((batch["labels"] != -100).sum())
            if n:
                with mixed_precision(batches.device):
                    total += mlm_loss(model, batch).item() * n  # a mean over masked tokens
                count += n
    model.train(was_training)
    return total / max(count, 1)


class MLMStage(Stage):
    """MLM over the tokenized corpus: batches of similar lengths (`epoch_batches`), each
    micro-batch weighted by its masked tokens, the held-out loss each epoch. The model at the
    end is the model (no selection: a lower held-out MLM loss is not what CFR needs)."""

    label = "MLM pre-training"
    unit = "tokens"

    def __init__(self, cfg: RetrieverTrainConfig, model: BertForMaskedLM, tokenizer: PreTrainedTokenizerFast,
                 train: list[np.ndarray], held_out: list[np.ndarray], device: torch.device) -> None:
        pc = cfg.pretrain
        self.cfg, self.model, self.tokenizer = cfg, model, tokenizer
        self.train_seqs, self.held_out = train, held_out
        self.lengths = np.array([len(s) for s in train])
        self.batches = MLMBatches(tokenizer, pc.mlm_probability, device)
        self.recipe = recipe_of(pc, **({} if held_out else {"eval_every": -1}))

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        return epoch_batches(self.lengths, self.recipe.batch_size, self.cfg.seed, epoch)

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> dict[str, torch.Tensor]:
        return self.batches([self.train_seqs[i] for i in examples])

    def weight(self, batch: dict[str, torch.Tensor], examples: np.ndarray) -> float:
        return float((batch["labels"] != -100).sum())  # a micro-batch's loss is a mean over these

    def count(self, batch: dict[str, torch.Tensor], examples: np.ndarray) -> int:
        return int(batch["attention_mask"].sum())

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return mlm_loss(self.model, batch)

    def evaluate(self, extra: dict) -> dict[str, float]:
        return {"loss": mlm_eval_loss(self.model, self.batches, self.held_out, self.recipe.batch_size)}

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        # Exported at a budget stop too (CFR/CAR can go on from it); the checkpoint's `done`
        # stays false, so the same command with a larger budget carries on training.
        def write(path: Path) -> None:
            self.model.save_pretrained(path)
            self.tokenizer.save_pretrained(path)
        save_dir_atomically(run.model_dir, write)


def pretrain(cfg: RetrieverTrainConfig) -> Path:
    """Pre-train (or resume, or find finished) the MLM encoder; returns `run_dir/pretrain/model`.

    Training runs for `pretrain.epochs` (or `pretrain.max_steps`, if fewer), over which the
    learning rate warms up and decays linearly to zero; `pretrain.max_minutes` may stop it
    earlier, mid-schedule (then set max_steps to what the budget allows for a full decay).
    A finished run is never continued: delete `run_dir/pretrain` to train again.
    `trainer.workers` > 1 trains on Ray Train workers (prover/training/launch.py).
    """
    run = RunDir(Path(cfg.run_dir) / "pretrain")
    if run.finished():
        log.info("pre-training already finished: %s", run.model_dir)
        return run.model_dir
    if cfg.pretrain.max_len > cfg.encoder.max_positions:
        raise ValueError(f"pretrain.max_len {cfg.pretrain.max_len} exceeds encoder.max_positions "
                         f"{cfg.encoder.max_positions}")
    # Tokenizer and token cache once, before any worker starts: workers read them.
    fresh = not (Path(cfg.run_dir) / "tokenizer" / "tokenizer.json").exists()
    texts = corpus_texts(cfg) if fresh else None
    tokenized_corpus(cfg, ensure_tokenizer(cfg, texts), run.path / "tokens.pt", texts)
    launch(_pretrain, cfg, trainer=cfg.trainer, run_dir=run.path)
    return run.model_dir


def _pretrain(cfg: RetrieverTrainConfig) -> None:
    pc = cfg.pretrain
    run = RunDir(Path(cfg.run_dir) / "pretrain")
    workers, device = begin(cfg.seed, cfg.device)
    tokenizer = ensure_tokenizer(cfg)
    seqs = tokenized_corpus(cfg, tokenizer, run.path / "tokens.pt")
    train, held_out = split_eval(seqs, pc.eval_fraction, cfg.seed)
    stage = MLMStage(cfg, build_model(cfg, tokenizer).to(device), tokenizer, train, held_out, device)
    result = fit(stage, run, device, workers, cfg.seed, cfg.trainer)
    if not workers.main:
        return
    progress = result.progress
    steps_per_epoch = math.ceil(len(stage.micro_batches(0)) / pc.grad_accum)
    eval_loss = (progress.last_val or {}).get("loss")
    summary = {
        "done": progress.done, **result.record(), "total_steps": result.total_steps, "epochs": progress.step / steps_per_epoch,
        "warmup_steps": pc.warmup_steps, "workers": result.workers,
        "seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
        "attempts": progress.attempts, "train_loss": progress.train_loss,
        "eval_loss": eval_loss, "eval_loss_init": (progress.initial_val or {}).get("loss"),
        "parameters": result.parameters, "train_split": cfg.train_split, "train_texts": len(train), "eval_texts": len(held_out),
        "train_tokens": int(sum(len(s) for s in train)), "device": result.device,
        "model_dir": str(run.model_dir),
        "config": {"encoder": to_plain(cfg.encoder), "pretrain": to_plain(cfg.pretrain),
                   "tokenizer": to_plain(cfg.tokenizer)},
    }
    write_json(run.path / "summary.json", summary)
    log.info("pretrain %s after %d steps (%.0f s): train loss %.4f, eval loss %.4f -> %.4f",
             summary["stopped_by"], progress.step, progress.seconds,
             *(summary[k] or math.nan for k in ("train_loss", "eval_loss_init", "eval_loss")))
