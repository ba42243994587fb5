"""The `prover` command end to end, as a user runs it (subprocesses, real files)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import httpx
import pytest

from conftest import REPO
from serve_process import serving

from prover.data.theorem import load_theorems


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prover.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_help_lists_subcommands():
    out = run("--help")
    assert out.returncode == 0
    for sub in ("demo", "data", "retriever"):
        assert sub in out.stdout


def test_demo_trains_retrieves_and_searches_on_the_demo_library(demo_run):
    """The README's main job on a fresh HOME: BM25 beside a CFR trained on the spot, a tiny
    generator, a replay search on Ray, and a summary a person reads, with nothing noisy."""
    tmp_path, _, out = demo_run
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and " DEBUG " not in out.stderr
    assert "LOAD REPORT" not in out.stderr and "Token authentication" not in out.stderr
    demo = json.loads((tmp_path / "runs" / "demo" / "demo.json").read_text())
    rows = {r["retriever"]: r for r in demo["retrieval"]}
    assert list(rows) == ["bm25", "bm25-plain", "cfr-conventional"]
    assert all(r["n_queries"] == 13 for r in rows.values())
    # Ranking 99 premises at random puts a tenth of the gold in the top 10; trained CFR, most.
    assert rows["cfr-conventional"]["metrics"]["R@10"] > 0.5 and rows["bm25"]["metrics"]["R@10"] > 0.5
    assert demo["generator"]["steps"] > 0 and demo["generator"]["train_pairs"] == 105
    search = demo["search"]
    assert search["env"] == "replay" and search["theorems"] == 10 and search["rate_label"] == "replay proof rate"
    lines = out.stdout.splitlines()
    assert any(line.split()[:1] == ["bm25"] for line in lines)
    assert any(line.split()[:1] == ["cfr-conventional"] for line in lines)
    assert "replay simulator: not pass@1" in out.stdout and "of 10 theorems proved" in out.stdout
    assert str(tmp_path / "cache") in out.stdout  # where the demo library is
    assert "done in" in out.stdout
    # Each path it made, printed, and there (issue 61: the summary said only runs/demo/).
    paths = demo["paths"]
    assert paths["generator model (generator suggest --model)"] == "runs/demo/generator/generator/model"
    assert paths["a proof state (generator suggest --state)"] == "runs/demo/state.txt"
    for what, path in paths.items():
        assert (tmp_path / path).exists(), what
        assert any(line.split()[-1:] == [path] and what in line for line in lines), what
    state = (tmp_path / "runs/demo/state.txt").read_text(encoding="utf-8")
    assert state == demo["generator"]["example"]["state"] + "\n" and "⊢" in state


def test_the_readme_first_serve_line_starts_from_what_the_demo_left(demo_run):
    """`prover serve --config configs/serve/demo.yaml`, the README's first serve line, in the
    folder the demo ran in: it serves the demo's CFR and BM25 (a free port instead of 8000)."""
    tmp_path, env, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in (REPO / "README.md").read_text().splitlines() if l.startswith("prover serve"))
    words = shlex.split(line.split("#", 1)[0])
    assert words == ["prover", "serve", "--config", "configs/serve/demo.yaml"]
    with serving(words[1:], tmp_path, env, tmp_path / "serve.log", timeout_s=120) as (url, health):
        assert health["retrievers"] == ["cfr-conventional", "bm25", "informal"] and health["rerank"] is False
        r = httpx.post(f"{url}/search", json={"state": "a b : ℕ\n⊢ a + b = b + a", "k": 5})
        assert r.status_code == 200 and len(r.json()["results"]) == 5
        # Informal search is served too (issue 61: it was "unknown retriever 'informal'").
        r = httpx.post(f"{url}/search", json={"state": "addition is commutative", "mode": "informal", "k": 3})
        assert r.status_code == 200, r.text
        assert "Demo.MyNat.add_comm" in [h["full_name"] for h in r.json()["results"]]


