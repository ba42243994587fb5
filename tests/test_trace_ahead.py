"""Tracing ahead in the driver, before Ray starts (issue 16, defect 2).

lean-dojo traces a repository on a cache miss when a Dojo opens, and tracing asserts that Ray
is not initialized (utils.py:71): inside a ProverWorker it always fails. The benchmark driver
therefore traces every repository its theorems come from before it connects to Ray.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from omegaconf import OmegaConf

from prover.search import benchmark
from prover.search.settings import SearchBenchmarkConfig
from tests.fake_lean_dojo import FakeLean


class _Stop(Exception):
    pass


def _repo(path):
    path.mkdir()
    (path / "lakefile.lean").write_text("import Lake\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path, check=True,
                       capture_output=True)
    return str(path.resolve()), subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True,
                                               text=True, check=True).stdout.strip()


def test_benchmark_traces_every_repository_before_ray_starts(tmp_path, monkeypatch, capsys):
    lean = FakeLean().install(monkeypatch)
    a, b = _repo(tmp_path / "a"), _repo(tmp_path / "b")
    listing = tmp_path / "theorems.jsonl"
    rows = [{"url": url, "commit": commit, "file_path": "A.lean", "full_name": f"t{i}", "start": [1, 1]}
            for i, (url, commit) in enumerate([a, b, a])]
    listing.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = tmp_path / "model"  # a model folder, as run_one checks before tracing (never loaded here)
    model.mkdir()
    (model / "config.json").write_text("{}")
    cfg = OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), {
        "theorems": {"source": str(listing)}, "out_dir": str(tmp_path / "runs"), "progress": False,
        "env": {"name": "leandojo", "leandojo": {"build_deps": False}}, "generator": {"model": str(model)}})
    monkeypatch.setattr(benchmark, "require_env", lambda name: None)

    class Session:  # connecting to Ray is where searches begin: stop there
        def ensure(self):
            raise _Stop(list(lean.traces))

    with pytest.raises(_Stop) as stopped:
        benchmark.run_one(cfg, Session())
    assert sorted(stopped.value.args[0]) == sorted([(a[0], a[1], False), (b[0], b[1], False)])
    said = capsys.readouterr().out
    assert "tracing 2 repositories ahead" in said
