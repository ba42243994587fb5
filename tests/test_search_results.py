"""Benchmark pieces without Ray: theorem sources, results files, summaries, labels, CLI refusals."""
from __future__ import annotations

import json

import pytest

from prover.cli import main
from prover.config import load_config
from prover.data.errors import DataError
from prover.search import components
from prover.search import actors
from prover.search.actors import gpu_share, resolve_address
from prover.search.results import (ResultsFile, check_run_info, markdown, rate_label, summarize_dir,
                                   summarize_run)
from prover.search.settings import SearchBenchmarkConfig, TheoremsConfig, resume_settings
from prover.search.theorems import load_tasks
from tests.conftest import DATA_ROOT, REPO


# -- theorem sources ---------------------------------------------------------------------------

def test_minif2f_theorems_open_in_the_minif2f_repo(data_root):
    path = data_root / "minif2f" / "minif2f.json"
    meta = json.loads(path.read_text())
    test = load_tasks(TheoremsConfig(source="minif2f", split="test", minif2f_path=str(path)))
    both = load_tasks(TheoremsConfig(source=str(path)))  # the file itself: recognized by its layout
    assert len(test) == 244 and len(both) == 488
    t = test[0].theorem
    assert (t.url, t.commit) == (meta["url"], meta["commit"]) == (
        "https://github.com/yangky11/miniF2F-lean4", "5746b7d6c47855ce1294bed87329618ff7f1bc31")
    assert (t.full_name, t.file_path, t.start) == ("aime_1983_p1", "MiniF2F/Test/aime_1983_p1.lean", (7, 1))
    assert t.traced_tactics == () and {x.split for x in test} == {"test"}
    with pytest.raises(ValueError, match="valid"):
        load_tasks(TheoremsConfig(source="minif2f", split="train", minif2f_path=str(path)))


def test_leandojo_split_file_folder_and_list(tmp_path, data_root, leandojo_sample):
    sample = load_tasks(TheoremsConfig(source=str(leandojo_sample)))
    assert len(sample) == 20 and sample[3].theorem.traced_tactics  # replay needs the traces
    mini = load_tasks(TheoremsConfig(source=str(data_root / "mathlib-src-mini"), split="random/test", limit=5))
    assert len(mini) == 5 and mini[0].source == "leandojo"
    with pytest.raises(ValueError, match="which split"):
        load_tasks(TheoremsConfig(source=str(data_root / "mathlib-src-mini")))
    listed = tmp_path / "theorems.jsonl"
    listed.write_text(json.dumps({"url": "https://github.com/o/r", "commit": "abc1234",
                                  "file_path": "R/A.lean", "full_name": "R.a", "start": [3, 1]}) + "\n"
                      + json.dumps({"url": "https://github.com/o/r", "commit": "abc1234",
                                    "file_path": "R/A.lean", "full_name": "R.b"}) + "\n")
    tasks = load_tasks(TheoremsConfig(source=str(listed), names=["R.b"]))
    assert [(t.key, t.theorem.start, t.source) for t in tasks] == [("R/A.lean::R.b", (1, 1), "list")]
    with pytest.raises(ValueError, match="not in"):
        load_tasks(TheoremsConfig(source=str(listed), names=["R.c"]))
    listed.write_text(json.dumps({"url": "u", "commit": "c", "full_name": "R.a"}) + "\n")
    with pytest.raises(DataError, match="file_path"):
        load_tasks(TheoremsConfig(source=str(listed)))
    with pytest.raises(ValueError, match="expected minif2f"):
        load_tasks(TheoremsConfig(source=str(tmp_path / "theorems.txt")))


# -- results files -----------------------------------------------------------------------------

def _rec(key, status, env="replay", retriever="bm25", **kw):
    base = {"key": key, "theorem": key.split("::")[-1], "status": status, "env": env,
            "retriever": retriever, "expansions": kw.pop("expansions", 2), "env_started": True,
            "proof": ["simp"] if status == "proved" else None, "attempt": 1,
            "times": {"total_s": 1.0, "retrieval_s": 0.1, "generation_s": 0.6, "environment_s": 0.2}}
    base.update(kw)
    return base


