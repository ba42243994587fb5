"""Tactic candidates from the nearest training states, mixed into the model's distribution.

Every tactic-level training example (its state before, as lexical tokens, and its tactic) is a
document of a BM25 index. For a query state the `k` nearest training states give a distribution
over their tactics: each neighbour's weight is a softmax of its BM25 score at `temperature`, and a
tactic's probability is the summed weight of the neighbours that used it. The generator mixes it
with its own, as kNN-LM does (Khandelwal et al. 2020):

    P(t | s) = (1 - weight) * P_model(t | s) + weight * P_neighbours(t | s)

so a suggestion's score stays a log-probability and best-first search can add it up along a
path. The neighbours' tactics also join beam search's and the pool's as candidates, which is
where most of the gain comes from: the CPU-budget model ranks a fixed pool of frequent tactics
little better than their frequency, and the tactics of similar states (`ring` for ring goals,
`rw [h]` where `h : a = b` is in context) are a better prior than either.

k, temperature and weight are chosen on leandojo-real/select's tactics alone, by EM@8 of the
mixed ranking over k in {10, 20, 50}, temperature in {1, 3, 10, and the raw scores}, weight in
{0.1, 0.3, 0.5, 0.7, 0.9}, and shipped only when the best beats the shipped setting (k 50,
temperature 3, weight 0.5) beyond the noise, theorems resampled
(benchmarks/generator_neighbors_selection.py; the numbers are in configs/generator/cpu.yaml and
its results file). Issue 52 compared its best with the simplest setting instead, which never
shipped; issue 62 put the shipped setting back. Nothing here is learned; callers pass training theorems only.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from prover.data.corpus import Corpus
from prover.data.theorem import Theorem
from generator.inputs import normalize_tactic
from generator.settings import NeighborsConfig
from retriever.base import top_k
from retriever.baselines.bm25 import PostingScorer
from retriever.baselines.lean_tokens import lean_tokens

log = logging.getLogger(__name__)

NEIGHBORS_DIR = "tactic_neighbors"  # beside config.json in a model folder (optional)
_TACTICS = "tactics.json"
_SETTINGS = "settings.json"
_SOURCES = "theorems.json"  # each training state's theorem (`file::name`), for leaving theorems out
_PREMISES = "premises.json"  # the premises each training tactic names, for instantiation
RECENT_QUERIES = 1024  # neighbour answers kept for a repeated query


class TacticNeighbors:
    """BM25 over training states, each carrying the tactic its proof applied there."""

    def __init__(self, bm25, tactics: list[str], cfg: NeighborsConfig,
                 sources: list[str] | None = None, premises: list[list[str]] | None = None) -> None:
        if cfg.k < 1:
            raise ValueError(f"tactic neighbours need k >= 1, not {cfg.k}")
        if sources is not None and len(sources) != len(tactics):
            raise ValueError(f"{len(sources)} theorem keys for {len(tactics)} training states")
        self.bm25 = bm25
        self.tactics = tactics
        self.sources = sources
        self.premises = premises  # per training state: the premises its tactic names (or None)
        self.cfg = cfg
        self.scorer = PostingScorer(bm25)
        self.hidden: np.ndarray | None = None  # training states left out (their theorem is being proved)
        self._by_source: dict[str, np.ndarray] | None = None  # theorem key -> its states
        # The last queries' answers: a retrieval-augmented generator asks for one state's
        # neighbours twice (its input shows their tactics, its candidates mix them in).
        self._recent: OrderedDict[tuple, list[tuple[int, float]]] = OrderedDict()
        self._lock = threading.Lock()  # a threaded actor may serve several searches at once

    def exclude(self, keys: Iterable[str]) -> int:
        """Leave out every training state of these theorems (`file::name`): a search or an
        evaluation of a theorem must not be handed its own proof. Returns how many states."""
        keys = set(keys)
        if self.sources is None:
            raise ValueError("these tactic neighbours were indexed without their theorems, so "
                             "evaluated theorems cannot be left out: rebuild them with "
                             "`prover generator neighbors --config ...`")
        self.hidden = np.fromiter((s in keys for s in self.sources), dtype=bool, count=len(self.sources))
        with self._lock:
            self._recent.clear()  # answers given before some states were left out
        n = int(self.hidden.sum())
        log.info("tactic neighbours: %d training states of %d evaluated theorems left out", n, len(keys))
        return n

    @classmethod
    def build(cls, theorems: Iterable[Theorem], corpus: Corpus, cfg: NeighborsConfig) -> TacticNeighbors:
        """From every traced tactic of `theorems` whose file `corpus` has (the examples the
        generator trains on)."""
        docs: list[list[str]] = []
        tactics: list[str] = []
        sources: list[str] = []
        premises: list[list[str]] = []
        for thm in theorems:
            if thm.file_path not in corpus.file_index:
                continue
            for tac in thm.traced_tactics:
                tactic = tac.tactic.strip()  # as written: a multi-line tactic keeps its layout
                if tactic:
                    docs.append(lean_tokens(tac.state_before[: cfg.max_query_chars]))
                    tactics.append(tactic)
                    sources.append(f"{thm.file_path}::{thm.full_name}")
                    premises.append(list(dict.fromkeys(p.full_name for p in tac.premises)))
        if not docs:
            raise ValueError("tactic neighbours: the training theorems have no traced tactic")
        import bm25s  # here: scipy is slow to import and configs import this module
        _quiet_bm25s()
        bm25 = bm25s.BM25()
        bm25.index(docs, show_progress=False)
        log.info("tactic neighbours: indexed %d training states", len(docs))
        return cls(bm25, tactics, cfg, sources, premises)

    def save(self, model_dir: str | Path) -> Path:
        path = Path(model_dir) / NEIGHBORS_DIR
        path.mkdir(parents=True, exist_ok=True)
        self.bm25.save(str(path), show_progress=False)
        (path / _TACTICS).write_text(json.dumps(self.tactics, ensure_ascii=False))
        if self.sources is not None:
            (path / _SOURCES).write_text(json.dumps(self.sources, ensure_ascii=False))
        if self.premises is not None:
            (path / _PREMISES).write_text(json.dumps(self.premises, ensure_ascii=False))
        (path / _SETTINGS).write_text(json.dumps(asdict(self.cfg)))
        return path

    @classmethod
    def load(cls, model_dir: str | Path) -> TacticNeighbors | None:
        """The model folder's neighbours, or None when it has none."""
        path = Path(model_dir) / NEIGHBORS_DIR
        if not (path / _SETTINGS).exists():
            return None
        import bm25s
        _quiet_bm25s()
        bm25 = bm25s.BM25.load(str(path), show_progress=False)
        tactics = json.loads((path / _TACTICS).read_text())
        sources = json.loads((path / _SOURCES).read_text()) if (path / _SOURCES).exists() else None
        premises = json.loads((path / _PREMISES).read_text()) if (path / _PREMISES).exists() else None
        return cls(bm25, tactics, NeighborsConfig(**json.loads((path / _SETTINGS).read_text())),
                   sources, premises)

    def nearest(self, state: str, k: int | None = None) -> list[tuple[str, float]]:
        """(tactic, BM25 score) of the k (default: the configured k) training states nearest
        to `state`, nearest first, ties to the earlier example; only states sharing a token."""
        return [(self.tactics[d], score) for d, score in self.nearest_states(state, k)]

    def nearest_states(self, state: str, k: int | None = None,
                       leave_out: str | None = None) -> list[tuple[int, float]]:
        """(training state index, BM25 score) of the k nearest, as `nearest`; `leave_out`: a
        theorem key (`file::name`) whose states are not neighbours (a training example's own)."""
        key = (state, k or self.cfg.k, leave_out)
        with self._lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return list(self._recent[key])
        found = self._nearest_states(state, k or self.cfg.k, leave_out)
        with self._lock:
            self._recent[key] = found
            if len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return list(found)

    def _nearest_states(self, state: str, k: int, leave_out: str | None) -> list[tuple[int, float]]:
        vocab = self.bm25.vocab_dict
        toks = [t for t in lean_tokens(state[: self.cfg.max_query_chars]) if t in vocab]
        if not toks:
            return []
        sim = self.scorer(toks)
        if self.hidden is not None:
            sim = np.where(self.hidden, 0.0, sim)
        if leave_out is not None:
            sim[self._states_of(leave_out)] = 0.0
        return [(int(d), float(sim[d])) for d in top_k(sim, k) if sim[d] > 0]

    def _states_of(self, key: str) -> np.ndarray:
        if self.sources is None:
            raise ValueError("these tactic neighbours were indexed without their theorems")
        if self._by_source is None:
            groups: dict[str, list[int]] = {}
            for i, src in enumerate(self.sources):
                groups.setdefault(src, []).append(i)
            self._by_source = {src: np.asarray(ix, dtype=np.int64) for src, ix in groups.items()}
        return self._by_source.get(key, np.zeros(0, dtype=np.int64))

    def distribution(self, state: str, leave_out: str | None = None) -> dict[str, float]:
        """P_neighbours(t | state) over the tactics of the k nearest training states (summing
        to 1), most probable first; empty when no training state shares a token with it."""
        near = self.nearest_states(state, leave_out=leave_out)
        return vote([(self.tactics[d], score) for d, score in near], self.cfg.temperature)

    def top_tactics(self, state: str, n: int, leave_out: str | None = None) -> list[str]:
        """The `n` most probable neighbour tactics of `state`: what a retrieval-augmented
        input shows (generator/inputs.py)."""
        return list(self.distribution(state, leave_out))[:n] if n > 0 else []

    def mix(self, model_logprob: float, p_neighbours: float) -> float:
        """The mixture's log-probability at the configured weight (`mix`)."""
        return mix(model_logprob, p_neighbours, self.cfg.weight)


