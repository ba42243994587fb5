"""The retrieval benchmark refuses models trained on another split strategy's training data."""
from __future__ import annotations

import json
import logging

import pytest

from prover.config import load_config
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from retriever.evaluation.trained_on import allowed_train_split, check_trained_on
from retriever.settings import RetrievalBenchmarkConfig


def test_allowed_train_split_follows_the_strategy(mini_root):
    ds = Dataset(mini_root)
    assert allowed_train_split(ds, "novel_premises/test") == "novel_premises/train"
    assert allowed_train_split(ds, "random/val") == "random/train"
    # A split with no train split of its own (the real LeanDojo halves): random/train.
    assert allowed_train_split(ds, "leandojo-real/report") == "random/train"


def test_check_refuses_other_strategies_and_the_evaluated_split(mini_root, tmp_path, caplog):
    ds = Dataset(mini_root)
    random_cfr = {"pretrain": {"train_split": "random/train"}, "cfr-conventional": {"train_split": "random/train"}}
    with pytest.raises(UserInputError, match="cfr-conventional .*learned from random/train.*novel_premises/train"):
        check_trained_on(ds, "novel_premises/test", random_cfr, tmp_path)
    check_trained_on(ds, "random/test", random_cfr, tmp_path)  # its own strategy
    # Pretraining is label-free: a random/train MLM encoder may start a novel_premises model.
    check_trained_on(ds, "novel_premises/test", {"pretrain": {"train_split": "random/train"},
                                                 "cfr-conventional": {"train_split": "novel_premises/train"}}, tmp_path)
    # The fusion learns from its fit split: another strategy's val, or the evaluated split itself, is refused.
    with pytest.raises(UserInputError, match="fusion .*random/val"):
        check_trained_on(ds, "novel_premises/test", {"fusion": {"split": "random/val"}}, tmp_path)
    with pytest.raises(UserInputError, match="fusion .*learned from random/test"):
        check_trained_on(ds, "random/test", {"fusion": {"split": "random/test"}}, tmp_path)
    check_trained_on(ds, "random/test", {"fusion": {"split": "random/val"}, "car-conventional": None}, tmp_path)
    # An older summary without the field passes with a warning naming the stage.
    with caplog.at_level(logging.WARNING):
        check_trained_on(ds, "random/test", {"cfr-conventional": {"steps": 10}}, tmp_path)
    assert "cfr-conventional" in caplog.text and "does not record its train split" in caplog.text


def test_benchmark_refuses_before_loading_the_model(mini_root, tmp_path):
    from retriever.evaluation import benchmark
    run_dir = tmp_path / "run"
    (run_dir / "cfr-conventional").mkdir(parents=True)
    (run_dir / "cfr-conventional" / "summary.json").write_text(json.dumps({"train_split": "random/train"}))
    cfg = load_config(RetrievalBenchmarkConfig, None,
                      [f"data.root={mini_root}", "data.split=novel_premises/test", f"results_dir={tmp_path}",
                       "retrievers=[cfr-conventional]", f"retriever.run_dir={run_dir}"])
    # No model exists under run_dir: the guard has to speak before anything tries to load one.
    with pytest.raises(UserInputError, match="learned from random/train"):
        benchmark.run_retrieval_benchmark(cfg)
    assert not list(tmp_path.glob("retrieval-*.json"))