def test_serve_names_the_command_that_makes_the_demo_run(tmp_path):
    (tmp_path / "configs").symlink_to(REPO / "configs")
    out = run("serve", "--config", "configs/serve/demo.yaml", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: --index runs/demo/retriever does not exist (expected a retriever run folder such as "
        "runs/retriever-tiny, or its cfr/index folder; `prover demo` makes it)"]


def test_demo_mistakes_are_answered_before_torch_loads():
    """A bad override is refused from the schema alone: torch is never imported."""
    code = ("import sys; from prover.cli import main; rc = main(['demo', {arg!r}]); "
            "print(rc, 'torch' in sys.modules)")
    for arg, message in [("foo", "error: 'foo' is not an override: overrides are key=value"),
                         ("retriever.name=bm26", "error: unknown config key 'retriever.name'"),
                         ("retrievers=[bm26]", "error: retrievers: unknown retriever 'bm26' for prover demo"),
                         ("search.theorems=many", "error: config key 'search.theorems'")]:
        done = subprocess.run([sys.executable, "-c", code.format(arg=arg)], capture_output=True,
                              text=True, timeout=60)
        assert done.stdout.split() == ["2", "False"], (arg, done.stdout, done.stderr)
        assert done.stderr.splitlines()[0].startswith(message), (arg, done.stderr)
        assert len(done.stderr.splitlines()) == 1


def test_data_stats_matches_metadata(data_root):
    out = run("data", "stats", "--data", str(data_root / "mathlib-src-mini"))
    assert out.returncode == 0, out.stderr
    assert "metadata.json: counts match" in out.stdout
    assert "9,375" in out.stdout and "2,750" in out.stdout


def test_data_split_writes_leandojo_layout(data_root, tmp_path):
    out = run("data", "split", "--data", str(data_root / "mathlib-src-mini"), "--strategy", "ri",
              "--out", str(tmp_path), "--n-val", "100", "--n-test", "100")
    assert out.returncode == 0, out.stderr
    assert "mean" in out.stdout.lower() and "ri" in out.stdout
    train = load_theorems(tmp_path / "ri" / "train.json")
    test = load_theorems(tmp_path / "ri" / "test.json")
    held_out = set(json.loads((tmp_path / "ri" / "split.json").read_text())["held_out_premises"])
    assert held_out and len(train) + len(test) + 100 == 2750
    assert not held_out & {p.full_name for t in train for tac in t.traced_tactics for p in tac.premises}
    # The corpus as the source has it: plain in the shared folder, gzipped in tests/fixtures/data.
    assert any((tmp_path / name).exists() for name in ("corpus.jsonl", "corpus.jsonl.gz"))


def test_retriever_eval_with_config_and_overrides(tmp_path):
    out = run("retriever", "eval", "--config", "configs/retrieval/bm25.yaml", "--out", str(tmp_path),
              "eval.ks=[1,10]", "eval.rankings_k=10")
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["retriever"] == "bm25" and metrics["n_queries"] == 13
    assert set(metrics["metrics"]) == {"R@1", "P@1", "F1@1", "nDCG@1", "R@10", "P@10", "F1@10",
                                       "nDCG@10", "MRR", "n_queries", "n_no_gold"}
    lines = (tmp_path / "rankings.jsonl").read_text().splitlines()
    assert len(lines) == 13 and len(json.loads(lines[0])["ranked"]) <= 10


def test_config_mistakes_are_one_line_errors(tmp_path):
    out = run("retriever", "eval", "--out", str(tmp_path), "eval.no_such_key=1")
    assert out.returncode == 2
    assert out.stderr.startswith("error:") and "no_such_key" in out.stderr
    assert "Traceback" not in out.stderr
    out = run("retriever", "eval", "--retriever", "nope", "--out", str(tmp_path))
    assert out.returncode == 2 and "unknown retriever 'nope'" in out.stderr
