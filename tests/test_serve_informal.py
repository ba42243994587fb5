"""Informal mode of the search service (issue 51): POST /search with `mode: informal` answers
through the served `informal` retriever, and each hit carries its docstring and matched words."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from prover.config import load_config
from prover.serve.app import create_app
from prover.serve.server import BackgroundServer
from prover.serve.service import SearchService
from prover.serve.settings import ServeConfig

QUERY = "addition is associative"


@pytest.fixture(scope="module")
def service(mini_root: Path, one_thread):
    cfg = load_config(ServeConfig, None, [f"retriever.corpus={mini_root}", "retrievers=[bm25,informal]", "rerank=false",
                                          "retriever.device=cpu"])
    svc = SearchService(cfg)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def client(service):
    with BackgroundServer(create_app(service)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


def test_informal_mode_answers_with_matched_words(client, service):
    r = client.post("/search", json={"state": QUERY, "k": 10, "mode": "informal"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["retriever"] == "informal"
    want = service.search(QUERY, 10, retriever="informal").hits
    assert [h["full_name"] for h in body["results"]] == [h.premise.full_name for h in want]
    top = {h["full_name"]: h for h in body["results"]}
    assert "add_assoc" in top
    assert "associative→assoc" in top["add_assoc"]["matched"]
    assert all(h["matched"] for h in body["results"])  # every hit says why it matched


def test_formal_mode_is_unchanged(client, service):
    r = client.post("/search", json={"state": "⊢ a * b = b * a", "k": 3, "retriever": "bm25"})
    assert r.status_code == 200
    assert all(h["matched"] == [] and h["doc"] == "" for h in r.json()["results"])
    bad = client.post("/search", json={"state": QUERY, "mode": "words"})
    assert bad.status_code in (400, 422) and "\n" not in bad.json().get("error", "")
