"""The search service as a Ray Serve deployment: same app, same answers, behind Serve's proxy.

A fresh local Ray (address "local", never a cluster another test or job started) with one
BM25 replica over a small corpus; starting Ray and Serve takes ~30 s on a busy 2-core machine.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from prover.config import load_config
from prover.data.dataset import Dataset
from prover.serve.settings import ServeConfig
from retriever.registry import build_retriever
from serve_models import subset_corpus


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, mini_root: Path):
    import ray
    # Serve's controller kills a proxy not ready within 5 s; on a 2-core machine busy with
    # other jobs a fresh worker can take longer than that to start. The local Ray started
    # below inherits this.
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")

    from prover.serve import ray_serve
    corpus_dir = subset_corpus(mini_root, tmp_path_factory.mktemp("ray") / "data", 25)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = load_config(ServeConfig, None, [f"retriever.corpus={corpus_dir}", "retrievers=[bm25]", "retriever.name=bm25",
                                          "load_car=false", f"port={port}", "ray.address=local", "ray.num_cpus=0.5",
                                          "log_level=warning"])
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ray_serve.start(cfg)
        yield f"http://127.0.0.1:{port}", corpus_dir
    finally:
        ray_serve.stop()
        ray.shutdown()
        mp.undo()


def test_ray_serve_deployment_answers_like_the_in_process_retriever(deployed):
    url, corpus_dir = deployed
    corpus = Dataset(corpus_dir).corpus()
    want = build_retriever("bm25", corpus).retrieve([ServeConfig.example_state], 6, [None])[0]
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/search", json={"state": ServeConfig.example_state, "k": 6})
        assert r.status_code == 200, r.text
        assert [h["full_name"] for h in r.json()["results"]] == [h.premise.full_name for h in want]
        assert [h["score"] for h in r.json()["results"]] == pytest.approx([h.score for h in want], rel=1e-6)
        bad = c.post("/search", json={"state": "", "k": 6})
        assert bad.status_code == 400 and "state is empty" in bad.json()["error"]
        assert c.get("/health").json()["n_premises"] == len(corpus)
        assert c.post("/admin/reload").status_code == 404
        assert "/search" in c.get("/openapi.json").json()["paths"]
