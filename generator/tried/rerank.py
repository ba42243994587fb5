"""A learned candidate ranker: LambdaMART (LightGBM) over the evidence for each candidate tactic.

The hand-set score (`TacticGenerator.score`) mixes the model's log-probability with the
neighbours' vote at one fixed weight, and adds one fixed bonus when a candidate names a premise
shown. Which evidence to trust depends on the candidate: a neighbour's `rw [X]` filled with the
retriever's first premise is worth more than one filled with its third; beam search is better
at short tactics than long ones; `simp` from the pool is cheap for the model to like. A ranker
learns those trade-offs from states whose recorded tactic is known, with the candidates the
generator itself proposes for them, so it orders exactly what it will be asked to order.

It is fitted on states disjoint by theorem from any it is reported on (benchmarks/
candidate_ranker.py) and saved beside the model (`candidate_ranker.txt` and `.json`);
`TacticGenerator.load` picks it up. Its score for a state's candidates is a softmax over them,
so a suggestion's score stays a log-probability for best-first search.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.candidate import Candidate
from generator.inputs import normalize_tactic
from prover.data.errors import UserInputError

# Beside a generator's config.json: a learned candidate ranker (none is shipped).
RANKER_MODEL = "candidate_ranker.txt"


def load_ranker(gen: Any, model_dir: str | Path) -> Any:
    """`gen` (a TacticGenerator) ordering its candidates by the ranker saved in `model_dir`, if
    that folder holds one (TacticGenerator.save_pretrained saves a ranker it was given)."""
    gen.ranker = CandidateRanker.load(model_dir)
    return gen

RANKER_SETTINGS = "candidate_ranker.json"

# The first word of a tactic, as a category: which tactics beam search, the pool or the
# neighbours get right differs by kind. Anything else is "other".
HEADS = ("rw", "simp", "simp_all", "simpa", "exact", "apply", "refine", "intro", "intros", "rintro",
         "have", "obtain", "rcases", "cases", "induction", "constructor", "ext", "congr", "rfl",
         "use", "norm_num", "ring", "linarith", "nlinarith", "omega", "positivity", "field_simp",
         "aesop", "unfold", "show", "calc", "by_cases", "split_ifs", "refine'", "convert", "filter_upwards",
         "gcongr", "specialize", "subst", "contradiction", "exact_mod_cast", "push_cast", "tauto", "decide")
_HEAD_INDEX = {h: i for i, h in enumerate(HEADS)}

FEATURES = ("model_logprob", "model_logprob_per_byte", "model_gap", "model_rank", "neighbour_logprob",
            "neighbour_rank", "mixture", "mixture_rank", "in_beam", "pool_rank", "instantiated",
            "premise_rank", "n_bytes", "head")
_NONE = -1.0  # a rank or log-probability that does not apply (LightGBM splits it off)


def head(tactic: str) -> int:
    word = tactic.split(None, 1)[0].rstrip("!?") if tactic.strip() else ""
    return _HEAD_INDEX.get(word, len(HEADS))


def _ranks(values: np.ndarray) -> np.ndarray:
    """0 for the largest, ties broken by position."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values), dtype=np.float64)
    out[order] = np.arange(len(values))
    return out


def features(cands: Sequence[Candidate], mix_weight: float) -> np.ndarray:
    """One row of `FEATURES` per candidate; ranks are within this state's candidates."""
    n = len(cands)
    lp = np.asarray([c.model_logprob for c in cands], dtype=np.float64)
    nb = np.asarray([c.neighbour_prob or 0.0 for c in cands], dtype=np.float64)
    consulted = any(c.neighbour_prob is not None for c in cands)
    model_part = math.log1p(-mix_weight) + lp if consulted else lp
    mixture = (np.logaddexp(model_part, np.log(mix_weight) + np.log(np.maximum(nb, 1e-300)))
               if consulted and mix_weight > 0 else model_part)
    n_bytes = np.asarray([len(c.tactic.encode("utf-8")) for c in cands], dtype=np.float64)
    nb_rank = np.where(nb > 0, _ranks(nb), _NONE)
    x = np.empty((n, len(FEATURES)), dtype=np.float64)
    x[:, 0] = lp
    x[:, 1] = lp / (n_bytes + 1)
    x[:, 2] = lp - (lp.max() if n else 0.0)
    x[:, 3] = _ranks(lp)
    x[:, 4] = np.where(nb > 0, np.log(np.maximum(nb, 1e-300)), _NONE * 100)
    x[:, 5] = nb_rank
    x[:, 6] = mixture
    x[:, 7] = _ranks(mixture)
    x[:, 8] = [c.in_beam for c in cands]
    x[:, 9] = [c.pool_rank for c in cands]
    x[:, 10] = [c.instantiated for c in cands]
    x[:, 11] = [c.premise_rank for c in cands]
    x[:, 12] = n_bytes
    x[:, 13] = [head(c.tactic) for c in cands]
    return x


