"""ReProver's premise retriever (Yang et al., LeanDojo, 2023) as a baseline.

A ByT5-architecture encoder reads raw UTF-8 bytes; a text's embedding is the mean of its
non-pad token states, L2-normalised, so a state and a premise score by cosine similarity.
Training regresses that similarity onto 0/1 labels (MSE) over every premise in the batch:
each example's positive, its `negatives` sampled negatives (`negatives_same_file` of them
from the positive's file), and everyone else's positives and negatives. A query's label is
1 for any candidate that is one of its gold premises, so an example never learns to push
away another positive of its own state.

States are the raw pretty-printed state; premises are their code (statement, no proof) with
the name marked `<a>full_name</a>` by ReProver's own rule (prover/data/reprover_text.py), exactly what ReProver feeds its encoder, so the public
checkpoint `kaiyuy/leandojo-lean4-retriever-byt5-small` sees the text it was trained on.
"""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, ByT5Tokenizer, PreTrainedTokenizerBase, T5Config, T5EncoderModel

from prover.data.corpus import Corpus
from prover.data.premise import Premise
from prover.data.reprover_text import mark_name
from prover.utils.progress import progress_bar
from retriever.base import ScoringRetriever
from retriever.settings import ReProverConfig, RetrieverTrainConfig
from prover.utils.files import save_dir_atomically
from prover.utils.device import pick_device

log = logging.getLogger(__name__)

BYT5_VOCAB_SIZE = 384  # 256 bytes + 3 specials (pad, eos, unk), padded to 384 as in ByT5


def t5_config(rc: ReProverConfig) -> T5Config:
    """ByT5's architecture (gated-GELU T5 over bytes) at the configured size."""
    return T5Config(vocab_size=BYT5_VOCAB_SIZE, d_model=rc.d_model, d_ff=rc.d_ff,
                    num_layers=rc.num_layers, num_heads=rc.num_heads, d_kv=rc.d_kv,
                    feed_forward_proj="gated-gelu", dropout_rate=rc.dropout,
                    tie_word_embeddings=False, use_cache=False)


def premise_text(p: Premise) -> str:
    """ReProver's premise serialization (`prover/data/reprover_text.mark_name`): the code with
    the declared name marked `<a>full_name</a>` by ReProver's own, unescaped rule, so the
    public checkpoint reads names such as `List.find?_some` unmarked, as it was trained."""
    return mark_name(p.full_name, p.code)


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """The checkpoint's own tokenizer when it ships a byte-level one, else plain ByT5 (bytes
    need no vocabulary file). AutoTokenizer on a folder without tokenizer files silently
    builds an empty T5 SentencePiece tokenizer, hence the type check."""
    try:
        tok = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError):
        return ByT5Tokenizer()
    return tok if isinstance(tok, ByT5Tokenizer) else ByT5Tokenizer()


class ByteEncoder(torch.nn.Module):
    """Texts -> unit vectors: T5 encoder over bytes, mean-pooled over non-pad tokens."""

    def __init__(self, model: T5EncoderModel, tokenizer: PreTrainedTokenizerBase) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer

    @classmethod
    def fresh(cls, rc: ReProverConfig) -> ByteEncoder:
        return cls(T5EncoderModel(t5_config(rc)), ByT5Tokenizer())

    @classmethod
    def load(cls, path: str | Path) -> ByteEncoder:
        """A Hugging Face checkpoint (local folder or hub id); an encoder-decoder checkpoint
        such as ReProver's loads its encoder only."""
        return cls(T5EncoderModel.from_pretrained(str(path)), load_tokenizer(str(path)))

    def save(self, path: str | Path) -> None:
        """Write to a temp folder, then swap it in, so a kill mid-save keeps the old model
        (and stale embedding caches inside the old folder go with it)."""
        def write(tmp: Path) -> None:
            self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
        save_dir_atomically(path, write)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dim(self) -> int:
        return self.model.config.d_model

    def forward(self, texts: Sequence[str], max_len: int, truncation_side: str = "right") -> torch.Tensor:
        # A character is at least one byte, so cutting to max_len characters first changes
        # nothing after truncation and spares tokenizing a 50 KB state byte by byte.
        # "left" keeps a text's end: a state's goal comes after its hypotheses.
        cut = [t[-max_len:] if truncation_side == "left" else t[:max_len] for t in texts]
        self.tokenizer.truncation_side = truncation_side
        enc = self.tokenizer(cut, padding="longest", truncation=True,
                             max_length=max_len, return_tensors="pt").to(self.device)
        hidden = self.model(input_ids=enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state
        mask = enc.attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1)  # every text has at least its EOS
        return F.normalize(mean, dim=-1)

    @torch.no_grad()
    def encode(self, texts: Sequence[str], max_len: int, batch_size: int,
               desc: str = "encode", partial: Path | None = None,
               save_every: int = 100, truncation_side: str = "right") -> np.ndarray:
        """(len(texts), dim) float32 unit vectors, in eval mode (no dropout).

        With `partial`, the rows done so far are saved there every `save_every` batches and a
        later call with the same path picks up where the last one stopped: encoding a large
        corpus byte by byte takes hours on a CPU. The caller keys the path by texts and
        weights; the file is removed once every row is done."""
        was_training = self.training
        self.eval()
        # Byte sequences are long; batching texts of similar length avoids mostly-padding batches.
        order = np.argsort([len(t) for t in texts], kind="stable")
        out, start = _load_partial(partial, (len(texts), self.dim))
        starts = range(start, len(texts), batch_size)
        for n, lo in enumerate(progress_bar(starts, desc=desc, unit="batch",
                                            initial=start // batch_size,
                                            total=start // batch_size + len(starts),
                                            disable=len(texts) <= 4 * batch_size), start=1):
            idx = order[lo: lo + batch_size]
            out[idx] = self([texts[i] for i in idx], max_len, truncation_side).float().cpu().numpy()
            if partial is not None and n % save_every == 0:
                _save_partial(partial, out, lo + len(idx))
        if partial is not None:
            partial.unlink(missing_ok=True)
        self.train(was_training)
        return out


