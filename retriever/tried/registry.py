"""The retriever names measured and not shipped, registered into retriever/registry.py.

Each is a row of a committed results file or a comparison config (configs/retrieval/
benchmark_*.yaml, configs/generator/device*.yaml), so `--retriever NAME` still builds it. The
registry imports this module by name the first time it is asked for a name it does not ship.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prover.data.corpus import Corpus
from retriever.base import Retriever
from retriever.tried import late_interaction
from retriever.registry import (Scope, build_members, cfr_car, learned_fusion, register, register_from_training,
                                require_trained, rerank_with_car, training_config)


def rank_fusion(*members: str) -> Callable[[Corpus, Scope], Retriever]:
    """Reciprocal-rank fusion (k_rrf 60, each member's top 100) of registered retrievers: the
    priors' fusions measured before the learned `fusion` replaced them. HybridRetriever is
    already a generic RRF over any members, so it is reused as is."""
    def build(corpus: Corpus, s: Scope) -> Retriever:
        from retriever.baselines.hybrid import HybridRetriever
        return HybridRetriever(build_members(members, corpus, s), name="+".join(members))
    return build


def _dense_neighbors(corpus: Corpus, s: Scope, theorems: list, locality: Retriever | None = None) -> Retriever:
    """`neighbors-cfr`: the tactic-level training states nearest by the trained conventional
    CFR's state encoder (retriever/tried/dense_neighbors.py); their vectors are kept beside it."""
    from dataclasses import replace

    from prover.data.tactic_steps import tactic_level as split_tactics
    from prover.utils.device import pick_device
    from retriever.models.cfr import CFREncoder, cfr_config, model_fingerprint
    from retriever.tried.dense_neighbors import DenseNeighborRetriever
    require_trained("neighbors-cfr", s)
    tc = training_config(s)
    model = Path(tc.run_dir) / "cfr-conventional" / "model"
    rc = replace(cfr_config(tc), similarity="conventional")
    encoder = CFREncoder.from_pretrained(model, rc).to(pick_device(tc.device)).eval()
    steps, _ = split_tactics(theorems, max_target_bytes=10 ** 9)  # nothing is generated: keep all
    return DenseNeighborRetriever(corpus, steps, encoder, int(s.settings.neighbors_k), rc.temperature, locality,
                                  cache_dir=model.parent, model_sha1=model_fingerprint(model) or "")


def _fusion_car(corpus: Corpus, s: Scope) -> Retriever:
    """The fitted fusion's top k1 re-ranked by the CAR trained over its CFR member
    (`car.first_stage`), ordered by z(CAR) + car.fusion_weight·z(fusion score). CAR's
    negatives came from that CFR, not from the fusion: mining them from the fusion would need
    its priors to leave each training theorem's own proof out. Issue 28: it costs R@10 on
    leandojo-real/report (configs/retriever/cpu.yaml says where)."""
    tc = training_config(s)
    require_trained("fusion", s)
    require_trained(f"{tc.car.first_stage}+car", s)
    return rerank_with_car(learned_fusion(corpus, s), tc.car.first_stage, s, tc.car.fusion_weight)


CFR = ["cfr-conventional"]
CFR_CAR = ["cfr-conventional", "cfr-conventional+car"]

# name -> (factory, the trained stages it loads)
TRIED = {
    # CAR's order alone, without the first stage's scores (the ablation beside each CAR row).
    "cfr+car-only": (cfr_car("cfr", 0.0), ["cfr", "cfr+car"]),
    "cfr-conventional+car-only": (cfr_car("cfr-conventional", 0.0), CFR_CAR),
    # The fusion's head re-ranked by CAR (issue 28: does CAR add inside the shipped first stage?).
    "fusion+car": (_fusion_car, ["fusion"]),
    # Reciprocal-rank fusions of the priors, measured before the learned fusion replaced them.
    "bm25+locality": (rank_fusion("bm25", "locality"), []),
    "bm25+usage": (rank_fusion("bm25", "usage"), []),
    "bm25+usage+locality": (rank_fusion("bm25", "usage", "locality"), []),
    "bm25+usage+neighbors": (rank_fusion("bm25", "usage", "neighbors"), []),
    "bm25+usage+locality+neighbors": (rank_fusion("bm25", "usage", "locality", "neighbors"), []),
    "bm25+usage+neighbors-tactic": (rank_fusion("bm25", "usage", "neighbors-tactic"), []),
    # Learned similarity, counted prior: the tactic-level neighbours, nearest by CFR's state encoder.
    "neighbors-cfr": (register_from_training("neighbors-cfr", _dense_neighbors), CFR),
    # The learned rows fused with the priors: what the priors leave for learning to add.
    "bm25+usage+cfr-conventional": (rank_fusion("bm25", "usage", "cfr-conventional"), CFR),
    "bm25+usage+locality+cfr-conventional": (rank_fusion("bm25", "usage", "locality", "cfr-conventional"), CFR),
    "bm25+usage+locality+cfr-conventional+car": (
        rank_fusion("bm25", "usage", "locality", "cfr-conventional+car"), CFR_CAR),
    # Issue 50's learned structure scorer over `structure`'s top 100 (retriever/tried/late_interaction.py;
    # benchmarks/tried/structure_late_interaction.py trains and saves it).
    "structure-li": (late_interaction.build, []),
}

for _name, (_factory, _needs) in TRIED.items():
    register(_name, _factory, _needs)