@dataclass(frozen=True)
class RankerConfig:
    num_trees: int = 200
    learning_rate: float = 0.05
    num_leaves: int = 15
    min_data_in_leaf: int = 50
    truncation: int = 8  # LambdaMART's NDCG cut: what EM@8 reads
    seed: int = 0


class CandidateRanker:
    def __init__(self, booster, mix_weight: float, cfg: RankerConfig, fitted_on: dict | None = None) -> None:
        self.booster = booster
        self.mix_weight = mix_weight  # the neighbours' weight in the `mixture` feature
        self.cfg = cfg
        self.fitted_on = fitted_on or {}

    def scores(self, cands: Sequence[Candidate]) -> np.ndarray:
        if not cands:
            return np.zeros(0)
        return self.booster.predict(features(cands, self.mix_weight), num_threads=1)

    def logprobs(self, cands: Sequence[Candidate]) -> list[float]:
        """The ranker's softmax over this state's candidates, as log-probabilities."""
        s = self.scores(cands)
        return (s - np.logaddexp.reduce(s)).tolist() if len(s) else []

    @classmethod
    def fit(cls, groups: Sequence[Sequence[Candidate]], golds: Sequence[str], mix_weight: float,
            cfg: RankerConfig = RankerConfig(), fitted_on: dict | None = None) -> CandidateRanker:
        """Fitted on each state's candidates labelled by its recorded tactic (whitespace-
        normalized). States whose tactic is not among their candidates carry no ranking signal
        and are left out; a ValueError when none is left."""
        import lightgbm as lgb
        xs, ys, sizes = [], [], []
        for cands, gold in zip(groups, golds):
            g = normalize_tactic(gold)
            y = [int(normalize_tactic(c.tactic) == g) for c in cands]
            if not any(y):
                continue
            xs.append(features(cands, mix_weight))
            ys.extend(y)
            sizes.append(len(cands))
        if not sizes:
            raise ValueError("no state has its recorded tactic among its candidates: nothing to fit")
        params = {"objective": "lambdarank", "learning_rate": cfg.learning_rate, "num_leaves": cfg.num_leaves,
                  "min_data_in_leaf": cfg.min_data_in_leaf, "lambdarank_truncation_level": cfg.truncation,
                  "eval_at": [cfg.truncation], "seed": cfg.seed, "deterministic": True, "num_threads": 1,
                  "verbosity": -1}
        data = lgb.Dataset(np.concatenate(xs), label=np.asarray(ys), group=sizes,
                           feature_name=list(FEATURES), categorical_feature=["head"], free_raw_data=False)
        booster = lgb.train(params, data, num_boost_round=cfg.num_trees)
        info = dict(fitted_on or {}, states=len(sizes), candidates=int(sum(sizes)))
        return cls(booster, mix_weight, cfg, info)

    def save(self, model_dir: str | Path) -> None:
        path = Path(model_dir)
        self.booster.save_model(str(path / RANKER_MODEL))
        (path / RANKER_SETTINGS).write_text(json.dumps(
            {"features": list(FEATURES), "mix_weight": self.mix_weight, "config": asdict(self.cfg),
             "fitted_on": self.fitted_on}, indent=1))

    @classmethod
    def load(cls, model_dir: str | Path) -> CandidateRanker | None:
        """The ranker saved in a model folder; None when it has none. A ranker saved with
        other features is a ValueError, not a silent misreading."""
        path = Path(model_dir)
        if not (path / RANKER_MODEL).exists():
            return None
        try:
            import lightgbm as lgb
        except ImportError:  # a dev dependency: only a folder with a ranker needs it
            raise UserInputError(f"the model in {path} has a candidate ranker ({RANKER_MODEL}), which needs "
                                 "LightGBM: pip install lightgbm") from None
        settings = json.loads((path / RANKER_SETTINGS).read_text())
        if tuple(settings["features"]) != FEATURES:
            raise ValueError(f"the candidate ranker in {path} reads features {settings['features']}, "
                             f"this code writes {list(FEATURES)}: refit it")
        return cls(lgb.Booster(model_file=str(path / RANKER_MODEL)), settings["mix_weight"],
                   RankerConfig(**settings["config"]), settings.get("fitted_on"))
