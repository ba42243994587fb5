"""The tactic generator: augmentation rule, input format, tiny training, generation, CLI."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from generator.augment import AugmentStats, augment_examples, augment_tactic
from generator.inputs import format_input, n_bytes, premise_line
from generator.model import TacticGenerator
from generator.settings import AugmentConfig, GeneratorTrainConfig, InputConfig
from prover.config import load_config
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.pairs import gold_indices
from prover.data.theorem import load_theorems
from tests.conftest import require


@pytest.fixture(scope="module")
def mini(mini_root):
    ds = Dataset(mini_root)
    return ds.corpus(), ds.theorems("random/train")


@pytest.fixture(scope="module")
def mini_examples(mini):
    corpus, theorems = mini
    return augment_examples(theorems, corpus, AugmentConfig(), seed=7, max_bytes=2300, progress=False)


def test_augmentation_follows_the_rule(mini, mini_examples):
    corpus, theorems = mini
    examples, stats = mini_examples
    by_name = {t.full_name: t for t in theorems}
    assert stats.examples == len(examples) == sum(len(t.traced_tactics) for t in theorems)
    checked = 0
    for ex in examples:
        thm = by_name[ex.theorem]
        gold = gold_indices(thm.traced_tactics[ex.tactic_index], corpus)
        pos = [p for p, flag in zip(ex.premises, ex.positive) if flag]
        neg = [p for p, flag in zip(ex.premises, ex.positive) if not flag]
        if not gold:
            assert ex.premises == ()  # default: tactics without premises keep the bare state
            continue
        checked += 1
        assert 1 <= len(pos) <= min(len(gold), 10)
        assert set(pos) <= set(gold) and not set(neg) & set(gold)
        assert len(set(ex.premises)) == len(ex.premises) == 10
        accessible = corpus.accessible_mask(thm.file_path, thm.start)
        assert accessible[neg].all()
        pos_files = set(corpus.premise_file[pos].tolist())
        same = sum(corpus.premise_file[n] in pos_files for n in neg)
        # Half of the negatives (rounded down) from the positives' files, unless too few exist there.
        expected = len(neg) // 2
        candidates = int((np.isin(corpus.premise_file, list(pos_files)) & accessible).sum()) - \
            sum(accessible[g] and corpus.premise_file[g] in pos_files for g in gold)
        assert same == min(expected, candidates) or (candidates < expected and same >= candidates)
    assert checked == stats.with_positives > 1000
    assert sum(stats.positives_shown.values()) == checked
    assert stats.negatives_same_module + stats.negatives_other_module == 10 * checked - sum(
        k * v for k, v in stats.positives_shown.items())
    # Positive counts are drawn uniformly from 1..min(n, 10): with one positive available the
    # count is always 1, and over examples with >= 2 available, some show 1 and some more.
    assert stats.positives_shown[1] >= stats.positives_available[1]
    assert max(stats.positives_shown) >= 3


def test_augmentation_is_deterministic_under_a_seed(mini, mini_examples):
    corpus, theorems = mini
    again, _ = augment_examples(theorems[:300], corpus, AugmentConfig(), seed=7, max_bytes=2300, progress=False)
    other, _ = augment_examples(theorems[:300], corpus, AugmentConfig(), seed=8, max_bytes=2300, progress=False)
    first = mini_examples[0][:len(again)]
    assert again == first
    assert other != first


def test_without_premises_negatives_option(mini):
    corpus, theorems = mini
    thm = theorems[0]
    acc = corpus.accessible_mask(thm.file_path, thm.start)
    rng = np.random.default_rng(0)
    prem, flags = augment_tactic(rng, [], acc, corpus, AugmentConfig(without_premises="negatives"))
    assert len(prem) == 10 and not any(flags) and acc[list(prem)].all()
    with pytest.raises(ValueError, match="bare or negatives"):
        augment_tactic(rng, [], acc, corpus, AugmentConfig(without_premises="some"))


def test_max_premises_zero_gives_bare_states(mini):
    """max_premises 0 turns premises off (it used to fail drawing 1 of 0 positives)."""
    corpus, theorems = mini
    thm = theorems[0]
    acc = corpus.accessible_mask(thm.file_path, thm.start)
    gold = [int(np.flatnonzero(acc)[0])]
    rng = np.random.default_rng(0)
    assert augment_tactic(rng, gold, acc, corpus, AugmentConfig(max_premises=0)) == ((), ())
    assert augment_tactic(rng, [], acc, corpus, AugmentConfig(max_premises=0, without_premises="negatives")) == ((), ())


def test_real_tactic_level_records_augment(data_root):
    """leandojo-sample's traced tactics against the Mathlib corpus of the same commit."""
    corpus = Corpus.load(require(data_root / "mathlib-src") / "corpus.jsonl")
    theorems = load_theorems(require(data_root / "leandojo-sample" / "test.json"))
    examples, stats = augment_examples(theorems, corpus, AugmentConfig(), seed=1, max_bytes=2300, progress=False)
    assert stats.tactics == len(examples) == 40
    with_gold = [ex for ex in examples if any(ex.positive)]
    assert len(with_gold) == stats.with_positives > 10
    for ex in with_gold:
        text, kept = format_input(ex.state, [corpus.premises[i] for i in ex.premises], 2300)
        assert text.endswith(ex.state) and n_bytes(text) <= max(2300, n_bytes(ex.state))
        assert text.count("\n") - ex.state.count("\n") == kept