class FrozenNeighbors:
    """The answers of a `TacticNeighbors` for a fixed set of states, computed ahead of time: what
    a machine without the BM25 index (a lent GPU, benchmarks/device_generator.py) mixes in. It
    answers `nearest_states` for the states it holds (whitespace-normalized) and nothing for any
    other, and counts those misses, so a run can say how often it had no neighbours to ask."""

    premises = None  # no instantiation (generator/tried/instantiate.py) from frozen answers
    hidden = None

    def __init__(self, tactics: list[str], nearest: dict[str, list[tuple[int, float]]],
                 cfg: NeighborsConfig) -> None:
        self.tactics = tactics
        self.nearest = nearest
        self.cfg = cfg
        self.misses = 0
        self._lock = threading.Lock()

    @classmethod
    def freeze(cls, live: TacticNeighbors, states: Iterable[str]) -> FrozenNeighbors:
        """`live`'s k nearest training states of each state (its left-out theorems stay out),
        with only the tactics they name kept."""
        from prover.env.base import normalize_ws
        tactics: list[str] = []
        ids: dict[int, int] = {}
        nearest: dict[str, list[tuple[int, float]]] = {}
        for state in states:
            key = normalize_ws(state)
            if key in nearest:
                continue
            near = live.nearest_states(state)
            nearest[key] = [(ids.setdefault(d, len(ids)), round(score, 4)) for d, score in near]
        tactics = [""] * len(ids)
        for d, i in ids.items():
            tactics[i] = live.tactics[d]
        return cls(tactics, nearest, live.cfg)

    def to_json(self) -> dict:
        return {"settings": asdict(self.cfg), "tactics": self.tactics,
                "nearest": [[state, [[d, s] for d, s in near]] for state, near in self.nearest.items()]}

    @classmethod
    def from_json(cls, obj: dict) -> FrozenNeighbors:
        return cls(obj["tactics"], {state: [(int(d), float(s)) for d, s in near] for state, near in obj["nearest"]},
                   NeighborsConfig(**obj["settings"]))

    def exclude(self, keys: Iterable[str]) -> int:
        return 0  # left out when frozen

    def nearest_states(self, state: str, k: int | None = None,
                       leave_out: str | None = None) -> list[tuple[int, float]]:
        from prover.env.base import normalize_ws
        found = self.nearest.get(normalize_ws(state))
        if found is None:
            with self._lock:
                self.misses += 1
            return []
        return list(found[: k or self.cfg.k])

    def distribution(self, state: str, leave_out: str | None = None) -> dict[str, float]:
        return vote([(self.tactics[d], score) for d, score in self.nearest_states(state)], self.cfg.temperature)

    def top_tactics(self, state: str, n: int, leave_out: str | None = None) -> list[str]:
        return list(self.distribution(state))[:n] if n > 0 else []

    def mix(self, model_logprob: float, p_neighbours: float) -> float:
        return mix(model_logprob, p_neighbours, self.cfg.weight)


