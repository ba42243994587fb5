"""The retriever's training for a timed GPU lease (issue 64): MLM pre-training, then conventional CFR.

`prover retriever pretrain` / `train-cfr` train through the shared engine (checkpoints, resumable
schedules, validation, a loss read back every step, the corpus read and tokenized there). A lease
has minutes of one chip and no corpus, so its loop is this lean one, on the same recipe:
- the data arrive as token ids (`TokenTable`), tokenized here on a CPU (benchmarks/device_retriever.py
  pack): the MLM texts as `pretrain.corpus_texts` lists them, the CFR states (cut on their
  `cfr.state_truncation_side`) and premise texts as `CFREncoder` would tokenize them;
- MLM: length-grouped batches (`pretrain.epoch_batches`), BERT's 80/10/10 masking drawn on the
  device (special tokens never masked), the loss on the masked positions only (`pretrain.mlm_loss`);
- CFR: the batches and negatives of `train_cfr` (`make_batch`: one positive and |P'| − 1 uniform
  negatives per state, a premise drawn twice one candidate, a state's other positives masked),
  mean-pooled embeddings (`cfr.mean_pooled`) and `info_nce` in fp32;
- bf16 autocast, fused AdamW (no decay on biases and LayerNorm weights), a linear schedule after
  warm-up that ends at the planned step, gradient clipping, no host sync per step but MLM's
  masked-position gather; a time guard per stage.

Each stage is probed for a few steps first: examples/s, FLOPs counted by PyTorch's counter
(prover/training/lease.py), and their share of the bf16 matrix rate timed in the same call; its
steps are then planned to fill the stage's seconds (at most its recipe's epochs).

The trained encoder comes back in bf16 parts (`write_encoder_parts`, prover/utils/parts.py) with
what a CFR model folder needs beside the weights, and a check: a few states' scores against a few
premises, computed there from the rounded weights; `assemble_encoder` rebuilds the folder here and
`check_scores` says whether it scores the same.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prover.training.lease import autocast, count_flops, sync
from prover.training.run import epoch_order
from prover.utils.parts import bf16_state, part_paths, read_tensor_parts, write_tensor_parts

log = logging.getLogger(__name__)

PART_NAME = "retriever-part-{:02d}.safetensors"


# ---------------------------------------------------------------------------------------------
# data

@dataclass
class TokenTable:
    """Texts as token ids: one flat array and the offsets of each text in it."""

    ids: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]], vocab_size: int) -> TokenTable:
        dtype = np.uint16 if vocab_size <= 2 ** 16 else np.int32  # a 16k vocabulary: half the bytes
        flat = np.fromiter((t for s in seqs for t in s), dtype=dtype, count=sum(len(s) for s in seqs))
        return cls(flat, np.cumsum([0] + [len(s) for s in seqs]).astype(np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]: self.offsets[i + 1]]

    def padded(self, idx: Sequence[int], pad_id: int, multiple: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids, attention mask) of rows `idx`, padded to the longest, rounded up to `multiple`."""
        lengths = self.lengths[np.asarray(idx)]
        width = int(lengths.max()) if len(lengths) else 1
        width += (-width) % multiple if multiple > 1 else 0
        ids = np.full((len(idx), width), pad_id, dtype=np.int64)
        att = np.zeros((len(idx), width), dtype=np.int64)
        for r, i in enumerate(idx):
            row = self.row(int(i))
            ids[r, : len(row)], att[r, : len(row)] = row, 1
        return torch.from_numpy(ids), torch.from_numpy(att)

    def save(self, path: Path) -> None:
        with open(path, "wb") as f:
            np.savez_compressed(f, ids=self.ids, offsets=self.offsets)

    @classmethod
    def load(cls, path: Path) -> TokenTable:
        with np.load(path) as z:
            return cls(z["ids"], z["offsets"])