def test_input_keeps_the_state_and_drops_the_lowest_ranked(mini):
    corpus, _ = mini
    ps = corpus.premises[:5]
    lines = [premise_line(p) + "\n" for p in ps]
    state = "x : Nat\n⊢ x + 0 = x"
    budget = n_bytes(state) + n_bytes(lines[0]) + n_bytes(lines[1]) + 1
    text, kept = format_input(state, ps, budget)
    assert kept == 2 and text == lines[0] + lines[1] + state
    assert "\n" not in premise_line(ps[0]) and ps[0].full_name in lines[0] and "<GOAL>" in lines[0]
    text, kept = format_input(state, ps, 3)  # the state alone is over budget: it stays whole
    assert (text, kept) == (state, 0)


def test_input_cuts_a_long_state_to_its_end_so_premises_still_fit(mini):
    corpus, _ = mini
    ps = corpus.premises[:3]
    names = "".join(p.full_name + "\n" for p in ps)
    state = "h : " + "α" * 200 + "\n⊢ x + 0 = x"  # 2-byte characters: a cut must not split one
    # Whole, the state alone overflows the budget and pushes every premise out.
    assert format_input(state, ps, 100, premise_text="name")[1] == 0
    text, kept = format_input(state, ps, n_bytes(names) + 41, premise_text="name", max_state_bytes=41)
    assert kept == 3 and text.startswith(names)
    rest = text[len(names):]
    assert rest.endswith("\n⊢ x + 0 = x") and state.endswith(rest)
    assert n_bytes(rest) in (40, 41) and rest.encode("utf-8").decode("utf-8") == rest
    # A short state is untouched.
    assert format_input("⊢ True", [], 100, max_state_bytes=41) == ("⊢ True", 0)


def test_input_can_show_premises_by_name_alone(mini):
    corpus, _ = mini
    ps = corpus.premises[:5]
    state = "x : Nat\n⊢ x + 0 = x"
    text, kept = format_input(state, ps, 10_000, premise_text="name")
    assert kept == 5 and text == "".join(p.full_name + "\n" for p in ps) + state
    # Five names cost fewer bytes than the first premise in full.
    assert n_bytes(text) - n_bytes(state) < 5 * n_bytes(premise_line(ps[0]))
    with pytest.raises(ValueError, match="premise_text"):
        format_input(state, ps, 10_000, premise_text="statement")


@pytest.fixture(scope="module")
def tiny_generator(tmp_path_factory, mini_root, one_thread):
    run_dir = tmp_path_factory.mktemp("gen-tiny")
    cfg = load_config(GeneratorTrainConfig, "configs/generator/tiny.yaml",
                      [f"run_dir={run_dir}", f"data.root={mini_root}", "train.max_steps=30",
                       "train.eval_examples=24", "train.eval_beams=0"])
    from generator.train import train_generator
    return cfg, train_generator(cfg)


def test_tiny_generator_validation_loss_decreases(tiny_generator):
    cfg, summary = tiny_generator
    assert summary["steps"] == 30 and summary["done"]
    initial = summary["initial_val"]["loss"]
    assert initial > 4.0  # about ln(384) per byte: a fresh model knows nothing
    assert summary["best_val_loss"] < 0.75 * initial, (initial, summary["best_val_loss"])


