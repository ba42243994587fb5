"""The learned structure scorer (issue 50), tried and not shipped: node embeddings of operator
trees (retriever/tried/structure_encoder.py) trained contrastively on state–premise pairs, a candidate
scored by late interaction (each goal node's best-matching premise node).

Measured as a fusion member over the fusion's top 100 (benchmarks/tried/structure_late_interaction.py,
results/structure-late-interaction-mathlib-src-leandojo-real-select.md): inside the noise against
a stacking control, so not shipped. Registered as `structure-li` (retriever/tried/registry.py):
the `structure` retriever's top 100 re-ranked by the scorer saved in `<run_dir>/structure-li/`
(that benchmark trains and saves it).
"""
from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prover.data.corpus import Corpus
from prover.data.errors import UserInputError
from retriever.base import Context, RankedPremise, Retriever

log = logging.getLogger(__name__)
NAME = "structure-li"
Q_NODES, P_NODES = 48, 64
FIRST_STAGE_K = 100


def _pairs(ds, n: int, seed: int) -> list[tuple[str, int]]:
    from prover.data.pairs import premise_queries
    rng = random.Random(seed)
    theorems = ds.theorems("random/train")
    theorems = rng.sample(theorems, min(len(theorems), n))
    queries = premise_queries(theorems, ds.corpus(), ds.skips)[0]
    return [(q.state, rng.choice(sorted(q.gold))) for q in queries]


class Scorer:
    """The trained encoder with its vocabulary, and premise contexts parsed once."""

    def __init__(self, corpus, vocab, model) -> None:
        self.corpus, self.vocab, self.model = corpus, vocab, model
        self.premises: dict[int, list] = {}

    def premise(self, i: int) -> list:
        from retriever.tried.structure_encoder import node_contexts
        from retriever.structure.optree import statement_trees
        if i not in self.premises:
            p = self.corpus.premises[i]
            self.premises[i] = node_contexts(statement_trees(p.args, p.goal), False, P_NODES)
        return self.premises[i]

    @staticmethod
    def state(text: str) -> list:
        from retriever.tried.structure_encoder import node_contexts
        from retriever.structure.optree import state_trees
        return node_contexts(state_trees(text), True, Q_NODES)

    def encode(self, contexts: list, max_nodes: int):
        from retriever.tried.structure_encoder import tensors
        return self.model(*tensors(contexts, self.vocab, max_nodes))

    def rerank(self, state: str, candidates: list[int]) -> list[int]:
        import torch
        from retriever.tried.structure_encoder import late_interaction
        if not candidates:
            return []
        with torch.no_grad():
            q, qm = self.encode([self.state(state)], Q_NODES)
            p, pm = self.encode([self.premise(c) for c in candidates], P_NODES)
            s = late_interaction(q, qm, p, pm)[0].numpy()
        return [candidates[j] for j in np.argsort(-s, kind="stable")]


def train(ds, n_theorems: int, cpu_minutes: float, seed: int, batch: int = 64) -> tuple[Scorer, dict]:
    import torch
    from retriever.tried.structure_encoder import NodeEncoder, Vocab, late_interaction
    torch.manual_seed(seed)
    pairs = _pairs(ds, n_theorems, seed)
    probe = Scorer(ds.corpus(), None, None)
    states = [Scorer.state(s) for s, _ in pairs]
    labels = [lab for ctx in states for up, kids in ctx for lab in up + kids]
    labels += [lab for _, p in pairs for up, kids in probe.premise(p) for lab in up + kids]
    vocab = Vocab(labels, 20000)
    model = NodeEncoder(len(vocab))
    scorer = Scorer(ds.corpus(), vocab, model)
    scorer.premises = probe.premises
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    order = list(range(len(pairs)))
    rng = random.Random(seed)
    start, steps, losses = time.process_time(), 0, []
    while time.process_time() - start < 60 * cpu_minutes:
        rng.shuffle(order)
        for lo in range(0, len(order) - batch + 1, batch):
            idx = order[lo: lo + batch]
            prem = list(dict.fromkeys(pairs[i][1] for i in idx))  # in-batch negatives, each premise once
            q, qm = scorer.encode([states[i] for i in idx], Q_NODES)
            p, pm = scorer.encode([scorer.premise(c) for c in prem], P_NODES)
            target = torch.tensor([prem.index(pairs[i][1]) for i in idx])
            loss = torch.nn.functional.cross_entropy(late_interaction(q, qm, p, pm) / 0.05, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            losses.append(float(loss.detach()))
            if steps % 100 == 0:
                log.info("step %d loss %.3f (%.0f CPU-s)", steps, np.mean(losses[-100:]), time.process_time() - start)
            if time.process_time() - start >= 60 * cpu_minutes:
                break
    model.eval()
    return scorer, {"pairs": len(pairs), "steps": steps, "batch": batch, "cpu_seconds": round(time.process_time() - start),
                    "budget_cpu_minutes": cpu_minutes, "final_loss": round(float(np.mean(losses[-100:])), 3),
                    "vocab": len(vocab), "stopped_by": "budget"}


def save(scorer: Scorer, out: str | Path) -> Path:
    """The scorer's weights and vocabulary under `out` (what `load` reads)."""
    import torch
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(scorer.model.state_dict(), out / "model.pt")
    (out / "vocab.json").write_text(json.dumps(scorer.vocab.ids), encoding="utf-8")
    return out


def load(path: str | Path, corpus: Corpus) -> Scorer:
    import torch
    from retriever.tried.structure_encoder import NodeEncoder, Vocab
    path = Path(path)
    if not (path / "model.pt").exists():
        raise UserInputError(f"retriever {NAME} needs a trained late-interaction scorer in {path} "
                             "(run: python benchmarks/tried/structure_late_interaction.py --split leandojo-real/select)")
    vocab = Vocab([], 2)
    vocab.ids = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
    model = NodeEncoder(len(vocab))
    model.load_state_dict(torch.load(path / "model.pt", weights_only=True))
    model.eval()
    return Scorer(corpus, vocab, model)


class LateInteractionRetriever(Retriever):
    """A first stage's top `k1` re-ranked by the late-interaction scorer."""

    name = NAME

    def __init__(self, corpus: Corpus, first_stage: Retriever, scorer: Scorer, k1: int = FIRST_STAGE_K) -> None:
        super().__init__(corpus)
        self.first_stage, self.scorer, self.k1 = first_stage, scorer, k1

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        out = []
        for state, hits in zip(states, self.first_stage.retrieve(states, max(k, self.k1), contexts)):
            order = self.scorer.rerank(state, [h.index for h in hits])
            out.append([RankedPremise(i, self.corpus.premises[i], float(len(order) - r))
                        for r, i in enumerate(order[:k])])
        return out


def build(corpus: Corpus, s: Any) -> Retriever:
    """`structure-li` (registered by retriever/tried/registry.py): `structure`'s top 100
    re-ranked by the scorer saved in `<run_dir>/structure-li/`."""
    from retriever.registry import REGISTRY, training_config
    scorer = load(Path(training_config(s).run_dir) / NAME, corpus)  # before the first stage indexes the corpus for nothing
    return LateInteractionRetriever(corpus, REGISTRY["structure"](corpus, s), scorer)