def test_results_file_keeps_complete_lines_and_repairs_a_cut_one(tmp_path):
    f = ResultsFile(tmp_path / "r" / "results.jsonl")
    assert f.records() == []
    f.append(_rec("a::a", "proved"))
    f.append(_rec("b::b", "failed"))
    with open(f.path, "ab") as out:
        out.write(b'{"key": "c::c", "sta')
    assert [r["key"] for r in f.records()] == ["a::a", "b::b"]
    f.repair()
    assert f.path.read_bytes().endswith(b"}\n") and len(f.path.read_text().splitlines()) == 2
    f.append(_rec("c::c", "proved"))
    assert [r["key"] for r in f.records()] == ["a::a", "b::b", "c::c"]
    f.append(_rec("d::d", "error", error_kind="worker_lost"))
    assert f.finished_keys() == {"a::a", "b::b", "c::c"}  # a lost theorem is retried on resume
    with open(f.path, "a") as out:
        out.write("garbage\n" + json.dumps(_rec("e::e", "failed")) + "\n")
    with pytest.raises(ValueError, match="line 5 is not a JSON record"):
        f.records()


def test_summary_counts_env_start_failures_as_failures():
    records = [
        _rec("a::a", "proved", expansions=3),
        _rec("b::b", "failed", expansions=5),
        _rec("c::c", "error", error_kind="env_start", env_started=False, expansions=0,
             times={"total_s": 0.0}),
        _rec("d::d", "error", error_kind="env_crash", expansions=1),
        _rec("e::e", "failed", expansions=9),
        _rec("e::e", "proved", expansions=4, attempt=2),  # the latest record of a theorem counts
    ]
    s = summarize_run(records, expected=6)
    assert (s["theorems"], s["proved"], s["failed"], s["errors"], s["env_start_failures"]) == (5, 2, 1, 1, 1)
    assert s["rate"] == 0.4  # 2 of 5: the env-start failure stays in the denominator
    assert s["mean_nodes"] == pytest.approx((3 + 5 + 1 + 4) / 4)  # over theorems whose env started
    assert s["mean_generation_s"] == pytest.approx(0.6)
    assert s["rate_label"] == "replay proof rate" and s["retried"] == 1
    assert s["proofs"] == {"a": ["simp"], "e": ["simp"]}


def test_markdown_never_calls_replay_numbers_pass_at_1(tmp_path):
    for run, env, retriever in (("replay-bm25", "replay", "bm25"), ("replay-cfr", "replay", "cfr"),
                                ("leandojo-bm25", "leandojo", "bm25")):
        f = ResultsFile(tmp_path / run / "results.jsonl")
        f.append(_rec("a::a", "proved", env=env, retriever=retriever))
        f.append(_rec("b::b", "error", env=env, retriever=retriever, error_kind="env_start",
                      env_started=False))
    md = markdown(summarize_dir(tmp_path))
    sections = {part.split("\n", 1)[0]: part for part in md.split("## env: ")[1:]}
    assert set(sections) == {"leandojo", "replay (simulator)"}
    replay, lean = sections["replay (simulator)"], sections["leandojo"]
    assert "| replay proof rate |" in replay and "| pass@1 |" not in replay
    assert "| pass@1 |" in lean and "replay proof rate" not in lean
    rows = [line for line in md.splitlines() if line.startswith(("| bm25 ", "| cfr "))]
    assert len(rows) == 3 and all("| 50.0% |" in r for r in rows)


def test_a_rerun_with_other_settings_is_refused(tmp_path):
    cfg = load_config(SearchBenchmarkConfig, str(REPO / "configs/search/tiny.yaml"))
    check_run_info(tmp_path, resume_settings(cfg), {"theorems": 20})
    check_run_info(tmp_path, resume_settings(cfg), {"theorems": 20})  # same settings: fine
    limited = load_config(SearchBenchmarkConfig, str(REPO / "configs/search/tiny.yaml"), ["theorems.limit=3"])
    check_run_info(tmp_path, resume_settings(limited), {})  # another selection of the same theorems
    other = load_config(SearchBenchmarkConfig, str(REPO / "configs/search/tiny.yaml"), ["generator.num_tactics=9"])
    with pytest.raises(ValueError, match=r"other settings \(generator differ\)"):
        check_run_info(tmp_path, resume_settings(other), {})
    # A run from before tactics per expansion was one setting (search.num_tactics, and the
    # generator's num_samples null: the same) resumes.
    old = resume_settings(cfg)
    old["search"]["num_tactics"] = old["generator"].pop("num_tactics")
    old["generator"]["num_samples"] = None
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "run.json").write_text(json.dumps({"settings": old}))
    check_run_info(tmp_path / "before", resume_settings(cfg), {})


