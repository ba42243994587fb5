"""The learned structure scorer, tried and not shipped, registered as `structure-li`
(retriever/tried/late_interaction.py): trained, saved, loaded back and retrieving."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from retriever.base import TheoremContext
from retriever.registry import build_retriever, is_registered
from retriever.settings import RetrieverTrainConfig
from retriever.tried import late_interaction
from tests.conftest import require


def test_structure_li_trains_saves_and_reranks_the_first_stage(data_root, tmp_path):
    ds = Dataset(require(data_root / "mathlib-src-mini"))
    scorer, trained = late_interaction.train(ds, 60, 0.02, seed=0, batch=16)
    assert trained["steps"] > 0 and trained["pairs"] > 0
    late_interaction.save(scorer, tmp_path / "run" / late_interaction.NAME)
    assert is_registered(late_interaction.NAME)  # through retriever/tried/registry.py
    tc = OmegaConf.structured(RetrieverTrainConfig(run_dir=str(tmp_path / "run")))
    corpus = ds.corpus()
    r = build_retriever(late_interaction.NAME, corpus, training=tc)
    t = ds.theorems("random/val")[0]
    state = t.traced_tactics[0].state_before
    ctx = TheoremContext(t.file_path, t.start)
    hits = r.retrieve([state], 10, [ctx])[0]
    first = {h.index for h in r.first_stage.retrieve([state], 100, [ctx])[0]}
    assert len(hits) == 10 and {h.index for h in hits} <= first  # a re-ranking of the first stage's 100
    # the same order as the saved scorer gives, loaded back
    again = late_interaction.load(tmp_path / "run" / late_interaction.NAME, corpus)
    assert [h.index for h in hits] == again.rerank(state, [h.index for h in r.first_stage.retrieve(
        [state], 100, [ctx])[0]])[:10]


def test_structure_li_without_a_trained_scorer_says_what_to_run(data_root, tmp_path):
    ds = Dataset(require(data_root / "mathlib-src-mini"))
    tc = OmegaConf.structured(RetrieverTrainConfig(run_dir=str(tmp_path / "empty")))
    with pytest.raises(UserInputError, match="structure_late_interaction.py"):
        build_retriever(late_interaction.NAME, ds.corpus(), training=tc)
