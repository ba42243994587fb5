"""Named retrievers, so configs and the benchmark can say `bm25` or `cfr+car` and get one.

`build_retriever(name, corpus, settings)` takes the retriever choice (a RetrieverConfig),
and where it matters the dataset evaluated (`data=`: the priors count its training proofs and
leave its evaluated split out) or the training config of the run (`training=`, when a training
stage builds its first stage). Lexical retrievers read `settings.bm25`; trained ones read the
training config named by `settings.models`, so evaluation always loads a model with the sizes
and lengths it was trained with.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.config import DataConfig
from prover.data.corpus import Corpus
from prover.data.errors import UserInputError
from retriever.base import Retriever
from retriever.baselines.bm25 import BM25Retriever
from retriever.settings import RetrieverConfig


@dataclass(frozen=True)
class Scope:
    """What a factory reads: the retriever choice, the dataset whose training proofs the priors
    count (`root`) and the split evaluated on it (left out of them), and the training config of
    the run (None: the one `settings.models` names)."""

    settings: RetrieverConfig
    root: str | None = None
    split: str | None = None
    on_error: str = "raise"
    training: Any = None


def scope_of(cfg: Any = None, data: DataConfig | None = None, training: Any = None) -> Scope:
    """The Scope of `cfg`: a RetrieverConfig (typed, or a config's `retriever` section; None: the
    defaults) with `data` and `training`, as the commands pass them. A whole command config
    (a benchmark's, a test's) is still read as its `retriever` and `data` sections (a retriever
    training config is the run's training config itself)."""
    if isinstance(cfg, Scope):
        return cfg
    if OmegaConf.is_config(cfg) and issubclass(OmegaConf.get_type(cfg) or object, RetrieverConfig):
        cfg = OmegaConf.to_object(cfg)
    if cfg is not None and not isinstance(cfg, RetrieverConfig):
        node = cfg if OmegaConf.is_config(cfg) else OmegaConf.structured(cfg)
        section = OmegaConf.select(node, "retriever")
        plain = OmegaConf.to_container(section, resolve=True) if section is not None else {}
        merged = OmegaConf.merge(OmegaConf.structured(RetrieverConfig),
                                 {k: v for k, v in plain.items() if v is not None})
        data_node = OmegaConf.select(node, "data")
        data = OmegaConf.to_container(data_node, resolve=True) if data_node is not None else None
        training = node if OmegaConf.select(node, "cfr") is not None else training
        cfg = OmegaConf.to_object(merged)
    settings = cfg or RetrieverConfig()
    get = (lambda key, default=None: (data.get(key, default) if isinstance(data, dict)
                                      else getattr(data, key, default)) if data is not None else default)
    return Scope(settings, settings.training_data or get("root") or settings.corpus, get("split"),
                 get("on_error", "raise"), training)


def _bm25(corpus: Corpus, s: Scope) -> Retriever:
    return BM25Retriever(corpus, replace(s.settings.bm25, tokenizer="lean"))


def _bm25_plain(corpus: Corpus, s: Scope) -> Retriever:
    # The sanity anchor: name + code, whitespace/bracket tokens.
    return BM25Retriever(corpus, replace(s.settings.bm25, tokenizer="plain", fields=["name", "code"]))


def _structure(corpus: Corpus, s: Scope) -> Retriever:
    from retriever.structure.retriever import StructureRetriever
    return StructureRetriever(corpus, s.settings.bm25)


def _informal(corpus: Corpus, s: Scope) -> Retriever:
    # Plain English, LaTeX, theorem names, Lean-like terms (issue 51; retriever/informal/).
    from retriever.informal.retriever import InformalRetriever, resolve_docs
    cfg = s.settings.informal
    # Docstrings joined by name: informal.docs, else the real sources beside the corpus folder.
    docs = resolve_docs(s.settings.corpus, cfg.docs, s.settings.corpus_cache)
    return InformalRetriever(corpus, replace(cfg, docs=docs))


def _locality(corpus: Corpus, s: Scope) -> Retriever:
    from retriever.baselines.priors import LocalityRetriever
    return LocalityRetriever(corpus)


def _random(corpus: Corpus, s: Scope) -> Retriever:
    from retriever.baselines.priors import RandomRetriever
    return RandomRetriever(corpus, int(s.settings.seed))


def usage_split(cfg: Any) -> str:
    """The training split whose proofs `usage` counts: `retriever.usage_split`, else the
    evaluated split's strategy's train split (novel_premises/test -> novel_premises/train),
    else random/train (leandojo-real has no train split; its theorems were removed from
    mathlib-src's train splits)."""
    from prover.data.dataset import Dataset
    s = scope_of(cfg)
    if s.settings.usage_split:
        return str(s.settings.usage_split)
    own = f"{s.split.split('/')[0]}/train" if s.split else None
    return own if own and Dataset(s.root).has_split(own) else "random/train"


def training_theorems(cfg: Any, who: str) -> list:
    """The proofs `who` (usage, neighbors) may count: those of `usage_split(cfg)`, less any
    theorem that is also in the evaluated split (same file and name, as when a random/train
    is counted for a novel_premises/test). The usage split must differ from the evaluated one."""
    from prover.data.dataset import Dataset
    s = scope_of(cfg)
    if s.root is None:
        raise UserInputError(f"retriever {who} counts a dataset's training proofs: it needs "
                             f"data.root (the dataset folder) in the config")
    train = usage_split(s)
    if train == s.split:
        raise UserInputError(f"retriever.usage_split {train} is the evaluated split "
                             f"(data.split): {who} must count training proofs only")
    ds = Dataset(s.root, on_error=s.on_error)
    if not ds.has_split(train):
        raise UserInputError(f"retriever {who}: no split {train} under {s.root} "
                             f"(set retriever.usage_split to a training split)")
    theorems = ds.theorems(train)
    held_out: set[tuple[str, str]] = set()
    if s.split and ds.has_split(s.split):
        held_out = {(t.file_path, t.full_name) for t in ds.theorems(s.split)}
    # `exclude`: `file::name` of every theorem a proof search will attempt, whatever its
    # source (a split file, a list, MiniF2F): a search must not count its own proofs.
    for key in s.settings.exclude:
        file_path, _, name = str(key).partition("::")
        held_out.add((file_path, name))
    if held_out:
        theorems = [t for t in theorems if (t.file_path, t.full_name) not in held_out]
    return theorems


def _usage_from(corpus: Corpus, s: Scope, theorems: list, locality: Retriever | None = None) -> Retriever:
    from retriever.baselines.priors import UsageRetriever
    return UsageRetriever(corpus, theorems, locality)


def _neighbors_from(tactic_level: bool) -> Callable[..., Retriever]:
    """`neighbors` over whole proofs, or (`neighbors-tactic`) over the tactic-level pseudo steps
    of prover/data/tactic_steps.py: one document per top-level tactic and per `have`/`show`/
    `suffices`/`calc` goal the source states, each with the premises of its own text."""
    def build(corpus: Corpus, s: Scope, theorems: list, locality: Retriever | None = None) -> Retriever:
        from retriever.baselines.neighbors import NeighborUsageRetriever
        if tactic_level:
            from prover.data.tactic_steps import tactic_level as split_tactics
            theorems, _ = split_tactics(theorems, max_target_bytes=10 ** 9)  # nothing is generated: keep all
        r = NeighborUsageRetriever(corpus, theorems, int(s.settings.neighbors_k), locality=locality)
        if tactic_level:
            r.name = r.name.replace("neighbors", "neighbors-tactic", 1)
        return r
    return build


# The retrievers built from the training split's proofs, by what they make of them.
_FROM_TRAINING: dict[str, Callable[..., Retriever]] = {
    "usage": _usage_from,
    "neighbors": _neighbors_from(False),
    "neighbors-tactic": _neighbors_from(True),
}


def _from_training(name: str) -> Callable[[Corpus, Scope], Retriever]:
    def build(corpus: Corpus, s: Scope) -> Retriever:
        return _FROM_TRAINING[name](corpus, s, training_theorems(s, name))
    return build


def register_from_training(name: str, build: Callable[..., Retriever]) -> Callable[[Corpus, Scope], Retriever]:
    """Register `build` (corpus, scope, training theorems, shared locality) as a retriever made of
    the training split's proofs, so a fusion's members share one loaded split; the factory that
    builds it alone."""
    _FROM_TRAINING[name] = build
    return _from_training(name)


def build_members(names: Sequence[str], corpus: Corpus, cfg: Any) -> list[Retriever]:
    """The registered retrievers `names`, for a fusion: the members that count training proofs
    share one loaded split (parsing it takes seconds per member), and every member that orders
    by locality shares one locality order (its per-file orders are computed once)."""
    from retriever.baselines.priors import LocalityRetriever
    s = scope_of(cfg)
    theorems = None
    locality = LocalityRetriever(corpus) if any(m in _FROM_TRAINING or m == "locality" for m in names) else None
    out = []
    for m in names:
        _load_tried(m)
        if m in _FROM_TRAINING:
            if theorems is None:
                theorems = training_theorems(s, m)
            out.append(_FROM_TRAINING[m](corpus, s, theorems, locality))
        elif m == "locality":
            out.append(locality)
        else:
            out.append(REGISTRY[m](corpus, s))
    return out


def training_config(cfg: Any) -> Any:
    """The retriever training config whose run folder holds the trained models, with the
    choice's `run_dir`, `device` and `model_overrides` applied to it."""
    s = scope_of(cfg)
    if s.training is not None:
        return s.training  # already a training config (train-car building its first stage)
    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    r = s.settings
    overrides = [f"run_dir={r.run_dir}"] if r.run_dir else []
    if r.device:
        overrides.append(f"device={r.device}")
    return load_config(RetrieverTrainConfig, r.models, overrides + list(r.model_overrides))


@dataclass(frozen=True)
class _Stage:
    """One training command of a retriever run and the folder it leaves behind."""

    what: str  # what a retriever needs from it, e.g. "a trained CFR"
    path: Path  # the stage's output: present means the stage ran
    action: str  # `prover retriever <action>`
    args: str = ""  # what the action takes besides --config, e.g. cfr.similarity=conventional
    deps: tuple[_Stage, ...] = ()  # stages whose output this one starts from
    marker: str = "config.json"  # the file a finished stage leaves in `path`

    def done(self) -> bool:
        return (self.path / self.marker).exists()


_CFR_STAGES = {"cfr": ("a trained CFR", "fine"),
               "cfr-conventional": ("a trained CFR (conventional)", "conventional")}


def _similarity_arg(tc: Any, similarity: str) -> str:
    """What train-cfr (or index) needs besides the config to train this similarity: nothing
    when the config's cfr.similarity is it already."""
    return "" if tc.cfr.similarity == similarity else f"cfr.similarity={similarity}"


def _stages(tc: Any, index_file: str) -> dict[str, _Stage]:
    """The stages of the run folder of training config `tc` (pretrain, then train-cfr, then
    index and train-car; train-reprover alone), named as in `_NEEDS`."""
    from retriever.models.car import car_run_dir
    run = Path(tc.run_dir)
    pretrain = _Stage("a pre-trained encoder", run / "pretrain" / "model", "pretrain")
    out = {"pretrain": pretrain}

    def starts_from(init: str | None) -> tuple[_Stage, ...]:
        # An `init` that is no stage's output is the user's own folder: no stage makes it.
        path = Path(init) if init else pretrain.path
        return tuple(s for s in out.values() if s.path == path)

    for name, (what, similarity) in _CFR_STAGES.items():
        args = _similarity_arg(tc, similarity)
        cfr = out[name] = _Stage(what, run / name / "model", "train-cfr", args, starts_from(tc.cfr.init))
        out[f"{name}/index"] = _Stage(f"a premise index of {name}", run / name / "index", "index",
                                      args, (cfr,), index_file)
    for name in _CFR_STAGES:
        out[f"{name}+car"] = _Stage(f"a CAR trained over {name}", car_run_dir(run, name) / "model",
                                    "train-car", "" if name == "cfr" else f"--first-stage {name}",
                                    starts_from(tc.car.init) + (out[name],))
    out["reprover"] = _Stage("a trained ReProver-style retriever", run / "reprover" / "model",
                             "train-reprover")
    out["fusion"] = _Stage("a fitted fusion ranker", run / "fusion", "train-fusion",
                           deps=tuple(out[n] for m in tc.fusion.members for n in _needs(m)),
                           marker="model.json")
    return out


# What each trained retriever loads (the tried ones add theirs when registered).
_NEEDS = {"cfr": ["cfr"], "cfr-conventional": ["cfr-conventional"], "hybrid": ["cfr"],
          "cfr+car": ["cfr", "cfr+car"],
          "cfr-conventional+car": ["cfr-conventional", "cfr-conventional+car"],
          "reprover": ["reprover"], "fusion": ["fusion"]}


def _needs(name: str) -> list[str]:
    _load_tried(name)
    return list(_NEEDS.get(name, []))


def member_models(tc: Any, members: Sequence[str]) -> dict[str, str]:
    """A content hash of each trained model folder that `members` load (training config `tc`):
    what a fitted fusion depends on beyond its config, so a retrained CFR is not fused with
    the weights fitted to the one before."""
    import hashlib
    stages = _stages(tc, "")
    out: dict[str, str] = {}
    for name in dict.fromkeys(n for m in members for n in _needs(m)):
        h = hashlib.sha1()
        path = stages[name].path
        for f in sorted(path.iterdir()) if path.is_dir() else []:
            if f.is_file():
                h.update(f.name.encode())
                h.update(hashlib.sha1(f.read_bytes()).digest())
        out[name] = h.hexdigest()[:16]
    return out


def missing_training(name: str, cfg: Any, index: bool = False) -> str | None:
    """None when retriever `name` has every model it loads; else one line naming what it needs,
    the first missing output in pipeline order, and the commands that make it.

    A stage whose output exists is not asked for again, even if what it started from is gone.
    `index`: the CFR's saved FAISS index is needed too (the service; eval encodes without one).
    """
    needs = _needs(name)
    if not needs:
        return None  # lexical: nothing to train
    s = scope_of(cfg)
    tc = training_config(s)
    if name == "reprover" and tc.reprover.checkpoint:
        return None  # the user named a checkpoint (a folder or a hub id): loading checks it
    index_file = ""
    if index:
        # Imported only here: importing faiss costs a second.
        from retriever.models.faiss_index import INDEX_FILE
        index_file = INDEX_FILE
        needs += [f"{n}/index" for n in needs if n in _CFR_STAGES]
    stages = _stages(tc, index_file)
    targets = [stages[n] for n in needs]
    plan: list[_Stage] = []

    def visit(stage: _Stage) -> None:  # what a missing stage starts from, first
        if stage.done() or stage in plan:
            return
        for dep in stage.deps:
            visit(dep)
        plan.append(stage)

    for target in targets:
        visit(target)
    if not plan:
        return None
    needed = next(t for t in targets if not t.done())
    models, run_dir = s.settings.models, s.settings.run_dir
    # Options before --config, key=value overrides after it, as the CLI's help shows them.
    flag = plan[0].args if plan[0].args.startswith("--") else ""
    first = " ".join(filter(None, [f"prover retriever {plan[0].action}", flag,
                                   f"--config {models or '<the training YAML>'}",
                                   f"run_dir={run_dir}" if run_dir else "",
                                   "" if flag else plan[0].args]))
    rest = [" ".join(filter(None, [s.action, s.args])) for s in plan[1:]]
    then = "" if not rest else ", then " + (rest[0] if len(rest) == 1
                                            else f"{', '.join(rest[:-1])} and {rest[-1]}")
    return f"retriever {name} needs {needed.what}: {plan[0].path} is missing; run: {first}{then}"


def require_trained(name: str, cfg: Any, index: bool = False, hint: str | None = None) -> None:
    """Raise a one-line UserInputError when retriever `name` lacks a trained stage; `hint`
    (default: the config keys that point at another run) ends the line in parentheses."""
    message = missing_training(name, cfg, index)
    if message:
        hint = hint or ("or set reprover.checkpoint to a trained model" if name == "reprover" else
                        "or point retriever.models / retriever.run_dir at a trained run")
        raise UserInputError(f"{message} ({hint})")


def _cfr(similarity: str) -> Callable[[Corpus, Scope], Retriever]:
    def build(corpus: Corpus, s: Scope) -> Retriever:
        from retriever.models.cfr import CFRRetriever
        from retriever.models.cfr import cfr_config
        sub = "cfr" if similarity == "fine" else "cfr-conventional"
        require_trained(sub, s)
        tc = training_config(s)
        index = Path(tc.run_dir) / sub / "index"
        return CFRRetriever(corpus, Path(tc.run_dir) / sub / "model",
                            replace(cfr_config(tc), similarity=similarity), tc.device,
                            index_path=index if index.exists() else None)
    return build


def rerank_with_car(first: Retriever, trained_over: str, s: Scope, weight: float) -> Retriever:
    """`first`'s top k1 re-ranked by the CAR trained over `trained_over` (its folder in the
    run), ordered by z(CAR) + weight·z(first stage); a CAR trained over another list is refused."""
    from retriever.models.car import RerankRetriever
    from retriever.models.car import car_run_dir
    from prover.utils.device import pick_device
    tc = training_config(s)
    car = car_run_dir(tc.run_dir, trained_over) / "model"
    rr = RerankRetriever.load(first, car, pick_device(tc.device), tc.car.k1, weight)
    recorded = rr.scorer.meta.get("first_stage", trained_over)
    if recorded != trained_over:
        raise ValueError(f"the CAR model at {car} was trained over {recorded}, not {trained_over}")
    return rr


def cfr_car(first_stage: str, weight: float | None) -> Callable[[Corpus, Scope], Retriever]:
    """`first_stage`'s top k1 re-ranked by the CAR trained on its negatives, fused with the
    first stage's scores by `car.first_stage_weight` (weight None) or in CAR's order alone
    (weight 0)."""
    def build(corpus: Corpus, s: Scope) -> Retriever:
        require_trained(f"{first_stage}+car", s)
        tc = training_config(s)
        w = tc.car.first_stage_weight if weight is None else weight
        rr = rerank_with_car(REGISTRY[first_stage](corpus, replace(s, training=tc)), first_stage, s, w)
        if weight is not None:
            rr.name += "-only"
        return rr
    return build


def _reprover(corpus: Corpus, s: Scope) -> Retriever:
    from retriever.models.reprover import build_reprover
    require_trained("reprover", s)
    return build_reprover(corpus, training_config(s))


def learned_fusion(corpus: Corpus, s: Scope) -> Retriever:
    """The fusion ranker fitted by `prover retriever train-fusion`, over the members it was fitted with."""
    from retriever.models.learned_fusion import FusionModel, LearnedFusionRetriever
    require_trained("fusion", s)
    model = FusionModel.load(Path(training_config(s).run_dir) / "fusion" / "model.json")
    return LearnedFusionRetriever(build_members(model.members, corpus, s), model)


def _hybrid(corpus: Corpus, s: Scope) -> Retriever:
    from retriever.baselines.hybrid import HybridRetriever
    require_trained("hybrid", s)  # before BM25 indexes the corpus for nothing
    return HybridRetriever([_bm25(corpus, s), _cfr("fine")(corpus, s)])


# What ships: the names the commands, the service, the configs and the docs offer. Options
# measured and dropped are registered from retriever/tried/registry.py (below).
REGISTRY: dict[str, Callable[[Corpus, Scope], Retriever]] = {
    "bm25": _bm25,
    "bm25-plain": _bm25_plain,
    # Operator-tree paths and shapes, BM25-weighted (issue 50, retriever/structure/).
    "structure": _structure,
    "informal": _informal,
    "cfr": _cfr("fine"),
    "cfr-conventional": _cfr("conventional"),
    "cfr+car": cfr_car("cfr", None),
    "cfr-conventional+car": cfr_car("cfr-conventional", None),
    "reprover": _reprover,
    "hybrid": _hybrid,
    # Learned weights over the ranks of BM25, the priors, neighbours and CFR (train-fusion).
    "fusion": learned_fusion,
    # Nothing learned: the floor of every table (retriever/baselines/priors.py).
    "locality": _locality,
    "usage": _from_training("usage"),
    "random": _random,
    "neighbors": _from_training("neighbors"),
    "neighbors-tactic": _from_training("neighbors-tactic"),
}

# ---------------------------------------------------------------------------------------
# Tried, not shipped: the names that results files and comparison configs use for options
# measured and dropped (CAR's ablations, the rank fusions before the learned one, neighbours by
# CFR). retriever/tried/registry.py registers them here through `register`; the registry loads
# it by name, the first time it is asked for a name it does not ship, so a process that uses
# shipped names never loads tried code (tests/test_layers.py; tools/layers.py's TRIED_DOOR).
TRIED_REGISTRY = "retriever.tried.registry"


def register(name: str, factory: Callable[[Corpus, Scope], Retriever], needs: Sequence[str] = ()) -> None:
    """Add a retriever not shipped (retriever/tried/registry.py): its factory and the trained
    models it loads (`_NEEDS`'s stages), after the shipped ones."""
    if name in REGISTRY:
        raise ValueError(f"retriever {name!r} is registered already")
    REGISTRY[name] = factory
    if needs:
        _NEEDS[name] = list(needs)


def _load_tried(name: str) -> None:
    if name not in REGISTRY and TRIED_REGISTRY not in sys.modules:
        importlib.import_module(TRIED_REGISTRY)


def is_registered(name: str) -> bool:
    """Whether `name` is a retriever, shipped or tried."""
    _load_tried(name)
    return name in REGISTRY


def registered_names() -> list[str]:
    """Every registered name, the shipped ones first."""
    _load_tried("")
    return list(REGISTRY)


def build_retriever(name: str, corpus: Corpus, settings: RetrieverConfig | None = None, *,
                    data: DataConfig | None = None, training: Any = None) -> Retriever:
    """Retriever `name` over `corpus`, as `settings` (the retriever choice) says; `data`: the
    dataset evaluated (its training proofs feed the priors, its evaluated split is left out);
    `training`: the run's training config, when a training stage builds its first stage. A
    command's own config (with `retriever` and `data` sections) may stand for all three."""
    if not is_registered(name):
        raise ValueError(f"unknown retriever {name!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name](corpus, scope_of(settings, data, training))
