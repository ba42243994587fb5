"""The tactic generator: a T5 encoder-decoder over UTF-8 bytes (ByT5's vocabulary).

`generate` takes many states at once and returns, per state, distinct tactics with their
log-probabilities (sum over the tactic's bytes), best first.

A model folder may hold a tactic pool (`tactic_pool.json`, written by training: the most
frequent tactics of its training targets). Its tactics are scored by the model for every state
beside beam search's own candidates, and the best `num_tactics` of both are returned. Beam
search alone spends its beams on near-copies of one long sequence; the pool puts the common
short tactics (`simp`, `ring`, `linarith`, ...) in front of the model for every state, and the
model's own conditional likelihood decides which fit this one.

A model folder may also hold tactic neighbours (`tactic_neighbors/`, generator/neighbors.py):
given the raw proof states, the tactics of the nearest training states join the candidates and
their distribution is mixed into the model's (kNN-LM); a suggestion's score is then the mixture's
log-probability.

Options tried and not shipped (generator/tried/, issue 28) plug in through two hooks, and this
module imports none of them: `extra_candidates` (more candidates per state, scored by the model:
the neighbours' templates filled with the premises shown) and `ranker` (orders the candidates
instead of the mixture).
"""
from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

from generator.candidate import Candidate
from generator.input_format import INPUT_CONFIG, input_config
from generator.inputs import format_input, normalize_tactic
from generator.neighbors import TacticNeighbors, vote
from generator.settings import GenerateConfig, InputConfig, ModelConfig
from prover.data.errors import UserInputError
from prover.data.premise import Premise
from prover.data.reprover_text import augmented_state, mark_name, remove_marks
from prover.data.tactic_steps import name_pattern

log = logging.getLogger(__name__)

TACTIC_POOL = "tactic_pool.json"  # beside config.json: tactics scored for every state (optional)


@dataclass(frozen=True, slots=True)
class Suggestion:
    tactic: str
    logprob: float


def byte_tokenizer() -> ByT5Tokenizer:
    # ByT5's vocabulary is the 256 bytes plus specials: nothing to download. Left truncation:
    # an over-long input loses its lowest-ranked premises, then the state's first hypotheses,
    # never the goal at the end.
    return ByT5Tokenizer(truncation_side="left")


def fresh_model(cfg: ModelConfig) -> T5ForConditionalGeneration:
    tok = byte_tokenizer()
    config = T5Config(vocab_size=len(tok), d_model=cfg.d_model, d_ff=cfg.d_ff, num_layers=cfg.num_layers,
                      num_decoder_layers=cfg.num_decoder_layers, num_heads=cfg.num_heads, d_kv=cfg.d_kv,
                      dropout_rate=cfg.dropout, feed_forward_proj="gated-gelu",
                      # Tied: T5 then scales the decoder output by d_model^-0.5, so a fresh model
                      # starts near uniform over bytes (untied, its first loss is ~5x ln 384).
                      tie_word_embeddings=True,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                      decoder_start_token_id=tok.pad_token_id)
    return T5ForConditionalGeneration(config)


# Text that ByT5Tokenizer reads as one special token rather than as its bytes.
_SPECIAL = re.compile(r"</s>|<pad>|<unk>|<extra_id_\d+>")


def byte_ids(texts: Sequence[str], max_len: int, side: str = "left") -> dict[str, torch.Tensor] | None:
    """What `byte_tokenizer()(texts, padding="longest", truncation=True, max_length=max_len)`
    returns, computed from the UTF-8 bytes (id = byte + 3, then </s>, `side` truncation, pad 0);
    None when a text spells a special token, which only the tokenizer reads as one. The
    tokenizer is pure Python: 0.3 s for a batch of 256 inputs of 512 bytes, longer than a GPU
    training step, where this takes about a millisecond."""
    if any("<" in t and _SPECIAL.search(t) for t in texts):
        return None
    keep = max_len - 1
    def cut(raw: np.ndarray) -> np.ndarray:
        return raw[-keep:] if side == "left" else raw[:keep]
    rows = [cut(np.frombuffer(t.encode("utf-8"), dtype=np.uint8)) if keep > 0 else np.zeros(0, np.uint8)
            for t in texts]
    ids = np.zeros((len(rows), max((len(r) for r in rows), default=0) + 1), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r.astype(np.int64) + 3
        ids[i, len(r)] = 1
        mask[i, : len(r) + 1] = 1
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}