def mix(model_logprob: float, p_neighbours: float, weight: float) -> float:
    """log((1 - weight) P_model + weight P_neighbours), from the model's log-probability."""
    model_part = np.log1p(-weight) + model_logprob if weight < 1.0 else -np.inf
    if p_neighbours <= 0.0 or weight == 0.0:
        return float(model_part)
    return float(np.logaddexp(model_part, np.log(weight) + np.log(p_neighbours)))


def vote(near: list[tuple[str, float]], temperature: float | None) -> dict[str, float]:
    """Each tactic's share of the neighbours' weight, most probable first (ties keep the nearer
    first): a softmax of the BM25 scores at `temperature`, or the raw scores when it is None
    (an option the selection tried). Tactics that differ only in whitespace are one tactic,
    shown as first written."""
    if not near:
        return {}
    s = np.asarray([score for _, score in near], dtype=np.float64)
    w = np.exp((s - s.max()) / temperature) if temperature else s
    shown: dict[str, str] = {}
    out: dict[str, float] = {}
    for (tactic, _), x in zip(near, w / w.sum()):
        text = shown.setdefault(normalize_tactic(tactic), tactic)
        out[text] = out.get(text, 0.0) + float(x)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _quiet_bm25s() -> None:
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("bm25s").setLevel(logging.WARNING)