def tokenizer_sha1(tokenizer: Any) -> str:
    """A tokenizer's identity: its vocabulary (the backend's serialisation also holds its current
    truncation state, which each call with `truncation=True` changes)."""
    return hashlib.sha1(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()


def mask_tokens(ids: torch.Tensor, special_ids: torch.Tensor, mask_id: int, vocab_size: int,
                probability: float) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking, drawn on the ids' device: `probability` of the non-special tokens are
    predicted; of those 80% become [MASK], 10% a random token, 10% stay (as the collator of
    `prover retriever pretrain` does). Pads are special tokens: never masked."""
    device = ids.device
    chosen = (torch.rand(ids.shape, device=device) < probability) & ~torch.isin(ids, special_ids)
    labels = ids.masked_fill(~chosen, -100)
    draw = torch.rand(ids.shape, device=device)
    inputs = ids.masked_fill(chosen & (draw < 0.8), mask_id)
    random_tok = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs = torch.where(random_tok, torch.randint(vocab_size, ids.shape, device=device), inputs)
    return inputs, labels


# ---------------------------------------------------------------------------------------------
# the two stages

class MLMTask:
    """MLM over the token table: `pretrain.epoch_batches`, masks drawn on the device."""

    unit = "texts"

    def __init__(self, model: Any, table: TokenTable, tokenizer: Any, batch_size: int, probability: float,
                 seed: int, device: torch.device) -> None:
        self.model, self.table, self.batch_size, self.seed, self.device = model, table, batch_size, seed, device
        self.probability = probability
        self.pad_id, self.mask_id, self.vocab = tokenizer.pad_token_id, tokenizer.mask_token_id, len(tokenizer)
        self.special = torch.tensor(sorted(set(tokenizer.all_special_ids)), device=device)
        self.n = len(table)

    def batches(self, epoch: int) -> list[np.ndarray]:
        from retriever.training.pretrain import epoch_batches
        return epoch_batches(self.table.lengths, self.batch_size, self.seed, epoch)

    def tensors(self, idx: np.ndarray, epoch: int, index: int) -> dict[str, torch.Tensor]:
        ids, att = self.table.padded(idx, self.pad_id)
        nb = self.device.type == "cuda"
        ids, att = ids.to(self.device, non_blocking=nb), att.to(self.device, non_blocking=nb)
        inputs, labels = mask_tokens(ids, self.special, self.mask_id, self.vocab, self.probability)
        return {"input_ids": inputs, "attention_mask": att, "labels": labels}

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        from retriever.training.pretrain import mlm_loss
        return mlm_loss(self.model, batch)


class CFRTask:
    """Conventional CFR's InfoNCE over a batch's premises, as `train_cfr.CFRStage` builds it."""

    unit = "states"

    def __init__(self, bert: Any, states: TokenTable, premises: TokenTable, positives: list[list[int]],
                 pad_id: int, batch_size: int, premises_per_query: int, temperature: float, seed: int,
                 device: torch.device) -> None:
        self.model, self.states, self.premises, self.positives = bert, states, premises, positives
        self.pad_id, self.batch_size, self.ppq, self.temperature = pad_id, batch_size, premises_per_query, temperature
        self.seed, self.device = seed, device
        self.n = len(states)

    def batches(self, epoch: int) -> list[np.ndarray]:
        order = epoch_order(len(self.states), self.seed, epoch)
        return [order[lo: lo + self.batch_size] for lo in range(0, len(order), self.batch_size)]

    def tensors(self, idx: np.ndarray, epoch: int, index: int) -> tuple:
        from retriever.training.train_cfr import make_batch
        # Negatives are a function of (seed, epoch, batch), as in train_cfr.
        rng = np.random.default_rng([self.seed, epoch, index])
        ids, targets, mask = make_batch([self.positives[i] for i in idx], len(self.premises), self.ppq, rng)
        nb = self.device.type == "cuda"
        s = [t.to(self.device, non_blocking=nb) for t in self.states.padded(idx, self.pad_id)]
        p = [t.to(self.device, non_blocking=nb) for t in self.premises.padded(ids, self.pad_id)]
        return s, p, targets.to(self.device, non_blocking=nb), mask.to(self.device, non_blocking=nb)

    def loss(self, batch: tuple) -> torch.Tensor:
        from retriever.models.cfr import mean_pooled
        from retriever.training.train_cfr import info_nce
        (s_ids, s_att), (p_ids, p_att), targets, mask = batch
        s, p = mean_pooled(self.model, s_ids, s_att), mean_pooled(self.model, p_ids, p_att)
        with torch.autocast(self.device.type, enabled=False):
            return info_nce(s.float(), p.float(), targets, mask, self.temperature)


Task = MLMTask | CFRTask


def optimizer(model: torch.nn.Module, lr: float, weight_decay: float, device: torch.device) -> tuple[Any, bool]:
    """AdamW as the engine's (`optimizer_for`: no decay on biases and LayerNorm weights), fused
    where the device has the kernel; (optimizer, fused)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True), True
    except (RuntimeError, TypeError) as e:  # a device without the fused kernel
        log.warning("fused AdamW unavailable on %s (%s): the foreach one instead", device, e)
        return torch.optim.AdamW(groups, lr=lr), False


