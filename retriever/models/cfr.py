"""CFR, the context-free retriever: a BERT bi-encoder that embeds states and premises apart.

A text's embedding is the mean of BERT's last hidden states over its non-pad tokens,
L2-normalised. A state ŝ is embedded from `format_state(state)`. Premises are scored in one
of two ways (`similarity`):

- fine (the paper's fine-grained similarity): sim(s, p) = ŝ · ½(Γ̂_p + Ĝ_p), where Γ̂_p embeds
  the premise's arguments (`<VAR> a₁ <VAR> a₂`) and Ĝ_p its goal (`<GOAL> g`), so hypotheses
  are matched against arguments and the goal against the conclusion;
- conventional: sim(s, p) = ŝ · p̂ with p̂ the embedding of the whole premise text.

Either way a premise is one vector (for fine, the average ½(Γ̂ + Ĝ), deliberately not
re-normalised), so one inner-product search over the corpus gives the exact score.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from torch import nn
from transformers import BertModel, PreTrainedTokenizerFast

from prover.data.corpus import Corpus
from prover.data.premise import Premise
from prover.utils.logs import expected_weight_mismatch
from prover.utils.progress import progress_bar
from retriever.base import RankedPremise, Retriever, TheoremContext
from retriever.settings import CFRConfig
from retriever.models.text import cut_tokens, format_state, premise_args_text, premise_goal_text, premise_text
from prover.utils.device import pick_device

SMALL_BATCH = 4  # states per retrieve() call that encode on one thread (see encode_states)
log = logging.getLogger(__name__)

SIMILARITIES = ("fine", "conventional")
CFR_JSON = "cfr.json"


def cfr_config(cfg: Any) -> CFRConfig:
    """`cfg.cfr` as a plain CFRConfig (from an OmegaConf node or as is)."""
    return OmegaConf.to_object(cfg.cfr) if OmegaConf.is_config(cfg.cfr) else cfg.cfr


def tokenize_texts(tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], max_len: int,
                   side: str = "right") -> list[list[int]]:
    """CFR's token ids of `texts`: [CLS]/[SEP] around the text, cut to max_len at the `side` end,
    unpadded (the lease's data are tokenized here ahead, retriever/training/lease.py)."""
    if side == "right":
        return tokenizer(list(texts), truncation=True, max_length=max_len)["input_ids"]
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [[cls_id, *cut_tokens(ids, max_len - 2, side), sep_id] for ids in body]


def mean_pooled(bert: BertModel, ids: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
    """CFR's embedding of padded token ids: the mean of BERT's last hidden states over the real
    tokens (`att`), L2-normalised (the lease's loop, retriever/training/lease.py, calls it too)."""
    hidden = bert(input_ids=ids, attention_mask=att).last_hidden_state
    m = att.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
    return F.normalize(pooled, dim=-1)


class CFREncoder(nn.Module):
    def __init__(self, bert: BertModel, tokenizer: PreTrainedTokenizerFast, similarity: str = "fine",
                 max_state_len: int = 512, max_premise_len: int = 256,
                 state_truncation_side: str = "right") -> None:
        super().__init__()
        if similarity not in SIMILARITIES:
            raise ValueError(f"unknown CFR similarity {similarity!r}; choose from {', '.join(SIMILARITIES)}")
        cut_tokens([], 0, state_truncation_side, "cfr.state_truncation_side")  # reject a bad side now
        self.bert, self.tokenizer, self.similarity = bert, tokenizer, similarity
        self.max_state_len, self.max_premise_len = max_state_len, max_premise_len
        self.state_truncation_side = state_truncation_side

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dim(self) -> int:
        return self.bert.config.hidden_size

    def tokenize(self, texts: Sequence[str], max_len: int, side: str = "right") -> list[list[int]]:
        """Token ids with [CLS]/[SEP], cut to max_len at the `side` end of the text, unpadded."""
        return tokenize_texts(self.tokenizer, texts, max_len, side)

    def _pooled(self, seqs: Sequence[Sequence[int]]) -> torch.Tensor:
        """Mean of the last hidden states over each sequence's real tokens, L2-normalised."""
        width = max(len(t) for t in seqs)
        ids = np.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=np.int64)
        att = np.zeros((len(seqs), width), dtype=np.int64)
        for i, t in enumerate(seqs):
            ids[i, : len(t)], att[i, : len(t)] = t, 1
        return mean_pooled(self.bert, torch.from_numpy(ids).to(self.device), torch.from_numpy(att).to(self.device))

    def embed_tokens(self, seqs: Sequence[Sequence[int]], chunk_size: int = 64,
                     progress: bool = False) -> torch.Tensor:
        """(len(seqs), dim) unit vectors, in input order. Sequences run in chunks of similar
        length: premise halves are ~10 tokens but a few reach max_len, and padding every
        one to the longest would multiply the compute by ~4."""
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        chunks = [self._pooled([seqs[i] for i in order[lo: lo + chunk_size]])
                  for lo in progress_bar(range(0, len(order), chunk_size), desc="encode premises",
                                         unit="batch", disable=not progress, leave=False)]
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
        return torch.cat(chunks)[inverse.to(chunks[0].device)]

    def forward(self, texts: Sequence[str], max_len: int, side: str = "right") -> torch.Tensor:
        """(len(texts), dim) unit vectors: mean-pooled last hidden states over real tokens."""
        return self.embed_tokens(self.tokenize(texts, max_len, side))

    # --- with gradients, for training -------------------------------------------------------
    def embed_states(self, texts: Sequence[str]) -> torch.Tensor:
        """Embed already formatted states (`format_state`)."""
        return self(texts, self.max_state_len, self.state_truncation_side)

    def embed_premises(self, premises: Sequence[Premise]) -> torch.Tensor:
        if self.similarity == "conventional":
            return self([premise_text(p) for p in premises], self.max_premise_len)
        both = self([premise_args_text(p) for p in premises]
                    + [premise_goal_text(p) for p in premises], self.max_premise_len)
        return 0.5 * (both[: len(premises)] + both[len(premises):])

    # --- without gradients, for indexing and retrieval ---------------------------------------
    @torch.inference_mode()
    def encode(self, texts: Sequence[str], max_len: int, batch_size: int = 128,
               progress: bool = False, side: str = "right") -> torch.Tensor:
        """(len(texts), dim) float32 CPU unit vectors, in eval mode; identical texts
        (many premises share their arguments) are encoded once."""
        if not texts:
            return torch.empty(0, self.dim)
        unique = list(dict.fromkeys(texts))
        # Switch modes only when training: eval() walks every submodule, a cost per query at batch 1.
        was_training = self.training
        if was_training:
            self.eval()
        try:
            out = self.embed_tokens(self.tokenize(unique, max_len, side), batch_size, progress).float().cpu()
        finally:
            if was_training:
                self.train()
        row = {t: i for i, t in enumerate(unique)}
        return out[[row[t] for t in texts]]

    def encode_states(self, states: Sequence[str], batch_size: int = 128) -> torch.Tensor:
        """Embed raw proof states (formatted here)."""
        return self.encode([format_state(s) for s in states], self.max_state_len, batch_size,
                           side=self.state_truncation_side)

    def encode_premises(self, premises: Sequence[Premise], batch_size: int = 128,
                        progress: bool = False) -> torch.Tensor:
        """One vector per premise whose inner product with ŝ is the similarity."""
        if self.similarity == "conventional":
            return self.encode([premise_text(p) for p in premises], self.max_premise_len,
                               batch_size, progress)
        args = self.encode([premise_args_text(p) for p in premises], self.max_premise_len,
                           batch_size, progress)
        goals = self.encode([premise_goal_text(p) for p in premises], self.max_premise_len,
                            batch_size, progress)
        return 0.5 * (args + goals)

    # --- persistence ----------------------------------------------------------------------
    def save_pretrained(self, path: str | Path) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.bert.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        (path / CFR_JSON).write_text(json.dumps({
            "similarity": self.similarity, "max_state_len": self.max_state_len,
            "max_premise_len": self.max_premise_len,
            "state_truncation_side": self.state_truncation_side}, indent=2))
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path, cfg: CFRConfig | None = None) -> CFREncoder:
        """Load a CFR model folder, or start one from a pre-trained encoder (a BertModel or
        BertForMaskedLM folder with its tokenizer): settings come from its `cfr.json` if it
        has one (a trained model's similarity is part of the model), else from `cfg`."""
        path = Path(path)
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"no encoder at {path} (expected a Hugging Face model folder)")
        cfg = cfg if cfg is not None else CFRConfig()
        settings = {"similarity": cfg.similarity, "max_state_len": cfg.max_state_len,
                    "max_premise_len": cfg.max_premise_len,
                    "state_truncation_side": cfg.state_truncation_side}
        if (path / CFR_JSON).exists():
            saved = json.loads((path / CFR_JSON).read_text())
            saved.setdefault("state_truncation_side", "right")  # models saved before the option
            if saved["similarity"] != settings["similarity"]:
                log.warning("%s was trained with %s similarity; using it, not cfr.similarity=%s",
                            path, saved["similarity"], settings["similarity"])
            settings.update(saved)
        # The pooler is unused (we mean-pool); MLM heads of a pre-training folder are dropped.
        with expected_weight_mismatch():
            bert = BertModel.from_pretrained(str(path), add_pooling_layer=False)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(path))
        return cls(bert, tokenizer, **settings)