def training_neighbors(cfg) -> TacticNeighbors:
    """`build_for_training(cfg)`, built once per run: kept in `<run_dir>/data/` under a key of
    everything it depends on, so the data builder and the saved model share one index."""
    import hashlib

    from omegaconf import OmegaConf
    key = {"data": OmegaConf.to_container(cfg.data, resolve=True), "split": cfg.train_split,
           "neighbors": OmegaConf.to_container(cfg.neighbors, resolve=True),
           "max_target_bytes": cfg.input.max_target_bytes}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(cfg.run_dir) / "data" / f"neighbors-{digest}"
    cached = TacticNeighbors.load(folder)
    if cached is not None:
        return cached
    nb = build_for_training(cfg)
    nb.save(folder)
    return nb


def build_for_training(cfg) -> TacticNeighbors:
    """The neighbours of a generator training config: its training split's examples (split
    into tactic-level steps under `data.granularity=tactic`, as training splits them), with
    `cfg.neighbors`'s settings."""
    from omegaconf import OmegaConf

    from prover.data.dataset import Dataset
    from prover.data.tactic_steps import tactic_level
    settings = NeighborsConfig(**OmegaConf.to_container(cfg.neighbors, resolve=True))
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    theorems = ds.theorems(cfg.train_split)
    if OmegaConf.select(cfg, "data.granularity", default="statement") == "tactic":
        theorems, _ = tactic_level(theorems, cfg.input.max_target_bytes)
    return TacticNeighbors.build(theorems, ds.corpus(), settings)
