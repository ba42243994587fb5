"""A proof search never sees the proofs of the theorems it proves: the priors (usage, neighbors,
the fusion's) and the generator's tactic neighbours leave every attempted theorem out, whatever
the theorems' source. novel_premises/test is the case that matters: most of its theorems are in
random/train, which the priors count by default."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from generator.neighbors import TacticNeighbors
from generator.settings import NeighborsConfig
from prover.data.dataset import Dataset
from prover.search.components import premise_source, retriever_spec
from retriever.settings import RetrieverConfig
from retriever.baselines.priors import usage_counts
from tests.test_generator_neighbors import LIST, RING, SUBST, _theorem


def _counts(retriever) -> dict[str, dict[int, int]]:
    return {path: dict(zip(idx.tolist(), n.tolist())) for path, (idx, n) in retriever.counts.items()}


def test_a_novel_premises_search_leaves_its_theorems_out_of_the_priors(mini_root):
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    train, test = ds.theorems("random/train"), ds.theorems("novel_premises/test")
    keys = {f"{t.file_path}::{t.full_name}" for t in test}
    shared = [t for t in train if f"{t.file_path}::{t.full_name}" in keys]
    assert len(shared) > 100  # the leak this guards against: test theorems the train split has
    source = premise_source(RetrieverConfig("usage", k=10, corpus=str(mini_root), exclude=tuple(sorted(keys))))
    kept = [t for t in train if f"{t.file_path}::{t.full_name}" not in keys]
    expected = {p: c for p, c in usage_counts(kept, corpus).items() if c}
    assert {p: c for p, c in _counts(source.retriever).items() if c} == expected
    leaky = premise_source(RetrieverConfig("usage", k=10, corpus=str(mini_root)))
    assert _counts(leaky.retriever) != _counts(source.retriever)


def test_the_benchmark_hands_every_theorem_to_both_specs(mini_root, monkeypatch, tmp_path):
    """run_one passes the keys of all its theorems to the retriever and generator specs."""
    from omegaconf import OmegaConf

    from prover.search import actors, benchmark
    from prover.search.settings import SearchBenchmarkConfig
    seen = {}

    def start_fleet(ray_cfg, retriever, generator, *rest, **kwargs):
        seen.update(retriever=retriever, generator=generator)
        raise RuntimeError("stop here")

    monkeypatch.setattr(actors, "start_fleet", start_fleet)
    model = tmp_path / "model"  # a model folder, as run_one checks before Ray (never loaded here)
    model.mkdir()
    (model / "config.json").write_text("{}")
    cfg = OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), {
        "theorems": {"source": str(mini_root), "split": "novel_premises/test", "limit": 5},
        "env": {"name": "replay"}, "retriever": {"name": "usage", "corpus": str(mini_root)},
        "generator": {"model": str(model)}, "out_dir": str(tmp_path / "runs"), "progress": False})

    class Session:
        def ensure(self):
            pass

    with pytest.raises(RuntimeError, match="stop here"):
        benchmark.run_one(cfg, Session())
    tasks = Dataset(mini_root).theorems("novel_premises/test")[:5]
    keys = tuple(f"{t.file_path}::{t.full_name}" for t in tasks)
    assert seen["retriever"].exclude == keys and seen["generator"].exclude == keys
    assert retriever_spec(cfg).exclude == ()  # outside a benchmark nothing is left out


def test_tactic_neighbours_leave_out_the_evaluated_theorems(tmp_path):
    train = [_theorem("a", "A.lean", [(RING, "ring"), (SUBST, "rw [h]")]),
             _theorem("b", "A.lean", [(LIST, "simp"), (SUBST, "omega")])]
    nb = TacticNeighbors.build(train, SimpleNamespace(file_index={"A.lean": 0}), NeighborsConfig(k=5))
    assert [t for t, _ in nb.nearest(SUBST)][:2] in (["rw [h]", "omega"], ["omega", "rw [h]"])
    nb.save(tmp_path)
    loaded = TacticNeighbors.load(tmp_path)
    assert loaded.sources == ["A.lean::a", "A.lean::a", "A.lean::b", "A.lean::b"]
    assert loaded.exclude({"A.lean::b"}) == 2
    after = [t for t, _ in loaded.nearest(SUBST)]
    assert after[0] == "rw [h]" and not {"omega", "simp"} & set(after)  # b's states are gone
    assert "simp" not in [t for t, _ in loaded.nearest(LIST)]
    assert np.array_equal(loaded.hidden, [False, False, True, True])
    old = TacticNeighbors(nb.bm25, nb.tactics, nb.cfg)  # indexed before theorems were kept
    with pytest.raises(ValueError, match="rebuild them"):
        old.exclude({"A.lean::b"})


def test_repeated_neighbour_queries_are_answered_once_and_forgotten_on_exclude(monkeypatch):
    train = [_theorem("a", "A.lean", [(RING, "ring"), (SUBST, "rw [h]")]),
             _theorem("b", "A.lean", [(LIST, "simp"), (SUBST, "omega")])]
    nb = TacticNeighbors.build(train, SimpleNamespace(file_index={"A.lean": 0}), NeighborsConfig(k=5))
    calls = []
    inner = nb._nearest_states
    monkeypatch.setattr(nb, "_nearest_states", lambda *a: calls.append(a) or inner(*a))
    first = nb.nearest_states(SUBST)
    assert nb.nearest_states(SUBST) == first and len(calls) == 1  # the input's query, then the candidates'
    nb.nearest_states(SUBST, leave_out="A.lean::a")
    assert len(calls) == 2  # another question, another answer
    nb.exclude({"A.lean::b"})
    after = nb.nearest_states(SUBST)
    assert len(calls) == 3 and 1 in {d for d, _ in after} and not {2, 3} & {d for d, _ in after}  # b left