def model_fingerprint(model_dir: str | Path) -> str | None:
    """Hash of a saved model's weights, so an index built with other weights is refused."""
    weights = Path(model_dir) / "model.safetensors"
    if not weights.exists():
        return None
    h = hashlib.sha1()
    with open(weights, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


class CFRRetriever(Retriever):
    """Ranks accessible premises by CFR similarity via a FAISS index over the corpus.

    `model` is a CFR model folder (or a pre-trained encoder folder: the untrained baseline)
    or an encoder already in memory (validation during training). The premise index is read
    from `index_path` if given (refused if built for another corpus or model), else built by
    encoding every premise once.
    """

    def __init__(self, corpus: Corpus, model: str | Path | CFREncoder, cfg: CFRConfig | None = None,
                 device: str | torch.device = "auto", index_path: str | Path | None = None) -> None:
        super().__init__(corpus)
        self.cfg = cfg if cfg is not None else CFRConfig()
        if isinstance(model, CFREncoder):
            self.encoder, meta = model, {"similarity": model.similarity}
        else:
            device = device if isinstance(device, torch.device) else pick_device(device)
            # Retrieval never trains: in eval mode from the start, encode() skips its mode switch.
            self.encoder = CFREncoder.from_pretrained(model, self.cfg).to(device).eval()
            meta = {"similarity": self.encoder.similarity, "model_sha1": model_fingerprint(model)}
        self.name = "cfr" if self.encoder.similarity == "fine" else "cfr-conventional"
        # FAISS only here: the encoder alone trains where it is not installed (a GPU lease's image).
        from retriever.models.faiss_index import PremiseIndex, corpus_fingerprint
        fingerprint = corpus_fingerprint(corpus)
        if index_path is not None:
            self.index = PremiseIndex.load(index_path, fingerprint, meta)
        else:
            vectors = self.encoder.encode_premises(corpus.premises, self.cfg.encode_batch_size,
                                                   progress=True).numpy()
            self.index = PremiseIndex.build(vectors, self.cfg.index, nlist=self.cfg.index_nlist,
                                            m=self.cfg.index_hnsw_m, nprobe=self.cfg.index_nprobe,
                                            fingerprint=fingerprint, meta=meta)

    @property
    def premise_vectors(self) -> np.ndarray:
        """(len(corpus), dim): row i scores premise i by inner product with a state vector."""
        return self.index.vectors

    def encode_states(self, states: Sequence[str]) -> np.ndarray:
        if len(states) > SMALL_BATCH:
            return self.encoder.encode_states(states, self.cfg.encode_batch_size).numpy()
        # A few states through a small encoder gain little from intra-op threads, and their
        # idle OpenMP workers keep spinning on the core that the next step (the index scan,
        # or the next member of a fusion) needs: one thread was faster per query in a local profile.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.encoder.encode_states(states, self.cfg.encode_batch_size).numpy()
        finally:
            torch.set_num_threads(threads)

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[TheoremContext | None]) -> list[list[RankedPremise]]:
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        if not states:
            return []
        queries = self.encode_states(states)
        masks = [None if c is None else c.accessible(self.corpus) for c in contexts]
        return [[RankedPremise(int(i), self.corpus.premises[i], float(s)) for s, i in zip(scores, ids)]
                for scores, ids in self.index.search_masked(queries, k, masks)]

    def save_index(self, path: str | Path) -> Path:
        return self.index.save(path)