def test_generation_is_distinct_sorted_and_consistent(tiny_generator):
    cfg, summary = tiny_generator
    gen = TacticGenerator.load(summary["model"])
    assert gen.input_cfg.max_bytes == cfg.input.max_bytes  # the budgets travel with the model
    states = ["x : Nat\n⊢ x + 0 = x", "a b : Nat\nh : a = b\n⊢ b = a"]
    for method in ("beam", "sampling"):
        torch.manual_seed(0)
        out = gen.generate(states, num_tactics=6, method=method)
        assert len(out) == 2
        for sugg in out:
            assert sugg, method
            tactics = [s.tactic for s in sugg]
            scores = [s.logprob for s in sugg]
            assert len(set(tactics)) == len(tactics) and all(t.strip() == t and t for t in tactics)
            assert all(math.isfinite(s) and s < 0 for s in scores)
            assert scores == sorted(scores, reverse=True)
    # A suggestion's score is the model's log-probability of that tactic, recomputable.
    sugg = gen.generate(states[:1], num_tactics=4)[0]
    again = gen.tactic_logprobs([states[0]] * len(sugg), [s.tactic for s in sugg])
    assert np.allclose(again, [s.logprob for s in sugg], atol=1e-4)
    with pytest.raises(ValueError, match="beam or sampling"):
        gen.generate(states, method="greedy")


def test_the_tactic_pool_is_scored_beside_the_beam_and_travels_with_the_model(tiny_generator, tmp_path):
    from generator.model import TACTIC_POOL, frequent_targets
    cfg, summary = tiny_generator
    gen = TacticGenerator.load(summary["model"])
    assert frequent_targets(["simp", "ring", " simp ", "rfl", "ring", "simp", ""], 2) == ["simp", "ring"]
    states = ["x : Nat\n⊢ x + 0 = x", "a b : Nat\nh : a = b\n⊢ b = a"]
    pool = ["simp", "rfl", "omega", "exact h.symm", "rw [Nat.add_zero]"]
    # Scoring many candidates of one input (encoded once) gives tactic_logprobs' numbers.
    got = gen.score_candidates(states, [pool, pool[:2]])
    assert np.allclose(got[0], gen.tactic_logprobs([states[0]] * 5, pool), atol=1e-4)
    assert np.allclose(got[1], gen.tactic_logprobs([states[1]] * 2, pool[:2]), atol=1e-4)
    beam = gen.generate(states, num_tactics=3)
    gen.pool = pool
    both = gen.generate(states, num_tactics=3)
    for b, w, scores in zip(beam, both, got[:1] + [gen.score_candidates(states[1:], [pool])[0]]):
        # The best 3 of beam and pool together, by the model's own score.
        every = {s.tactic: s.logprob for s in b} | dict(zip(pool, scores))
        best = sorted(every.items(), key=lambda kv: -kv[1])[:3]
        assert [s.tactic for s in w] == [t for t, _ in best]
        assert np.allclose([s.logprob for s in w], [v for _, v in best], atol=1e-4)
    # A prefix keeps only the pool's tactics that start with it.
    assert all(s.tactic.startswith("rw") for s in gen.generate(states[:1], num_tactics=5, prefix="rw")[0])
    gen.save_pretrained(tmp_path / "m")
    assert (tmp_path / "m" / TACTIC_POOL).exists() and TacticGenerator.load(tmp_path / "m").pool == pool
    assert TacticGenerator.load(summary["model"]).pool == []  # tiny.yaml has no pool