def _batch_stream(task: Task, start_epoch: int = 0):
    epoch = start_epoch
    while True:
        for i, idx in enumerate(task.batches(epoch)):
            yield epoch, i, idx
        epoch += 1


def probe(task: Task, steps: int, ceiling_tflops: float | None, use_autocast: bool, lr: float = 1e-4) -> dict:
    """Examples/s and the share of the bf16 rate of `task`'s step, on a throwaway copy of the
    model's state (restored after): two warm-up steps, then `steps` timed; FLOPs counted on the
    timed batches. The batches are spread over the first epoch, as training draws them."""
    model, device = task.model, task.device
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt, fused = optimizer(model, lr, 0.0, device)
    order = task.batches(0)
    picks = np.linspace(0, len(order) - 1, steps + 2).astype(int)
    model.train()
    rng_state = torch.get_rng_state()

    def step(i: int) -> None:
        with autocast(device, use_autocast):
            loss = task.loss(task.tensors(order[i], 0, int(i)))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    for i in picks[:2]:
        step(i)
    sync(device)
    warm = time.perf_counter() - t0

    def counted(i: int) -> torch.Tensor:
        with autocast(device, use_autocast):
            return task.loss(task.tensors(order[i], 0, int(i)))
    flops = sum(count_flops(lambda i=i: counted(i)) for i in picks[2:])
    opt.zero_grad(set_to_none=True)
    sync(device)
    t0 = time.perf_counter()
    for i in picks[2:]:
        step(i)
    sync(device)
    seconds = time.perf_counter() - t0
    n = sum(len(order[i]) for i in picks[2:])
    model.load_state_dict(saved)
    torch.set_rng_state(rng_state)
    row = {"examples_per_s": round(n / max(seconds, 1e-9), 1), "unit": task.unit, "warmup_s": round(warm, 2),
           "tflops": round(flops / max(seconds, 1e-9) / 1e12, 6), "flops_per_example": round(flops / max(n, 1)),
           "fused_adamw": fused, "probe_steps": steps}
    if ceiling_tflops:
        row["share_of_bf16_rate"] = round(row["tflops"] / ceiling_tflops, 4)
    return row


def train_timed(task: Task, steps: int, seconds: float, lr: float, warmup_steps: int, weight_decay: float = 0.0,
                grad_clip: float = 1.0, use_autocast: bool = True, log_every: int = 50,
                on_log: Callable[[dict], None] | None = None) -> dict:
    """`steps` optimizer steps of `task` (the linear schedule ends there), stopped early by the
    guard `seconds`; what happened, examples/s over the whole run included."""
    from transformers import get_linear_schedule_with_warmup
    model, device = task.model, task.device
    opt, fused = optimizer(model, lr, weight_decay, device)
    sched = get_linear_schedule_with_warmup(opt, min(warmup_steps, steps), max(steps, 1))
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    t0 = time.perf_counter()
    step, examples, window, win_steps, last_loss, epoch = 0, 0, None, 0, None, 0
    stopped_by = "end"
    rows = []
    for epoch, index, idx in _batch_stream(task):
        if step >= steps:
            break
        if time.perf_counter() - t0 > seconds:
            stopped_by = "budget"
            break
        with autocast(device, use_autocast):
            loss = task.loss(task.tensors(idx, epoch, index))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, grad_clip, foreach=device.type == "cuda")
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss = loss.detach()
        window = loss if window is None else window + loss
        step, win_steps, examples = step + 1, win_steps + 1, examples + len(idx)
        if step % log_every == 0 or step == steps:
            last_loss = round(float(window) / win_steps, 5)
            row = {"step": step, "epoch": epoch, "loss": last_loss, "seconds": round(time.perf_counter() - t0, 2),
                   "lr": sched.get_last_lr()[0]}
            rows.append(row)
            if on_log:
                on_log(row)
            window, win_steps = None, 0
    if window is not None:
        last_loss = round(float(window) / win_steps, 5)
    sync(device)
    elapsed = time.perf_counter() - t0
    model.eval()
    return {"steps": step, "planned_steps": steps, "stopped_by": stopped_by, "partial": step < steps,
            "done": step >= steps, "seconds": round(elapsed, 2), "examples": examples, "unit": task.unit,
            "epochs": round(examples / max(task.n, 1), 3), "examples_per_s": round(examples / max(elapsed, 1e-9), 1),
            "train_loss": last_loss, "fused_adamw": fused, "warmup_steps": min(warmup_steps, steps), "lr": lr,
            "batch_size": task.batch_size, "log": rows}