from generator.source import TRAIN_HINT, check_hub_model, check_model_source  # noqa: E402,F401  (light: no torch)


class TacticGenerator:
    def __init__(self, model: T5ForConditionalGeneration, input_cfg: InputConfig,
                 device: str | torch.device = "cpu", pool: Sequence[str] = (),
                 neighbors: TacticNeighbors | None = None, generate: GenerateConfig | None = None) -> None:
        # How it generates (GenerateConfig): read here, at every `generate` call that does not say.
        self.settings = generate or GenerateConfig()
        self.model = model.to(device)
        self.pool = list(pool)
        self.neighbors = neighbors
        # False: the neighbours' tactics are not mixed into the suggestions (the model alone);
        # a retrieval-augmented model still shows them in its inputs.
        self.mix_neighbors = True
        # Tried options' hook (generator/tried/instantiate.py plugs in there): a function of (the
        # neighbours, each state's nearest training states, each state's premise names shown)
        # giving each state's extra candidates, scored by the model. None: none.
        self.extra_candidates: Callable[[TacticNeighbors | None, list, Sequence], list[list[str]]] | None = None
        # Added to the score of a candidate that names a premise shown in its input (nats; 0:
        # off): a log-linear prior P(t) e^bonus for copying what retrieval found, which the
        # CPU-size network does not learn to do from the input alone (issue 28).
        self.premise_bonus = self.settings.premise_bonus
        # Tried options' hook (generator/tried/rerank.py): an object whose `logprobs(candidates)`
        # orders a state's candidates instead of the hand-set score (None) and `save(folder)`
        # keeps it beside the model.
        self.ranker: Any = None
        self.tokenizer = byte_tokenizer()
        self.input_cfg = input_cfg
        self.device = torch.device(device)
        # ByT5's extra_id tokens decode to nothing: a tactic is bytes and </s> only.
        self._sentinels = [i for i in range(len(self.tokenizer))
                           if i not in (self.tokenizer.eos_token_id,) and i >= self.tokenizer.offset + 256]

    @classmethod
    def create(cls, model_cfg: ModelConfig, input_cfg: InputConfig,
               device: str | torch.device = "cpu") -> TacticGenerator:
        """From `model_cfg.init` (a local folder or hub id) when set, else freshly initialized."""
        model = (T5ForConditionalGeneration.from_pretrained(model_cfg.init) if model_cfg.init
                 else fresh_model(model_cfg))
        return cls(model, input_cfg, device)

    @classmethod
    def load(cls, path: str | Path, input_cfg: InputConfig | None = None,
             device: str | torch.device = "cpu", generate: GenerateConfig | None = None,
             input_format: str | None = None) -> TacticGenerator:
        """A saved generator (a local folder, or a hub id), with the input it was trained on
        unless `input_cfg` (generator/input_format.py: its input_config.json, a published
        checkpoint's known format, or `input_format`), generating as `generate` says; what
        cannot be loaded is a one-line UserInputError."""
        local = check_model_source(path)
        try:
            model = T5ForConditionalGeneration.from_pretrained(str(path))
        except (OSError, ValueError) as e:
            cause = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if local:
                raise UserInputError(f"cannot load the generator model in {path}: {cause}") from None
            raise UserInputError(f"generator model {path} is neither a local folder nor a loadable "
                                 f"hub id ({cause})") from None
        if input_cfg is None:
            input_cfg = input_config(path, input_format)
        pool_file = Path(path) / TACTIC_POOL
        pool = json.loads(pool_file.read_text())["tactics"] if pool_file.exists() else []
        neighbors = TacticNeighbors.load(path) if local else None
        return cls(model, input_cfg or InputConfig(), device, pool, neighbors, generate)

    def save_pretrained(self, path: str | Path) -> None:
        self.model.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        (Path(path) / INPUT_CONFIG).write_text(json.dumps(asdict(self.input_cfg)))
        if self.pool:
            save_pool(path, self.pool)
        if self.neighbors is not None:
            self.neighbors.save(path)
        if self.ranker is not None:
            self.ranker.save(path)

    def input_text(self, state: str, premises: Sequence[Premise] = (),
                   max_bytes: int | None = None) -> tuple[str, int]:
        """The input this model was trained on for `state` and `premises` (best first), and
        how many premises it holds: its byte budgets, and for a retrieval-augmented model
        (`input.neighbor_tactics`) the tactics of its nearest training states."""
        cfg = self.input_cfg
        if not cfg.reads_premises:
            premises = ()  # trained on bare states: premises would only disturb it
        if cfg.layout == "reprover":
            return augmented_state(state, [mark_name(p.full_name, p.code) for p in premises],
                                   max_bytes or cfg.max_bytes)
        tactics: list[str] = []
        if cfg.neighbor_tactics:
            if self.neighbors is None:
                raise UserInputError(f"this generator was trained to see {cfg.neighbor_tactics} neighbour "
                                     f"tactics, but its folder has no tactic_neighbors/: rebuild them "
                                     f"with `prover generator neighbors --config ...`")
            tactics = self.neighbors.top_tactics(state, cfg.neighbor_tactics)
        return format_input(state, premises, max_bytes or cfg.max_bytes, cfg.premise_text,
                            cfg.max_state_bytes, tactics)

    @property
    def reprover_layout(self) -> bool:
        return self.input_cfg.layout == "reprover"

    @property
    def max_input_tokens(self) -> int:
        # ReProver's tokenizer call: max_length=max_inp_seq_len, </s> included, end cut off.
        return self.input_cfg.max_bytes if self.reprover_layout else self.input_cfg.max_bytes + 1  # + </s>

    def _tokenize(self, texts: Sequence[str], max_len: int) -> dict[str, torch.Tensor]:
        side = "right" if self.reprover_layout else "left"
        self.tokenizer.truncation_side = side
        enc = byte_ids(texts, max_len, side)
        if enc is None:
            enc = self.tokenizer(list(texts), padding="longest", truncation=True, max_length=max_len,
                                 return_tensors="pt")
        return enc

    def encode(self, texts: Sequence[str], max_len: int) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in self._tokenize(texts, max_len).items()}

    def _labels(self, tactics: Sequence[str]) -> torch.Tensor:
        # Targets truncate at the end (a tactic's start matters most); padding is ignored.
        enc = self._tokenize(tactics, self.input_cfg.max_target_bytes + 1)
        labels = enc["input_ids"].clone()
        labels[enc["attention_mask"] == 0] = -100
        return labels.to(self.device)

    def loss(self, inputs: Sequence[str], tactics: Sequence[str]) -> torch.Tensor:
        """Mean cross-entropy per target byte over the batch."""
        enc = self.encode(inputs, self.max_input_tokens)
        return self.model(**enc, labels=self._labels(tactics)).loss

    @torch.no_grad()
    def tactic_logprobs(self, inputs: Sequence[str], tactics: Sequence[str]) -> list[float]:
        """log P(tactic | input), summed over the tactic's bytes and </s>."""
        enc = self.encode(inputs, self.max_input_tokens)
        labels = self._labels(tactics)
        logits = self.model(**enc, labels=labels).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        mask = labels != -100
        picked = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return (picked * mask).sum(-1).tolist()

    @torch.no_grad()
    def score_candidates(self, inputs: Sequence[str], candidates: Sequence[Sequence[str]],
                         chunk: int = 64) -> list[list[float]]:
        """log P(tactic | input) of each input's candidate tactics, as `tactic_logprobs` would
        give them, with each input encoded once however many candidates it has."""
        out: list[list[float]] = []
        for text, cands in zip(inputs, candidates):
            enc = self.encode([text], self.max_input_tokens)
            hidden = self.model.get_encoder()(**enc).last_hidden_state
            scores: list[float] = []
            for lo in range(0, len(cands), chunk):
                part = list(cands[lo: lo + chunk])
                labels = self._labels(part)
                logits = self.model(encoder_outputs=(hidden.expand(len(part), -1, -1),),
                                    attention_mask=enc["attention_mask"].expand(len(part), -1),
                                    labels=labels).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
                mask = labels != -100
                picked = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
                scores.extend((picked * mask).sum(-1).tolist())
            out.append(scores)
        return out

    def prefix_ids(self, prefix: str) -> list[int]:
        """The decoder tokens of `prefix` (one per UTF-8 byte)."""
        return self.tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []

    @torch.no_grad()
    def generate(self, inputs: Sequence[str], num_tactics: int | None = None, method: str | None = None,
                 temperature: float | None = None, batch_size: int | None = None, prefix: str = "",
                 states: Sequence[str] | None = None,
                 premises: Sequence[Sequence[str]] | None = None,
                 num_beams: int | None = None) -> list[list[Suggestion]]:
        """Per input, up to `num_tactics` distinct tactics with log-probabilities, best first.
        What a call leaves None is the generator's settings' (`self.settings`, the GenerateConfig
        it was built with): proof search and the service say nothing, a benchmark's EM@n says n.

        Candidates come from `candidates` (beam search or sampling, the tactic pool, and with
        `states` the neighbours' tactics and what `extra_candidates` adds). Each is scored by
        the model's log P(tactic | input), whatever the decoding; with neighbours, by the
        mixture's log((1 - w) P_model + w P_neighbours) (generator/neighbors.py), plus
        `self.premise_bonus` when it names a premise shown. With a candidate ranker
        (`self.ranker`) the ranker orders them instead and the score is its softmax over this
        state's candidates. The best `num_tactics` are kept.

        With a `prefix`, every tactic starts with it: decoding starts from the prefix's bytes
        instead of from nothing, and the score is still that of the whole tactic, prefix
        included, so it compares with unconstrained suggestions.

        `num_beams` (default: the settings', else `num_tactics`) is the beam width, or the
        samples drawn: asking for more tactics than beams returns more of the pool's and the
        neighbours' candidates, which cost one scoring pass, not a wider beam."""
        g = self.settings
        if num_tactics is None:
            num_tactics, num_beams = g.num_tactics, num_beams or g.num_beams
        out: list[list[Suggestion]] = []
        for cands in self.candidates(inputs, num_beams or num_tactics, method or g.method,
                                     g.temperature if temperature is None else temperature,
                                     batch_size or g.batch_size, prefix, states, premises):
            scores = self.ranker.logprobs(cands) if self.ranker is not None else [self.score(c) for c in cands]
            # A candidate the mixture gives no probability (weight 1: the neighbours alone rank, and
            # none of them proposed it) is not a suggestion: search would add -inf along its path.
            scored = sorted((Suggestion(c.tactic, s) for c, s in zip(cands, scores) if s > -math.inf),
                            key=lambda s: -s.logprob)
            if self.reprover_layout:
                scored = clean_marked(scored)
            out.append(scored[:num_tactics])
        return out

    def score(self, c: Candidate) -> float:
        """The hand-set score of one candidate: the model's log-probability, mixed with the
        neighbours' vote when they were consulted, plus the premise bonus."""
        s = c.model_logprob
        if c.neighbour_prob is not None:
            s = self.neighbors.mix(s, c.neighbour_prob)
        if self.premise_bonus and c.premise_rank >= 0:
            s += self.premise_bonus
        return s

    @torch.no_grad()
    def candidates(self, inputs: Sequence[str], num_beams: int = 8, method: str = "beam",
                   temperature: float = 1.0, batch_size: int = 16, prefix: str = "",
                   states: Sequence[str] | None = None,
                   premises: Sequence[Sequence[str]] | None = None) -> list[list[Candidate]]:
        """Per input, every distinct candidate tactic with the evidence for it, unordered.

        Beam search (or sampling) writes `num_beams` per input; the model's tactic pool (those that
        start with `prefix`) joins them. With `states` (the raw proof state of each input) and
        tactic neighbours loaded, the neighbours' tactics join too, with their vote. With
        `premises` (the full names shown in each input, best first) and `self.extra_candidates`
        set, what it makes of the neighbours and those premises joins them. Each candidate's model log-probability is computed once
        with the input encoded once (`score_candidates`). Empty tactics are dropped."""
        if method not in ("beam", "sampling"):
            raise ValueError(f"generation method must be beam or sampling, not {method!r}")
        if states is not None and len(states) != len(inputs):
            raise ValueError(f"{len(inputs)} inputs but {len(states)} states")
        forced = self.prefix_ids(prefix)
        if len(forced) > self.input_cfg.max_target_bytes:
            raise ValueError(f"prefix of {len(forced)} bytes is longer than the tactics this model "
                             f"writes ({self.input_cfg.max_target_bytes} bytes)")
        was_training = self.model.training
        self.model.eval()
        pool_rank = {t: i for i, t in enumerate(self.pool)}
        out: list[list[Candidate]] = []
        for lo in range(0, len(inputs), batch_size):
            chunk = list(inputs[lo: lo + batch_size])
            enc = self.encode(chunk, self.max_input_tokens)
            kwargs = dict(max_new_tokens=self.input_cfg.max_target_bytes + 1 - len(forced),
                          num_return_sequences=num_beams, suppress_tokens=self._sentinels)
            if forced:
                start = self.model.config.decoder_start_token_id
                kwargs["decoder_input_ids"] = torch.tensor([[start, *forced]] * len(chunk), device=self.device)
            if method == "beam" and self.reprover_layout:
                # ReProver's beam search (prover/tactic_generator.py): its length penalty 0.0 keeps
                # the hypotheses of the best summed log-probability; decoder max_length 512.
                kwargs.update(num_beams=num_beams, do_sample=False, early_stopping=False, length_penalty=0.0,
                              max_new_tokens=self.input_cfg.max_target_bytes - 1 - len(forced))
            elif method == "beam":
                kwargs.update(num_beams=num_beams, do_sample=False, early_stopping=True)
            else:
                kwargs.update(do_sample=True, temperature=temperature, top_k=0, num_beams=1)
            generated = self.model.generate(**enc, **kwargs)
            if forced:
                # The output holds the forced bytes; decode what follows them, so a prefix
                # ending in a space keeps it.
                rest = self.tokenizer.batch_decode(generated[:, 1 + len(forced):], skip_special_tokens=True)
                texts = [prefix + t.rstrip() for t in rest]
            else:
                texts = [t.strip() for t in self.tokenizer.batch_decode(generated, skip_special_tokens=True)]
            pool = [t for t in self.pool if t.startswith(prefix)]
            consulted = self.neighbors is not None and self.mix_neighbors and states is not None
            nearest = ([self.neighbors.nearest_states(s) for s in states[lo: lo + batch_size]]
                       if consulted else [[] for _ in chunk])
            near = [vote([(self.neighbors.tactics[d], score) for d, score in ns], self.neighbors.cfg.temperature)
                    if ns else {} for ns in nearest]
            shown = premises[lo: lo + batch_size] if premises is not None else [() for _ in chunk]
            extra = (self.extra_candidates(self.neighbors, nearest, shown) if self.extra_candidates is not None
                     else [[] for _ in chunk])
            beams = [texts[i * num_beams: (i + 1) * num_beams] for i in range(len(chunk))]
            cands = [list(dict.fromkeys(t for t in beams[i] + pool
                                        + [t for t in [*near[i], *extra[i]] if t.startswith(prefix)] if t.strip()))
                     for i in range(len(chunk))]
            for i, (c, scores) in enumerate(zip(cands, self.score_candidates(chunk, cands))):
                named = [name_pattern(n) for n in dict.fromkeys(shown[i])]
                in_beam, in_extra = set(beams[i]), set(extra[i])
                out.append([Candidate(t, s, near[i].get(t, 0.0) if near[i] else None, t in in_beam,
                                      pool_rank.get(t, -1), t in in_extra,
                                      next((r for r, p in enumerate(named) if p.search(t)), -1))
                            for t, s in zip(c, scores)])
        if was_training:
            self.model.train()
        return out


def clean_marked(suggestions: Sequence[Suggestion]) -> list[Suggestion]:
    """ReProver's cleaning of its generator's outputs (best first in, best first out): `<a>` and
    `</a>` removed, and of the tactics that are then equal, only the best kept."""
    out: dict[str, Suggestion] = {}
    for s in suggestions:
        t = remove_marks(s.tactic)
        if t.strip() and t not in out:
            out[t] = Suggestion(t, s.logprob)
    return list(out.values())


def save_pool(path: str | Path, tactics: Sequence[str]) -> None:
    (Path(path) / TACTIC_POOL).write_text(json.dumps({"tactics": list(tactics)}, ensure_ascii=False))


def frequent_targets(tactics: Sequence[str], n: int) -> list[str]:
    """The `n` most frequent training targets (whitespace-normalized), most frequent first;
    ties keep first-seen order."""
    from collections import Counter
    counts = Counter(normalize_tactic(t) for t in tactics)
    counts.pop("", None)
    return [t for t, _ in counts.most_common(n)]