def test_cli_build_data_and_suggest(tiny_generator, tmp_path, mini_root):
    cfg, summary = tiny_generator
    out = subprocess.run([sys.executable, "-m", "prover.cli", "generator", "build-data", "--config",
                          "configs/generator/tiny.yaml", f"run_dir={cfg.run_dir}", f"data.root={mini_root}"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "random/train: 2350 pairs from 2350 tactics" in out.stdout and "same module" in out.stdout
    state = tmp_path / "state.txt"
    state.write_text("x : Nat\n⊢ x + 0 = x\n")
    out = subprocess.run([sys.executable, "-m", "prover.cli", "generator", "suggest", "--model", summary["model"],
                          "--state", str(state), "-n", "3", "--retriever", "bm25", "--data", str(mini_root), "--k", "3"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("premises (bm25, ") and len(lines) >= 5
    assert all(float(line.split()[0]) < 0 for line in lines[4:])
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    out = subprocess.run([sys.executable, "-m", "prover.cli", "generator", "suggest", "--model", summary["model"],
                          "--state", str(empty)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "empty" in out.stderr


def test_training_resumes_where_it_stopped(tmp_path, mini_root, monkeypatch, tiny_generator):
    """Killed after step 5 (checkpoint at 4), resumed: the same losses as a straight run.
    Reuses the tiny fixture's built data, so only 2 x 6 short steps run here."""
    from generator.train import train_generator
    from prover.training.run import Budget
    cfg0, _ = tiny_generator

    def cfg(run: str):
        return load_config(GeneratorTrainConfig, "configs/generator/tiny.yaml",
                           [f"run_dir={tmp_path / run}", f"data.root={mini_root}", "train.max_steps=6",
                            "train.batch_size=4", "train.log_every=1", "train.checkpoint_every=2",
                            "train.eval_examples=4", "train.eval_beams=0", "model.dropout=0.1"])

    for run in ("a", "b"):  # the augmented data is already built: share it
        (tmp_path / run).mkdir()
        (tmp_path / run / "data").symlink_to(f"{cfg0.run_dir}/data")
    train_generator(cfg("a"))

    def kill_after_5(self):
        if self.progress.step >= 5:
            raise KeyboardInterrupt
        return False

    with monkeypatch.context() as m:
        m.setattr(Budget, "exhausted", kill_after_5)
        with pytest.raises(KeyboardInterrupt):
            train_generator(cfg("b"))
    summary = train_generator(cfg("b"))
    assert summary["steps"] == 6 and summary["done"]

    def losses(run: str) -> list[tuple[int, float]]:
        import json
        rows = [json.loads(line) for line in (tmp_path / run / "generator/train_log.jsonl").open()]
        return [(r["step"], r["loss"]) for r in rows if "loss" in r]

    a, b = dict(losses("a")), losses("b")
    assert [s for s, _ in b] == [1, 2, 3, 4, 5, 5, 6]
    for step, loss in b:  # the same batches and dropout as the straight run
        assert loss == pytest.approx(a[step], abs=1e-4)


def test_cli_indexes_tactic_neighbours_into_a_trained_model(tiny_generator, tmp_path, mini_root):
    import shutil
    from generator.neighbors import NEIGHBORS_DIR
    cfg, summary = tiny_generator
    run_dir = tmp_path / "run"
    shutil.copytree(summary["model"], run_dir / "generator" / "model")  # the shared model stays as it is
    base = [sys.executable, "-m", "prover.cli", "generator", "neighbors", "--config", "configs/generator/tiny.yaml",
            f"run_dir={run_dir}", f"data.root={mini_root}"]
    out = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "neighbors.k is 0" in out.stderr  # tiny.yaml indexes none
    out = subprocess.run(base + ["neighbors.k=3"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "tactic neighbours: 2350 training states (k 3," in out.stdout
    gen = TacticGenerator.load(run_dir / "generator" / "model")
    assert (run_dir / "generator" / "model" / NEIGHBORS_DIR).is_dir() and gen.neighbors.cfg.k == 3
    # The neighbours' tactics are the training split's.
    corpus, theorems = Dataset(mini_root).corpus(), Dataset(mini_root).theorems("random/train")
    steps = [t for thm in theorems if thm.file_path in corpus.file_index for t in thm.traced_tactics]
    step = steps[0]
    dist = gen.neighbors.distribution(step.state_before)
    assert 1 <= len(dist) <= 3 and set(dist) <= {t.tactic.strip() for t in steps}
    assert sum(dist.values()) == pytest.approx(1.0)
    sugg = gen.generate([step.state_before], num_tactics=3, states=[step.state_before])[0]
    assert len(sugg) == 3 and [s.logprob for s in sugg] == sorted((s.logprob for s in sugg), reverse=True)


def test_positive_rate_hides_gold_premises_as_a_retrievers_miss_would(mini):
    """positive_rate (issue 54): a tactic with gold premises is shown none of them at 1 - rate,
    negatives from the gold premises' files in their place; at 1.0 the draws are as before."""
    corpus, theorems = mini
    thm = next(t for t in theorems if t.file_path in corpus.file_index)
    acc = corpus.accessible_mask(thm.file_path, thm.start)
    gold = [int(i) for i in np.flatnonzero(acc)[:2]]
    stats = AugmentStats()
    hidden = augment_tactic(np.random.default_rng(0), gold, acc, corpus, AugmentConfig(positive_rate=0.0), stats)
    assert len(hidden[0]) == 10 and not any(hidden[1]) and not set(hidden[0]) & set(gold)
    gold_files = set(corpus.premise_file[gold])
    same = sum(corpus.premise_file[i] in gold_files for i in hidden[0])
    assert same >= 1 and same == stats.negatives_same_module >= 5 - stats.same_module_shortfall  # half from those files
    assert stats.positives_shown[0] == 1
    assert (augment_tactic(np.random.default_rng(3), gold, acc, corpus, AugmentConfig(positive_rate=1.0))
            == augment_tactic(np.random.default_rng(3), gold, acc, corpus, AugmentConfig()))
    shown = [any(augment_tactic(np.random.default_rng(s), gold, acc, corpus, AugmentConfig(positive_rate=0.3))[1])
             for s in range(200)]
    assert 0.2 < np.mean(shown) < 0.4
