"""Every training stage writes the commit of the code that trained it into its summary.json
(issue 62: a fusion record had its commit added by hand, naming a commit whose config listed
other members)."""
from __future__ import annotations

import json

from omegaconf import OmegaConf

from prover.training.engine import Result
from prover.training.run import Progress
from prover.utils.runinfo import git_commit
from retriever.settings import RetrieverTrainConfig
from tests.conftest import REPO


def test_every_engine_stage_records_its_commit(monkeypatch):
    """pretrain, train-cfr, train-car, ReProver and the generator spread `Result.record()` into
    their summary: the commit is there, and it is the running code's (runinfo.git_commit)."""
    monkeypatch.setenv("PROVER_GIT_COMMIT", "a" * 40)
    rec = Result(Progress(), total_steps=10, stopped_by="end", parameters=1, workers=1, device="cpu").record()
    assert rec["git_commit"] == "a" * 40 == git_commit()
    for module in ("retriever/training/pretrain.py", "retriever/training/train_cfr.py",
                   "retriever/training/train_car.py", "retriever/training/train_reprover.py",
                   "generator/train.py"):
        assert "**result.record()" in (REPO / module).read_text(), module


def test_train_fusion_records_its_own_commit(tmp_path, monkeypatch):
    """train_fusion is no engine stage: it writes the commit itself, from the code."""
    monkeypatch.setenv("PROVER_GIT_COMMIT", "b" * 40)
    import retriever.training.train_fusion as tf
    cfg = OmegaConf.structured(RetrieverTrainConfig)
    cfg.run_dir = str(tmp_path)
    cfg.fusion.members = ["bm25", "usage"]
    cfg.fusion.folds = 2
    rng = __import__("numpy").random.default_rng(0)
    rankings = [[rng.permutation(30)[:20].tolist(), rng.permutation(30)[:20].tolist()] for _ in range(12)]
    gold = [{r[0][0]} for r in rankings]
    monkeypatch.setattr(tf, "member_rankings", lambda cfg, split: (rankings, gold))
    out = tf.train_fusion(cfg)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["git_commit"] == "b" * 40
    assert summary["members"] == ["bm25", "usage"] and summary["queries"] == 12