# ---------------------------------------------------------------------------------------------
# the encoder back

def cfr_settings(cfr: Any) -> dict:
    """What `CFREncoder.save_pretrained` writes to cfr.json, from the recipe's `cfr:`."""
    return {"similarity": cfr.similarity, "max_state_len": int(cfr.max_state_len),
            "max_premise_len": int(cfr.max_premise_len), "state_truncation_side": cfr.state_truncation_side}


@torch.no_grad()
def check_scores(encoder: Any, states: Sequence[str], premise_texts: Sequence[str]) -> list[list[float]]:
    """Each state's similarity to each premise text (conventional CFR: ŝ·p̂), fp32, in eval mode:
    what the returned encoder must reproduce on the CPU."""
    encoder.eval()
    s = encoder.encode(list(states), encoder.max_state_len, side=encoder.state_truncation_side)
    p = encoder.encode(list(premise_texts), encoder.max_premise_len)
    return (s @ p.T).tolist()


def write_encoder_parts(encoder: Any, out: str | Path, part_bytes: int, total_bytes: int, check: dict,
                        training: dict) -> list[Path]:
    """The CFR encoder's BERT in bf16 parts under `out` (`PART_NAME`), its config, cfr.json
    settings, tokenizer hash, training records and the score check in the first part's metadata."""
    settings = {"similarity": encoder.similarity, "max_state_len": encoder.max_state_len,
                "max_premise_len": encoder.max_premise_len, "state_truncation_side": encoder.state_truncation_side}
    meta = {"config": encoder.bert.config.to_json_string(), "cfr": json.dumps(settings),
            "tokenizer_sha1": tokenizer_sha1(encoder.tokenizer), "check": json.dumps(check),
            "training": json.dumps(training)}
    return write_tensor_parts(bf16_state(encoder.bert), out, PART_NAME, part_bytes, total_bytes, meta)


def assemble_encoder(parts: Sequence[str | Path] | str | Path, tokenizer_dir: str | Path) -> tuple[Any, dict]:
    """The parts (a list, or the folder holding them) and the packed tokenizer as a CFREncoder
    (fp32 weights on the CPU) and the first part's metadata (decoded). ValueError when a part
    is missing, the weights do not fit their config, or the tokenizer is not the one trained with."""
    from transformers import BertConfig, BertModel

    from retriever.models.cfr import CFREncoder
    from retriever.models.tokenizer import load_tokenizer
    if isinstance(parts, (str, Path)):
        parts = part_paths(parts, PART_NAME)
    state, meta = read_tensor_parts(parts)
    tokenizer = load_tokenizer(tokenizer_dir)
    if tokenizer_sha1(tokenizer) != meta["tokenizer_sha1"]:
        raise ValueError(f"the tokenizer in {tokenizer_dir} is not the one the encoder was trained with")
    bert = BertModel(BertConfig.from_dict(json.loads(meta["config"])), add_pooling_layer=False)
    missing, unexpected = bert.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    if missing or unexpected:
        raise ValueError(f"encoder parts do not fit their config: missing {missing[:3]}, unexpected {unexpected[:3]}")
    bert.eval()
    encoder = CFREncoder(bert, tokenizer, **json.loads(meta["cfr"]))
    return encoder, {k: json.loads(v) if k in ("cfr", "check", "training") else v for k, v in meta.items()}


def score_difference(encoder: Any, check: dict) -> float:
    """The largest |score here − score there| over the check's state-premise pairs."""
    here = np.asarray(check_scores(encoder, check["states"], check["premises"]))
    return float(np.abs(here - np.asarray(check["scores"])).max())
