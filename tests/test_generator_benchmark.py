"""The generator benchmark's model-free pieces: the frequency baseline, intervals and comparisons,
absent rows, outcome files. Hand-made examples: no model is trained or loaded."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from generator.evaluate import EvalExample, evaluate_frequency, frequent_tactics
from prover.data.theorem import parse_theorem
from prover.benchmarking.generator_tables import tactics_per_state
from tests.conftest import REPO, benchmark_script, tactic, theorem_record


def _theorem(name, file_path, tactics):
    return parse_theorem(theorem_record(name, file_path, [tactic(t) for t in tactics]), "mem", 0, None)


def _example(tac, i=0):
    return EvalExample(f"T{i}", "X.lean", None, "⊢ True", tac, (), i)


@pytest.fixture(scope="module")
def bench():
    return benchmark_script("tactic_generator")


def test_frequency_baseline_on_a_hand_made_training_split():
    train = [_theorem("a", "A.lean", ["simp", "rfl", "simp  "]),
             _theorem("b", "A.lean", ["ring", "rfl", "simp"]),
             _theorem("c", "B.lean", ["omega", "omega", "omega", "omega"]),  # file not in the corpus
             _theorem("d", "A.lean", ["linarith", "ring", "norm_num"])]
    corpus = SimpleNamespace(file_index={"A.lean": 0})
    # Whitespace-normalized counts; a theorem whose file the corpus lacks is not a training example
    # (generator.augment skips it); ties keep first-seen order.
    assert frequent_tactics(train, corpus, 3) == [("simp", 3), ("rfl", 2), ("ring", 2)]
    top = [t for t, _ in frequent_tactics(train, corpus, 8)]
    assert top == ["simp", "rfl", "ring", "linarith", "norm_num"]
    examples = [_example(t, i) for i, t in enumerate(["simp", "rfl", "norm_num", "omega", "simp [h]"])]
    row = evaluate_frequency(examples, top, num_tactics=2)
    assert row["per_example"] == {"hit@1": [1, 0, 0, 0, 0], "hit@2": [1, 1, 0, 0, 0]}
    assert (row["n"], row["exact_match@1"], row["exact_match@2"]) == (5, 0.2, 0.4)
    # With 8 proposals, norm_num (5th) is found too.
    assert evaluate_frequency(examples, top, num_tactics=8)["exact_match@8"] == 0.6


def test_example_keys_are_unique_per_tactic():
    a, b = _example("simp", 0), _example("simp", 1)
    assert a.key != b.key and a.key == "X.lean::T0#0"


def test_intervals_and_the_required_comparisons(bench):
    n = 8
    rows = [{"condition": c} for c in ("none", "gold", "bm25", "frequency")]
    ones, zeros = np.ones(10), np.zeros(10)
    half = np.array([1, 0] * 5, dtype=float)
    per = {"none": {"hit@1": zeros, "hit@8": half, "loglik": -np.arange(10.0)},
           "gold": {"hit@1": half, "hit@8": ones, "loglik": -np.ones(10)},
           "bm25": {"hit@1": zeros, "hit@8": half, "loglik": -np.ones(10)},
           "frequency": {"hit@1": zeros, "hit@8": zeros}}
    result = {"rows": rows}
    bench.add_intervals(result, per, n)
    none, gold, _, freq = rows
    assert gold["exact_match@8_ci"] == [1.0, 1.0] and none["exact_match@1_ci"] == [0.0, 0.0]
    assert 0.0 < none["exact_match@8_ci"][0] < 0.5 < none["exact_match@8_ci"][1] < 1.0
    assert "gold_loglik_ci" in none and "gold_loglik_ci" not in freq
    got = {(c["a"], c["b"]): c for c in result["comparisons"] if c["metric"] == "exact_match@8"}
    ll = {(c["a"], c["b"]): c for c in result["comparisons"] if c["metric"] == "gold_loglik"}
    # Premises vs none (gold − none among them) and every model row vs the frequency baseline.
    assert set(got) == {("gold", "none"), ("bm25", "none"), ("none", "frequency"), ("gold", "frequency"),
                        ("bm25", "frequency")}
    lo, hi = got[("gold", "none")]["diff_ci"]
    assert got[("gold", "none")]["diff"] == 0.5 and 0.0 < lo < 0.5 < hi < 1.0
    assert got[("gold", "frequency")]["diff_ci"] == [1.0, 1.0]  # 1 - 0 on every resample
    assert got[("bm25", "none")]["diff_ci"] == [0.0, 0.0]
    assert got[("gold", "frequency")]["metric"] == "exact_match@8"
    # The gold tactic's log-likelihood against none, for premise rows only (frequency has none):
    # gold is -1 everywhere, none -0..-9, so gold − none is +3.5 with an interval above zero.
    assert set(ll) == {("gold", "none"), ("bm25", "none")}
    assert ll[("gold", "none")]["diff"] == 3.5 and 0.0 < ll[("gold", "none")]["diff_ci"][0] < 3.5
    assert result["bootstrap"]["resamples"] == 2000


def test_markdown_shows_intervals_absent_rows_and_the_legend(bench):
    n = 8
    prov = {"git_commit": "abc", "command": "cmd", "dirty": False}
    rows = [{"condition": "none", "n": 2, "exact_match@1": 0.0, "exact_match@8": 0.5, "gold_loglik": -3.0,
             "gold_loglik_per_byte": -0.5, "premises_shown": 0.0, "seconds": 1.0, "provenance": prov},
            {"condition": "frequency", "n": 2, "exact_match@1": 0.5, "exact_match@8": 0.5,
             "provenance": {**prov, "dirty": True}}]
    result = {"rows": rows, "config": {"num_tactics": n, "k": 10}, "dataset": "mathlib-src",
              "split": "leandojo-real/val", "model": "m", "model_params": 1e6, "n_examples": 2, "n_with_gold": 1,
              "max_bytes": 512, "absent": {"cfr-conventional+car": "retriever cfr-conventional+car needs X"},
              "frequency": {"train_split": "random/train", "tactics": [["rfl", 9], ["by simp", 3]],
                            "n_examples": 12, "statement_level": True},
              "throughput": {"1": 2.0, "16": 5.0}, "machine": {"cpu": "c", "cpu_count": 2},
              "git_commit": "abc", "command": "cmd"}
    per = {"none": {"hit@1": np.zeros(2), "hit@8": np.array([1.0, 0.0]), "loglik": np.array([-2.0, -4.0])},
           "frequency": {"hit@1": np.array([1.0, 0.0]), "hit@8": np.array([1.0, 0.0])}}
    bench.add_intervals(result, per, n)
    md = bench.markdown(result)
    assert "| none | 0.0 [0.0, 0.0] | 50.0 [0.0, 100.0] | -3.00 [-4.00, -2.00] |" in md
    assert "| frequency (dirty tree) (no model) | 50.0 [0.0, 100.0] |" in md
    assert "| cfr-conventional+car | absent: retriever cfr-conventional+car needs X |" in md
    assert "| none − frequency | +0.0 |" in md
    assert "proposes whole-proof texts" in md and "`rfl`, `by simp`" in md


def test_outcome_files_round_trip(bench, tmp_path):
    path = bench.outcomes_path(tmp_path, "generator-x", "none")
    bench.write_outcomes(path, ["k0", "k1"], {"hit@1": [1, 0], "hit@8": [1, 1], "loglik": [-1.23456, -2.0]})
    keys, values = bench.read_outcomes(path)
    assert keys == ["k0", "k1"] and values["hit@8"].tolist() == [1.0, 1.0]
    assert values["loglik"].tolist() == [-1.2346, -2.0]


def test_the_real_config_names_every_condition():
    from omegaconf import OmegaConf
    cfg = OmegaConf.load(REPO / "configs" / "generator" / "benchmark_real.yaml")
    assert cfg.data.split == "leandojo-real/val" and cfg.max_examples == 400 and cfg.num_tactics == 8
    assert list(cfg.conditions) == ["none", "gold", "bm25", "fusion", "frequency", "neighbors"]


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "results").glob("generator-*-leandojo-real-*.json")),
                         ids=lambda p: p.stem)
def test_committed_real_generator_rows_agree_with_their_outcome_files(path, bench):
    result = json.loads(path.read_text())
    n = tactics_per_state(result["config"])
    for row in result["rows"]:
        keys, values = bench.read_outcomes(bench.outcomes_path(path.parent, path.stem, row["condition"]))
        assert len(keys) == row["n"] == result["n_examples"]
        assert row["exact_match@1"] == pytest.approx(values["hit@1"].mean())
        assert row[f"exact_match@{n}"] == pytest.approx(values[f"hit@{n}"].mean())
        if "loglik" in values:
            assert row["gold_loglik"] == pytest.approx(values["loglik"].mean(), abs=1e-3)


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "results").glob("generator-*-leandojo-real-*.json")),
                         ids=lambda p: p.stem)
def test_committed_real_generator_tables_render_from_their_json(path, bench):
    assert bench.markdown(json.loads(path.read_text())) == path.with_suffix(".md").read_text()


def test_the_script_refuses_a_dirty_tree_before_any_work(bench, tmp_path, monkeypatch):
    from prover.utils.runinfo import DIRTY_TREE_ERROR
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc-dirty")
    with pytest.raises(SystemExit) as refused:
        bench.main(["--config", str(REPO / "configs/generator/benchmark_real.yaml"), f"results_dir={tmp_path}"])
    assert str(refused.value) == DIRTY_TREE_ERROR and not list(tmp_path.iterdir())
