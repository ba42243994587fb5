"""CAR, the context-aware re-ranker: a cross-encoder that reads a state and a premise together.

A bi-encoder (CFR) embeds state and premise apart, so it ranks a whole corpus in one matrix
product but never lets a state token attend to a premise token. CAR does exactly that, on
`[CLS] state [SEP] premise [SEP]`, which is too slow for a corpus and right for the first
stage's top k1: `RerankRetriever` re-orders those and leaves the rest as the first stage had them.

The score of a pair is the logit of a one-label `BertForSequenceClassification`, and
Pr(s, p) = sigmoid(logit). Training (`retriever/training/train_car.py`) pushes Pr(s, p⁺) up relative
to hard negatives mined from the first stage, with `car_loss` below.
"""
from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import BertForSequenceClassification, PreTrainedTokenizerFast

from prover.data.premise import Premise
from prover.utils.logs import expected_weight_mismatch
from retriever.base import RankedPremise, Retriever, TheoremContext
from retriever.models.text import cut_tokens, format_state, premise_text
from retriever.models.tokenizer import load_tokenizer

log = logging.getLogger(__name__)

CAR_META = "car.json"


def car_run_dir(run_dir: str | Path, first_stage: str) -> Path:
    """`<run_dir>/car` for CAR over `cfr` (the paper's), `<run_dir>/car-conventional` over
    `cfr-conventional`, `<run_dir>/car-<name>` over any other registered first stage: a CAR
    model is trained on one first stage's mistakes, so each has its own folder."""
    suffix = "" if first_stage == "cfr" else "-" + first_stage.removeprefix("cfr-")
    return Path(run_dir) / f"car{suffix}"


def car_loss(logits: torch.Tensor) -> torch.Tensor:
    """−log(Pr(s,p⁺) / Σ_{p'} Pr(s,p')) with Pr = sigmoid(logit), averaged over the batch.

    `logits` is (batch, 1 + negatives), the positive in column 0. In log space the ratio is
    logsigmoid(l⁺) − logsumexp_j logsigmoid(l_j): no sigmoid underflows to 0, no log(0)."""
    log_pr = F.logsigmoid(logits)
    return (torch.logsumexp(log_pr, dim=1) - log_pr[:, 0]).mean()


