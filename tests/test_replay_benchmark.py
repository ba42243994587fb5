"""The replay search benchmark's pieces: outcome classification, the ceiling, intervals, labels.
In process and on hand-made or sample theorems: seconds, no Ray, no model."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prover.data.theorem import load_theorems, parse_theorem
from prover.env.replay import ReplayConfig, ReplayEnv
from prover.search.best_first import SearchConfig, best_first_search
from prover.search.replay_benchmark import (CEILING, CEILING_IN_BUDGET, RATE_LABEL, RecordedTactics, add_intervals,
                                            classify, markdown, outcome_row, replay_ceiling)
from prover.search.results import make_record
from prover.search.sources import NoPremises, Suggested
from prover.search.theorems import ProofTask
from tests.conftest import REPO, require, tactic, theorem_record
from tests.search_doubles import FakeClock, TimedTactics
from tests.test_search import FOCUSED, PLAIN

# A -> B -> no goals; A -> D, a dead end (no tactic recorded from D).
TRACE = [tactic("to_b", before="⊢ A", after="⊢ B"), tactic("to_d", before="⊢ A", after="⊢ D"),
         tactic("done", before="⊢ B", after="no goals")]


class Fixed:
    """Test double: the same suggestions (tactic, log-prob) for every state."""

    def __init__(self, *suggestions):
        self.suggestions = [Suggested(t, lp) for t, lp in suggestions]

    def suggest(self, requests):
        return [list(self.suggestions) for _ in requests]


def _task(trace=TRACE, name="T.ab"):
    return ProofTask(parse_theorem(theorem_record(name, "T.lean", trace), "mem", 0, None), "leandojo", "val")


def _outcome(source, config, task=None, clock=None):
    task = task or _task()
    kwargs = {"clock": clock} if clock else {}
    r = best_first_search(ReplayEnv(task.theorem, ReplayConfig(focus_goals=True)), NoPremises(), source,
                          config, **kwargs)
    return classify(make_record(task, r, "test", 1, "test")), r


def test_failure_classification_no_match_versus_budget():
    # Nothing the generator proposes is recorded: the root's candidates all fail, the queue empties.
    outcome, r = _outcome(Fixed(("simp", -0.1), ("ring", -0.2)), SearchConfig())
    assert (outcome, r.stop_reason, r.expansions) == ("no_match", "queue_empty", 1)
    # A candidate matches (A -> D) but D is a dead end: the tree is exhausted, still no_match.
    outcome, r = _outcome(Fixed(("to_d", -0.1), ("nonsense", -0.2)), SearchConfig())
    assert (outcome, r.stop_reason, r.expansions) == ("no_match", "queue_empty", 2)
    # The proof is reachable, but the expansion budget ends the search with B still open.
    outcome, r = _outcome(Fixed(("to_b", -0.1), ("done", -0.2)), SearchConfig(max_expansions=1))
    assert (outcome, r.stop_reason, r.tree.open) == ("budget_expansions", "max_expansions", 1)
    # ... and with two expansions it is proved.
    outcome, r = _outcome(Fixed(("to_b", -0.1), ("done", -0.2)), SearchConfig(max_expansions=2))
    assert (outcome, r.proof) == ("proved", ["to_b", "done"])
    # The time budget: each generation takes 10 fake seconds, the budget is 5.
    clock = FakeClock()
    outcome, r = _outcome(TimedTactics(Fixed(("to_b", -0.1), ("done", -0.2)), clock, 10.0),
                          SearchConfig(timeout_s=5.0), clock=clock)
    assert (outcome, r.stop_reason) == ("budget_time", "timeout")
    # No traced tactics: the replay env cannot open, an error.
    outcome, r = _outcome(Fixed(("to_b", -0.1)), SearchConfig(), task=_task(trace=[], name="T.empty"))
    assert (outcome, r.stop_reason) == ("error", "env_start")
    assert classify({"status": "error", "error_kind": "worker_lost"}) == "error"


def test_recorded_tactics_follow_focus_goals():
    two_goals = "case a\n⊢ A\n\ncase b\n⊢ B"
    src = RecordedTactics([_task().theorem], focus_goals=True)
    assert src.recorded("⊢ A") == ["to_b", "to_d"]
    assert src.recorded(two_goals) == []  # "case a ⊢ A" is not "⊢ A"
    focused = [_task([tactic("t", before="case a\n⊢ A", after="no goals")]).theorem]
    assert RecordedTactics(focused, focus_goals=True).recorded(two_goals) == ["t"]  # the first goal's record
    assert RecordedTactics(focused, focus_goals=False).recorded(two_goals) == []


def test_ceiling_on_the_sample_theorems(leandojo_sample):
    tasks = [ProofTask(t, "leandojo", "test") for t in load_theorems(leandojo_sample) if t.traced_tactics]
    assert len(tasks) == len(PLAIN | FOCUSED)  # the sample's 12 theorems with traced tactics
    for focus, expected, rest in ((False, PLAIN, {"no_match"}), (True, PLAIN | FOCUSED, set())):
        records = replay_ceiling(tasks, ReplayConfig(focus_goals=focus))
        assert {r["theorem"] for r in records if classify(r) == "proved"} == expected
        # The two focused proofs stall without focus_goals: their tree is exhausted.
        assert {classify(r) for r in records if r["theorem"] not in expected} == rest
        assert all(r["retriever"] == CEILING and r["env"] == "replay" for r in records)


def test_ceiling_on_the_real_records(data_root):
    path = require(data_root / "mathlib-src" / "leandojo-real" / "val.json")
    tasks = [ProofTask(t, "leandojo", "leandojo-real/val") for t in load_theorems(path) if t.traced_tactics]
    assert len(tasks) == 185
    keys = [t.key for t in tasks]
    focused, _ = outcome_row(CEILING, {r["key"]: r for r in replay_ceiling(tasks, ReplayConfig(focus_goals=True))},
                             keys)
    plain, _ = outcome_row(CEILING, {r["key"]: r for r in replay_ceiling(tasks, ReplayConfig())}, keys)
    assert (focused["proved"], plain["proved"]) == (180, 151)
    assert focused["outcomes"]["no_match"] == 5 and focused["outcomes"]["error"] == 0
    # Within the real config's budget (16 expansions) one proof is too long.
    budget = SearchConfig(max_expansions=16, timeout_s=60)
    in_budget, _ = outcome_row(CEILING_IN_BUDGET, {r["key"]: r for r in replay_ceiling(
        tasks, ReplayConfig(focus_goals=True), budget, CEILING_IN_BUDGET)}, keys)
    assert in_budget["outcomes"] == {"proved": 179, "no_match": 5, "budget_expansions": 1, "budget_time": 0,
                                     "error": 0}


def test_rows_intervals_and_paired_difference():
    keys = ["a", "b", "c", "d"]
    recs = {"a": {"status": "proved"}, "b": {"status": "failed", "stop_reason": "queue_empty"},
            "c": {"status": "failed", "stop_reason": "max_expansions", "expansions": 16}}
    row, proved = outcome_row("bm25", recs, keys)
    assert (row["proved"], row["rate"], row["recorded"]) == (1, 0.25, 3)
    assert row["outcomes"] == {"proved": 1, "no_match": 1, "budget_expansions": 1, "budget_time": 0,
                               "error": 1}  # d has no record: counted as an error, kept in the denominator
    rows = [row, {"row": "none"}, {"row": "all"}]
    values = {"bm25": proved, "none": np.zeros(4), "all": np.ones(4)}
    comparisons = add_intervals(rows, values, ["none", "bm25", "all"])
    assert rows[1]["rate_ci"] == [0.0, 0.0] and rows[2]["rate_ci"] == [1.0, 1.0]
    assert 0.0 <= rows[0]["rate_ci"][0] <= 0.25 <= rows[0]["rate_ci"][1] <= 1.0
    # Later minus earlier, in the order given.
    assert [(c["a"], c["b"], c["diff"]) for c in comparisons] == [("bm25", "none", 0.25), ("all", "none", 1.0),
                                                                    ("all", "bm25", 0.75)]
    assert comparisons[1]["diff_ci"] == [1.0, 1.0]


def _result(rows, per_theorem, absent=None):
    return {"dataset": "mathlib-src", "split": "leandojo-real/val", "n_theorems": 4, "n_theorems_in_split": 6,
            "settings": {"focus_goals": True, "num_tactics": 8, "max_expansions": 16, "timeout_s": 60,
                         "generator": "g", "k": 10},
            "ceiling_search": {"num_tactics": 64, "max_expansions": None, "timeout_s": 60},
            "bootstrap": {"resamples": 2000, "seed": 0}, "rows": rows, "absent": absent or {},
            "comparisons": [], "per_theorem": per_theorem, "machine": {"cpu": "x", "cpu_count": 2},
            "git_commit": "c", "command": "python benchmarks/search_replay.py"}


def test_tables_say_replay_simulator_never_pass_at_1():
    row, _ = outcome_row("bm25", {"a": {"status": "proved"}}, ["a"])
    md = markdown(_result([row], [{"theorem": "A", "bm25": "proved"}],
                          {"cfr-conventional+car": "retriever cfr-conventional+car needs a trained CFR"}))
    assert RATE_LABEL == "replay proof rate (simulator), not pass@1"
    assert md.count("pass@1") == md.count("not pass@1") >= 2
    assert "absent: retriever cfr-conventional+car needs a trained CFR" in md
    assert "- bm25: `A`" in md


RESULTS = REPO / "benchmarks" / "results"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("search-replay-*.json")), ids=lambda p: p.stem)
def test_committed_replay_results_agree_with_their_per_theorem_outcomes(path: Path):
    result = json.loads(path.read_text())
    assert result["env"] == "replay" and result["rate_label"] == RATE_LABEL
    text = path.read_text() + path.with_suffix(".md").read_text()
    assert text.count("pass@1") == text.count("not pass@1")
    for row in result["rows"]:
        outcomes = [t[row["row"]] for t in result["per_theorem"]]
        assert len(outcomes) == row["theorems"] == result["n_theorems"]
        assert row["proved"] == outcomes.count("proved")
        assert row["outcomes"] == {o: outcomes.count(o) for o in row["outcomes"]}
        # the committed rate is rounded to 6 decimals
        assert row["rate"] == pytest.approx(row["proved"] / row["theorems"], abs=5e-7)


@pytest.mark.parametrize("path", sorted(RESULTS.glob("search-replay-*.json")), ids=lambda p: p.stem)
def test_committed_replay_tables_render_from_their_json(path: Path):
    assert markdown(json.loads(path.read_text())) == path.with_suffix(".md").read_text()


def test_the_script_refuses_a_dirty_tree_before_any_work(tmp_path, monkeypatch):
    from prover.utils.runinfo import DIRTY_TREE_ERROR
    from tests.conftest import benchmark_script
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc-dirty")
    with pytest.raises(SystemExit) as refused:
        benchmark_script("search_replay").main(["--results-dir", str(tmp_path), f"out_dir={tmp_path}"])
    assert str(refused.value) == DIRTY_TREE_ERROR and not list(tmp_path.iterdir())


def test_two_replay_runs_compare_theorem_by_theorem():
    from tests.conftest import benchmark_script
    cmp = benchmark_script("replay_compare")
    def run(outcomes):
        return {"rows": [{"row": "none"}, {"row": "bm25"}],
                "per_theorem": [{"key": f"F::{t}", "theorem": t, "none": o, "bm25": "no_match"}
                                for t, o in outcomes.items()]}
    now = run({"a": "proved", "b": "proved", "c": "no_match", "d": "proved"})
    base = run({"a": "proved", "b": "no_match", "c": "proved", "e": "proved"})  # d, e: one side only
    out = cmp.compare(now, base)
    assert out["theorems"] == 3  # a, b, c
    none = out["rows"][0]
    assert (none["row"], none["now"], none["base"], none["diff"]) == ("none", pytest.approx(2 / 3), pytest.approx(2 / 3), 0.0)
    assert none["only_now"] == ["b"] and none["only_base"] == ["c"]
    assert out["rows"][1]["diff"] == 0.0 and out["rows"][1]["diff_ci"] == [0.0, 0.0]
    assert "not pass@1" in cmp.markdown({**out, "label": "old", "base": "abc", "file": "f.json",
                                         "now_commit": "def", "command": "c"})


@pytest.mark.parametrize("path", sorted(RESULTS.glob("replay-compare-*.json")), ids=lambda p: p.stem)
def test_committed_replay_comparisons_render_from_their_json(path: Path):
    from tests.conftest import benchmark_script
    assert benchmark_script("replay_compare").markdown(json.loads(path.read_text())) == path.with_suffix(".md").read_text()
