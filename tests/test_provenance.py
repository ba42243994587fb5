"""Per-row provenance of the retrieval benchmark, and the refusal of a dirty tree."""
from __future__ import annotations

import json

import pytest

from prover.config import load_config

from retriever.settings import RetrievalBenchmarkConfig
from prover.utils.runinfo import DIRTY_TREE_ERROR, require_clean_tree
from retriever.evaluation import benchmark

STEM = "retrieval-demo_data-random-test"


def demo_cfg(tmp_path, retrievers: str):
    return load_config(RetrievalBenchmarkConfig, None,
                       [f"results_dir={tmp_path}", f"retrievers=[{retrievers}]", "latency_queries=3",
                        "robustness=false"])


def test_a_resumed_run_keeps_earlier_rows_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "aaaa")
    first = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain"), command="first command")
    monkeypatch.setenv("PROVER_GIT_COMMIT", "bbbb")
    second = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain,bm25"), command="second command")

    old, new = second["rows"]
    assert old["provenance"] == first["rows"][0]["provenance"]  # copied as it was
    assert (old["provenance"]["git_commit"], old["provenance"]["command"]) == ("aaaa", "first command")
    assert old["provenance"]["config"]["retrievers"] == ["bm25-plain"]  # the config that row ran with
    assert (new["provenance"]["git_commit"], new["provenance"]["command"]) == ("bbbb", "second command")
    assert new["provenance"]["config"]["retrievers"] == ["bm25-plain", "bm25"]
    assert new["provenance"]["dirty"] is False and new["provenance"]["written_at"].endswith("+00:00")
    # The file-level fields name the last run only.
    assert (second["git_commit"], second["command"]) == ("bbbb", "second command")
    on_disk = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert [r["provenance"]["git_commit"] for r in on_disk["rows"]] == ["aaaa", "bbbb"]
    md = (tmp_path / f"{STEM}.md").read_text()
    assert "Rows written at commit aaaa: bm25-plain; command: `first command`." in md
    assert "Rows written at commit bbbb: bm25; command: `second command`." in md
    assert "Last run: Commit bbbb." in md


def test_a_run_naming_only_new_rows_keeps_the_earlier_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "aaaa")
    first = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain"), command="first")
    monkeypatch.setenv("PROVER_GIT_COMMIT", "bbbb")
    second = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25"), command="second")
    assert [r["retriever"] for r in second["rows"]] == ["bm25-plain", "bm25"]
    kept, was = second["rows"][0], first["rows"][0]
    assert (kept["metrics"], kept["provenance"]) == (was["metrics"], was["provenance"])
    on_disk = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert [r["provenance"]["git_commit"] for r in on_disk["rows"]] == ["aaaa", "bbbb"]


def test_force_redoes_the_named_rows_in_place_and_keeps_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "aaaa")
    benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain,bm25"), command="first")
    monkeypatch.setenv("PROVER_GIT_COMMIT", "bbbb")
    again = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain"), force=True, command="again")
    assert [r["retriever"] for r in again["rows"]] == ["bm25-plain", "bm25"]
    assert [r["provenance"]["git_commit"] for r in again["rows"]] == ["bbbb", "aaaa"]


def test_rows_from_one_run_need_no_per_row_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "aaaa")
    benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain"), command="cmd")
    md = (tmp_path / f"{STEM}.md").read_text()
    assert "Rows written" not in md and "Commit aaaa.\nCommand: `cmd`" in md


def test_old_rows_without_provenance_still_resume_and_render(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "aaaa")
    benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain"), command="old")
    path = tmp_path / f"{STEM}.json"
    old = json.loads(path.read_text())
    for row in old["rows"]:
        del row["provenance"]  # as in results files written before rows carried one
    path.write_text(json.dumps(old))

    monkeypatch.setenv("PROVER_GIT_COMMIT", "bbbb")
    result = benchmark.run_retrieval_benchmark(demo_cfg(tmp_path, "bm25-plain,bm25"), command="new")
    assert "provenance" not in result["rows"][0]  # nothing invented for it
    assert result["rows"][1]["provenance"]["git_commit"] == "bbbb"
    md = (tmp_path / f"{STEM}.md").read_text()
    assert "Rows written before rows recorded their own commit: bm25-plain." in md
    assert "Rows written at commit bbbb: bm25; command: `new`." in md


def test_a_dirty_tree_is_refused_unless_allowed(monkeypatch):
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc-dirty")
    with pytest.raises(SystemExit) as refused:
        require_clean_tree(False)
    assert str(refused.value) == DIRTY_TREE_ERROR
    assert DIRTY_TREE_ERROR.startswith("error: the working tree has uncommitted changes")
    assert require_clean_tree(True) == "abc-dirty"
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc")
    assert require_clean_tree(False) == "abc"


def test_the_benchmark_script_refuses_before_any_work(tmp_path, monkeypatch):
    from conftest import benchmark_script
    script = benchmark_script("retrieval")

    def boom(*a, **k):
        raise AssertionError("the benchmark ran on a dirty tree")
    monkeypatch.setattr(script, "run_retrieval_benchmark", boom)
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc-dirty")
    with pytest.raises(SystemExit) as refused:
        script.main([f"results_dir={tmp_path}"])
    assert str(refused.value) == DIRTY_TREE_ERROR
    assert not list(tmp_path.iterdir())