def truncate_pair(state: list[int], premise: list[int], budget: int,
                  state_side: str = "right") -> tuple[list[int], list[int]]:
    """Fit two token lists into `budget` tokens, cutting the state first (only_first).

    The premise stays whole whenever the state can still keep half the budget; only a premise
    longer than that is cut too (longest_first), so a huge premise cannot squeeze the state
    down to a handful of tokens. The premise is cut at its end; the state at its end
    (`state_side` "right", Hugging Face's default) or at its start ("left"), which keeps the
    goal, the state's last part, and drops leading hypotheses instead."""
    keep_state = min(len(state), max(budget - len(premise), budget // 2))
    return cut_tokens(state, keep_state, state_side), premise[:budget - keep_state]


class CARScorer:
    """A cross-encoder scoring (state, premise) pairs; higher is more relevant."""

    def __init__(self, model: BertForSequenceClassification, tokenizer: PreTrainedTokenizerFast,
                 max_len: int, score_batch_size: int = 64, device: str | torch.device = "cpu",
                 meta: dict | None = None, truncation_side: str = "right") -> None:
        limit = model.config.max_position_embeddings
        if max_len > limit:
            raise ValueError(f"car.max_len={max_len} exceeds the encoder's {limit} positions")
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.truncation_side = truncation_side  # of the state; see truncate_pair
        cut_tokens([], 0, truncation_side, "car.truncation_side")  # reject a bad side now, not at first use
        self.score_batch_size = score_batch_size
        # Pairs per forward pass when scoring many (see `logits`): on a GPU padding is nearly
        # free and big batches are not, so there it is effectively one pass.
        self.chunk_size = 32 if self.device.type == "cpu" else 1024
        # Saved to car.json beside max_len: training records k1 and the first stage there,
        # so a serving process can rebuild the re-ranker from the folder alone.
        self.meta = dict(meta or {})

    @classmethod
    def from_encoder(cls, path: str | Path, max_len: int, score_batch_size: int = 64,
                     device: str | torch.device = "cpu",
                     attention_dropout: float | None = None,
                     truncation_side: str = "right") -> CARScorer:
        """A fresh scorer on a pre-trained encoder folder (a BertForMaskedLM or BertModel and its
        tokenizer): the encoder weights load, the pooler and the one-logit head start random.
        `attention_dropout` replaces the encoder's attention-probability dropout (None: keep it)."""
        extra = {} if attention_dropout is None else {"attention_probs_dropout_prob": attention_dropout}
        with expected_weight_mismatch():
            model = BertForSequenceClassification.from_pretrained(str(path), num_labels=1, **extra)
        return cls(model, load_tokenizer(path), max_len, score_batch_size, device,
                   truncation_side=truncation_side)

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | torch.device = "cpu",
                        score_batch_size: int | None = None) -> CARScorer:
        """A scorer saved by `save_pretrained` (the HF model, its tokenizer and `car.json`)."""
        meta = json.loads((Path(path) / CAR_META).read_text())
        model = BertForSequenceClassification.from_pretrained(str(path))
        max_len, batch = meta.pop("max_len"), meta.pop("score_batch_size")
        side = meta.pop("truncation_side", "right")  # scorers saved before the option cut right
        return cls(model, load_tokenizer(path), max_len, score_batch_size or batch, device, meta, side)

    def save_pretrained(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        (path / CAR_META).write_text(json.dumps(
            {"max_len": self.max_len, "score_batch_size": self.score_batch_size,
             "truncation_side": self.truncation_side, **self.meta}, indent=1))

    def pair_ids(self, states: Sequence[str], premises: Sequence[Premise]) -> list[tuple[list[int], list[int]]]:
        """(input ids, token type ids) of `[CLS] format_state(s) [SEP] premise_text(p) [SEP]`."""
        if len(states) != len(premises):
            raise ValueError(f"{len(states)} states but {len(premises)} premises")
        if not states:
            return []
        # A state is usually paired with many premises: format and tokenize each one once.
        uniq = list(dict.fromkeys(states))
        s_ids = dict(zip(uniq, self.tokenizer([format_state(s) for s in uniq],
                                              add_special_tokens=False)["input_ids"]))
        p_ids = self.tokenizer([premise_text(p) for p in premises], add_special_tokens=False)["input_ids"]
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        rows = []
        for s, p in zip(states, p_ids):
            a, b = truncate_pair(s_ids[s], p, self.max_len - 3, self.truncation_side)
            rows.append(([cls_id, *a, sep_id, *b, sep_id], [0] * (len(a) + 2) + [1] * (len(b) + 1)))
        return rows

    def pad(self, rows: Sequence[tuple[list[int], list[int]]]) -> dict[str, torch.Tensor]:
        """Model inputs for `rows`, padded to the longest of them."""
        width = max(len(ids) for ids, _ in rows)
        input_ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        token_type_ids = torch.zeros((len(rows), width), dtype=torch.long)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (ids, types) in enumerate(rows):
            input_ids[i, :len(ids)] = torch.tensor(ids)
            token_type_ids[i, :len(ids)] = torch.tensor(types)
            attention_mask[i, :len(ids)] = 1
        return {"input_ids": input_ids.to(self.device), "token_type_ids": token_type_ids.to(self.device),
                "attention_mask": attention_mask.to(self.device)}

    def encode(self, states: Sequence[str], premises: Sequence[Premise]) -> dict[str, torch.Tensor]:
        """Tensors for `[CLS] format_state(s) [SEP] premise_text(p) [SEP]`, padded to the batch."""
        return self.pad(self.pair_ids(states, premises))

    def logits(self, states: Sequence[str], premises: Sequence[Premise]) -> torch.Tensor:
        """One float32 logit per pair, with gradients, in whatever mode the model is in."""
        rows = self.pair_ids(states, premises)
        # Pairs run in chunks of similar length, each padded only to its own longest: a training
        # step pads 128 pairs to the longest otherwise, and on a CPU padding is paid in FLOPs.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
        # bf16 on a GPU roughly doubles throughput; the loss is computed on float32 logits.
        amp = (torch.autocast("cuda", dtype=torch.bfloat16) if self.device.type == "cuda"
               else contextlib.nullcontext())
        chunks = [order[lo: lo + self.chunk_size] for lo in range(0, len(order), self.chunk_size)]
        with amp:
            parts = [self.model(**self.pad([rows[i] for i in idx])).logits.squeeze(-1).float()
                     for idx in chunks]
        if not parts:
            return torch.zeros(0, device=self.device)
        return torch.cat(parts)[torch.argsort(torch.tensor(order, device=self.device))]

    @torch.no_grad()
    def score(self, states: Sequence[str], premises: Sequence[Premise]) -> np.ndarray:
        """Logits of the pairs (states[i], premises[i]), in batches of `score_batch_size`."""
        was_training = self.model.training
        self.model.eval()
        out = [self.logits(states[lo: lo + self.score_batch_size],
                           premises[lo: lo + self.score_batch_size]).cpu().numpy()
               for lo in range(0, len(states), self.score_batch_size)]
        self.model.train(was_training)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


class RerankRetriever(Retriever):
    """The first stage's ranking with its top k1 re-ordered by CAR.

    `retrieve(states, k)` asks the first stage for max(k1, k) premises (accessibility is its
    job), re-scores the first k1 with CAR and returns them best first, then the first stage's
    remaining candidates in its own order, cut to k. So asking for k > k1 still gives a full
    ranking. Scores of
    the re-ranked head are CAR logits, those of the tail the first stage's scores: compare
    ranks, not scores, across the two parts.

    With `first_stage_weight` w > 0 the head is ordered by z(CAR) + w·z(first stage) instead,
    each standardized over the query's k1 candidates (z(x) = (x - mean) / std), and that sum is
    the score. The paper orders by CAR alone (w = 0). A tiny CAR trained for a CPU-minute ranks
    no better than CFR on its own yet adds to it: see
    benchmarks/results/retrieval-mathlib-src-mini-random-val.md (cfr+car-only vs cfr+car).
    """

    def __init__(self, first_stage: Retriever, scorer: CARScorer, k1: int,
                 first_stage_weight: float = 0.0) -> None:
        super().__init__(first_stage.corpus)
        self.first_stage = first_stage
        self.scorer = scorer
        self.k1 = k1
        self.first_stage_weight = first_stage_weight
        self.name = f"{first_stage.name}+car"

    @classmethod
    def load(cls, first_stage: Retriever, path: str | Path, device: str | torch.device = "cpu",
             k1: int | None = None, first_stage_weight: float = 0.0) -> RerankRetriever:
        """A trained CAR folder over `first_stage`; k1 defaults to the one it was trained with."""
        scorer = CARScorer.from_pretrained(path, device)
        return cls(first_stage, scorer, k1 or scorer.meta.get("k1", 20), first_stage_weight)

    def head_scores(self, car: np.ndarray, first: np.ndarray) -> np.ndarray:
        """What the k1 head is ordered by: CAR logits, or their fusion with the first stage."""
        if not self.first_stage_weight:
            return car
        return _standardize(car) + self.first_stage_weight * _standardize(first)

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[TheoremContext | None]) -> list[list[RankedPremise]]:
        candidates = self.first_stage.retrieve(states, max(self.k1, k), contexts)
        heads = [hits[: self.k1] for hits in candidates]
        # One scorer call for the whole batch keeps its batches full.
        scores = self.scorer.score([s for s, head in zip(states, heads) for _ in head],
                                   [h.premise for head in heads for h in head])
        out, lo = [], 0
        for hits, head in zip(candidates, heads):
            car = self.head_scores(scores[lo: lo + len(head)], np.array([h.score for h in head]))
            lo += len(head)
            # Stable sort: pairs CAR cannot tell apart keep the first stage's order.
            order = np.argsort(-car, kind="stable")
            reranked = [RankedPremise(head[i].index, head[i].premise, float(car[i])) for i in order]
            out.append((reranked + hits[self.k1:])[:k])
        return out


def _standardize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return (x - x.mean()) / (x.std() + 1e-9) if x.size else x