def _load_partial(path: Path | None, shape: tuple[int, int]) -> tuple[np.ndarray, int]:
    """The rows a previous encode saved (and how many, in length order), or zeros."""
    if path is not None and path.exists():
        try:
            with np.load(path) as z:
                if z["rows"].shape == shape:
                    log.info("resuming an encode from %s (%d of %d rows done)", path,
                             int(z["done"]), shape[0])
                    return z["rows"].copy(), int(z["done"])
        except (OSError, ValueError, KeyError) as e:  # a torn write: start over
            log.warning("ignoring unreadable partial encode %s: %s", path, e)
    return np.zeros(shape, dtype=np.float32), 0


def _save_partial(path: Path, rows: np.ndarray, done: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:  # a file object, so numpy does not append its own suffix
        np.savez(f, rows=rows, done=np.int64(done))
    os.replace(tmp, path)


def label_matrix(gold: Sequence[Collection[int]], candidates: Sequence[int]) -> torch.Tensor:
    """labels[i, j] = 1 iff candidate j (a corpus index) is a gold premise of query i."""
    return torch.tensor([[float(c in g) for c in candidates] for g in gold])


def similarity_loss(state_emb: torch.Tensor, premise_emb: torch.Tensor,
                    labels: torch.Tensor) -> torch.Tensor:
    """ReProver's loss: MSE between cosine similarities (inner products of unit vectors) and
    0/1 labels, over all (query, candidate) cells of the batch."""
    return F.mse_loss(state_emb @ premise_emb.T, labels)


def sample_negatives(corpus: Corpus, positive: int, accessible: np.ndarray, n: int,
                     n_same_file: int, rng: np.random.Generator) -> list[int]:
    """ReProver's negatives for one (state, positive premise) example, without replacement
    and never the positive itself: min(n_same_file, available) accessible premises from the
    positive's file, the rest from the other accessible premises."""
    pool = accessible.copy()
    pool[positive] = False
    same = corpus.premise_file == corpus.premise_file[positive]
    in_file, other = np.flatnonzero(pool & same), np.flatnonzero(pool & ~same)
    k = min(n_same_file, in_file.size)
    picks = rng.choice(in_file, k, replace=False).tolist()
    picks += rng.choice(other, min(n - k, other.size), replace=False).tolist()
    return picks


def weights_digest(model: torch.nn.Module) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def corpus_fingerprint(texts: Sequence[str], encoder: ByteEncoder, max_len: int) -> str:
    """Changes whenever the cached premise embeddings would: the texts, the truncation length
    or the weights (hashed by content, since a retrained model may reuse the same folder)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{max_len}|{type(encoder.tokenizer).__name__}|{weights_digest(encoder.model)}".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


class ReProverRetriever(ScoringRetriever):
    """Scores premises by inner product with the state embedding; the corpus is encoded once
    (and cached as .npy under `cache_dir`, keyed by a corpus + weights fingerprint)."""

    def __init__(self, corpus: Corpus, encoder: ByteEncoder, max_state_len: int = 2048,
                 max_premise_len: int = 1024, batch_size: int = 64,
                 cache_dir: str | Path | None = None, name: str = "reprover",
                 partial_dir: str | Path | None = None, state_truncation_side: str = "right") -> None:
        super().__init__(corpus)
        self.encoder = encoder
        self.state_truncation_side = state_truncation_side
        self.max_state_len = max_state_len
        self.max_premise_len = max_premise_len
        self.batch_size = batch_size
        self.name = name
        self.embeddings = self._corpus_embeddings(cache_dir, partial_dir)

    @classmethod
    def from_pretrained(cls, corpus: Corpus, path: str | Path, rc: ReProverConfig,
                        device: str = "auto", cache_dir: str | Path | None = None,
                        name: str = "reprover") -> ReProverRetriever:
        encoder = ByteEncoder.load(path).to(pick_device(device)).eval()
        return cls(corpus, encoder, rc.max_state_len, rc.max_premise_len, rc.encode_batch_size,
                   cache_dir, name, state_truncation_side=rc.state_truncation_side)

    def _fingerprint(self) -> str:
        texts = [premise_text(p) for p in self.corpus.premises]
        return corpus_fingerprint(texts, self.encoder, self.max_premise_len)

    def _cache_path(self, cache_dir: str | Path, fingerprint: str | None = None) -> Path:
        return Path(cache_dir) / f"corpus_embeddings-{fingerprint or self._fingerprint()}.npy"

    def _corpus_embeddings(self, cache_dir: str | Path | None,
                           partial_dir: str | Path | None = None) -> np.ndarray:
        partial_dir = partial_dir if partial_dir is not None else cache_dir
        # Hashes every weight and premise text: computed once, shared by both file names.
        fp = self._fingerprint() if cache_dir is not None or partial_dir is not None else None
        path = self._cache_path(cache_dir, fp) if cache_dir is not None else None
        if path is not None and path.exists():
            log.info("premise embeddings from %s", path)
            return np.load(path)
        # Resumable: a stopped encode of these weights over this corpus continues from here.
        partial = (Path(partial_dir) / f"corpus_embeddings-{fp}.partial.npz"
                   if partial_dir is not None else None)
        texts = [premise_text(p) for p in self.corpus.premises]
        emb = self.encoder.encode(texts, self.max_premise_len, self.batch_size, "encode corpus",
                                  partial=partial)
        if path is not None:
            _write_npy(path, emb)
        return emb

    def save_embeddings(self, cache_dir: str | Path) -> None:
        """Cache the premise embeddings in `cache_dir` (the model folder), keyed by corpus and
        weights, so the next load of these weights over this corpus skips encoding it."""
        _write_npy(self._cache_path(cache_dir), self.embeddings)

    def encode_states(self, states: Sequence[str]) -> np.ndarray:
        """(len(states), dim): a state's vector scores premise i by inner product with row i
        of the premise embeddings."""
        return self.encoder.encode(states, self.max_state_len, self.batch_size, "encode states",
                                   truncation_side=self.state_truncation_side)

    def score(self, states: Sequence[str]) -> np.ndarray:
        return self.encode_states(states) @ self.embeddings.T


def _write_npy(path: Path, array: np.ndarray) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npy")
        np.save(tmp, array)
        os.replace(tmp, path)
    except OSError as e:  # a read-only model folder still serves, just uncached
        log.warning("could not cache premise embeddings at %s: %s", path, e)


def build_reprover(corpus: Corpus, cfg: Any = None) -> ReProverRetriever:
    """The registry's "reprover": `reprover.checkpoint` when set (a local folder, or a hub id
    such as kaiyuy/leandojo-lean4-retriever-byt5-small), else the model trained under
    `run_dir/reprover/model`. `cfg` is any config with `reprover` (and `run_dir`) nodes."""
    rc = getattr(cfg, "reprover", None) or ReProverConfig()
    run_dir = Path(getattr(cfg, "run_dir", None) or RetrieverTrainConfig.run_dir) / "reprover"
    source = rc.checkpoint or str(run_dir / "model")
    if Path(source).is_dir():
        cache_dir = Path(source)
    elif rc.checkpoint:  # a hub id: keep its embeddings beside our own runs, not in the HF cache
        cache_dir = run_dir / "hub_embeddings" / rc.checkpoint.replace("/", "--")
    else:
        raise FileNotFoundError(f"no ReProver model at {source}: train one (prover retriever "
                                f"train-reprover) or set reprover.checkpoint")
    return ReProverRetriever.from_pretrained(corpus, source, rc, getattr(cfg, "device", "auto"),
                                             cache_dir)