def test_rows_from_a_dirty_tree_are_marked(tmp_path, monkeypatch):
    from conftest import benchmark_script
    monkeypatch.setenv("PROVER_GIT_COMMIT", "abc-dirty")
    assert benchmark_script("retrieval").main(
        ["--allow-dirty", f"results_dir={tmp_path}", "retrievers=[bm25-plain]", "latency_queries=3",
         "robustness=false"]) == 0
    row = json.loads((tmp_path / f"{STEM}.json").read_text())["rows"][0]
    assert row["provenance"]["dirty"] is True and row["provenance"]["git_commit"] == "abc-dirty"
    assert "| bm25-plain (dirty tree) |" in (tmp_path / f"{STEM}.md").read_text()


def test_every_committed_results_file_still_renders():
    from conftest import REPO
    files = sorted((REPO / "benchmarks" / "results").glob("retrieval-*.json"))
    assert files
    for path in files:
        result = json.loads(path.read_text())
        md = benchmark._markdown(result, result["dataset"], result["split"])
        # Every row's own commit is named, and rows from before per-row provenance are
        # credited to nobody but the file's own record.
        assert f"Commit {result['git_commit']}." in md, path.name
        for row in result["rows"]:
            if row.get("provenance"):
                assert row["provenance"]["git_commit"] in md, (path.name, row["retriever"])
        if not any(r.get("provenance") for r in result["rows"]):
            assert "Rows written" not in md, path.name


def test_a_row_inside_its_warm_up_is_marked_and_compared_with_nothing(tmp_path, monkeypatch):
    import numpy as np
    from retriever.evaluation.evaluate import under_trained
    short = {"retriever": "reprover", "training": {"reprover": {"steps": 74, "warmup_steps": 100}}}
    done = {"retriever": "cfr", "training": {"pretrain": {"steps": 500, "config": {"pretrain": {"warmup_steps": 200}}}}}
    assert under_trained(short) == "reprover: 74 steps, warm-up 100"
    assert under_trained(done) is None and under_trained({"retriever": "bm25"}) is None
    assert benchmark.row_label(short) == "reprover (under-trained: reprover: 74 steps, warm-up 100)"
    result = {"rows": [{"retriever": "bm25"}, short, done]}
    values = {"R@10": np.array([1.0, 0.5, 1.0, 0.5]), "MRR": np.array([1.0, 0.0, 0.5, 0.0])}
    benchmark.add_intervals(result, {"bm25": values, "reprover": values, "cfr": values})
    assert "R@10_ci" in short and "R@10_ratio_to_bm25_ci" not in short
    assert done["R@10_ratio_to_bm25_ci"] == [1.0, 1.0]


def test_learned_rows_are_compared_with_the_best_no_learning_row():
    import numpy as np
    rows = [{"retriever": n} for n in ("bm25", "bm25+usage", "random", "cfr", "bm25+cfr")]
    result = {"rows": rows}
    v = lambda *x: {"R@10": np.array(x), "MRR": np.array(x)}
    per_query = {"bm25": v(0.5, 0.5, 1.0, 1.0), "bm25+usage": v(1.0, 0.5, 1.0, 1.0),
                 "random": v(1.0, 1.0, 1.0, 1.0),  # never the bar, however lucky
                 "cfr": v(1.0, 1.0, 1.0, 1.0), "bm25+cfr": v(1.0, 0.5, 1.0, 1.0)}
    benchmark.add_intervals(result, per_query)
    assert result["best_no_learning"] == "bm25+usage"
    assert benchmark.is_no_learning("bm25+usage+locality") and not benchmark.is_no_learning("bm25+cfr")
    lo, hi = rows[3]["R@10_diff_to_best_baseline_ci"]
    assert 0.0 <= lo <= hi <= 0.5  # cfr beats it by 0.5 on one query of four
    assert rows[4]["R@10_diff_to_best_baseline_ci"] == [0.0, 0.0]
    assert benchmark.first_stage("cfr-conventional+car") == "cfr-conventional"
    assert benchmark.first_stage("cfr+car-only") is None and benchmark.first_stage("bm25") is None


def test_a_fusion_rests_on_the_training_of_its_own_members_only():
    from types import SimpleNamespace

    from retriever.evaluation.benchmark import trained_by
    without_cfr = SimpleNamespace(fusion=SimpleNamespace(members=["bm25", "usage", "locality", "neighbors"]))
    assert trained_by("fusion", without_cfr) == ["fusion"]
    with_cfr = SimpleNamespace(fusion=SimpleNamespace(members=["bm25", "cfr-conventional"]))
    assert trained_by("fusion", with_cfr) == ["pretrain", "cfr-conventional", "fusion"]
    assert trained_by("fusion+car", with_cfr)[-1] == "car-conventional"
    assert trained_by("cfr", with_cfr) == ["pretrain", "cfr"]