# -- environments, addresses, CLI --------------------------------------------------------------

def test_leandojo_without_lean_is_refused_pointing_to_replay(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(components, "lean_toolchain_available", lambda: False)
    with pytest.raises(components.EnvUnavailableError, match="--env replay"):
        components.require_env("leandojo")
    components.require_env("replay")
    with pytest.raises(ValueError, match="unknown env"):
        components.require_env("lean3")
    # LeanDojo Benchmark records (their toolchain, v4.10.0-rc1, is one lean-dojo runs)
    code = main(["benchmark", "--theorems", str(DATA_ROOT / "leandojo-sample" / "test.json"), "--env", "leandojo",
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "needs a Lean 4 toolchain" in err and "--env replay" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written
    code = main(["prove-sorries", str(REPO / "tests/fixtures/lean_sorry_project"), "--env", "leandojo",
                 "--out", str(tmp_path / "p")])
    assert code == 2 and "--env replay" in capsys.readouterr().err


def test_cli_checks_retriever_names(capsys):
    code = main(["benchmark", "--theorems", "minif2f", "--env", "replay", "--retriever", "bm25,tfidf"])
    assert code == 2 and "unknown retriever 'tfidf'" in capsys.readouterr().err


def test_ray_address_resolution(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_address(None) == "local"  # never silently someone else's cluster
    assert resolve_address("ray://head:10001") == "ray://head:10001"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # what `ray job submit` sets for a job
    assert resolve_address(None) == "10.0.0.1:6379"
    assert resolve_address("auto") == "auto"


def test_model_actors_share_a_gpu_when_there_is_one(monkeypatch):
    monkeypatch.setattr(actors.ray, "cluster_resources", lambda: {"CPU": 8.0, "GPU": 1.0})
    assert gpu_share(None, 2) == 0.5 and gpu_share(None, 3) == 0.33
    assert gpu_share(0.25, 2) == 0.25 and gpu_share(0, 2) == 0.0  # as configured
    monkeypatch.setattr(actors.ray, "cluster_resources", lambda: {"CPU": 8.0, "GPU": 4.0})
    assert gpu_share(None, 2) == 1.0  # whole GPUs when there are enough
    monkeypatch.setattr(actors.ray, "cluster_resources", lambda: {"CPU": 8.0})
    assert gpu_share(None, 2) == 0.0


def test_committed_throughput_results_are_consistent():
    """benchmarks/results/search-throughput-cfr.json: its numbers follow from its own counts."""
    result = json.loads((REPO / "benchmarks/results/search-throughput-cfr.json").read_text())
    rows = result["rows"]
    assert [(r["workers"], r["retriever_placement"]) for r in rows] == [
        (n, p) for p in ("shared actor", "copy per worker") for n in (1, 2, 4)]
    for r in rows:
        assert r["expansions_per_s"] == pytest.approx(r["expansions"] / r["dispatch_s"], abs=1e-3)
        assert len(r["worker_rss_mib"]) == r["workers"]
        assert r["retrieval_rss_total_mib"] == pytest.approx(
            sum(r["worker_rss_mib"]) + (r["retriever_actor_rss_mib"] or 0), abs=0.2)
        if r["retriever_placement"] == "shared actor":  # every expansion retrieved once, in batches
            assert sum(int(k) * v for k, v in r["batch_sizes"].items()) == r["expansions"]
    md = (REPO / "benchmarks/results/search-throughput-cfr.md").read_text()
    assert "env: replay" in md and "pass@1" not in md


@pytest.mark.parametrize("env, label", [
    ("leandojo", "pass@1"), ("replay", "replay proof rate"),
    (None, "proof rate (env unknown)"), ("", "proof rate (env unknown)"),
    ("unknown", "proof rate (env unknown)"), ("lean-repl", "proof rate (env lean-repl)"),
])
def test_rate_label_gives_pass_at_1_to_lean_only(env, label):
    assert rate_label(env) == label


def test_summary_without_env_is_not_pass_at_1(tmp_path):
    f = ResultsFile(tmp_path / "old-run" / "results.jsonl")
    f.append(_rec("a::a", "proved", env=None))
    md = markdown(summarize_dir(tmp_path))
    assert "## env: unknown" in md and "| proof rate (env unknown) |" in md and "pass@1" not in md
