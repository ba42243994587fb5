"""The premise search service over HTTP: a real uvicorn server on a free loopback port.

Ranked results must equal the in-process retriever's (built through the registry, as
`prover retriever eval` builds it) for the same state; bad input gets a 4xx with a clear
message and the service keeps answering; reload swaps in a new corpus and index only with
the admin token; the OpenAPI schema and the page are served.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from omegaconf import OmegaConf

from conftest import REPO
from prover.cli import build_parser
from prover.commands.serve import serve_config
from prover.config import load_config
from retriever.settings import RetrieverConfig
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.serve.app import create_app
from prover.utils.batching import Batcher
from prover.serve.errors import StateTooLong
from prover.serve.loading import load
from prover.serve.server import BackgroundServer
from prover.serve.service import SearchService
from prover.serve.settings import ServeBenchmarkConfig, ServeConfig
from retriever.registry import build_retriever
from serve_process import serving
from serve_models import index_other_corpus, models_yaml, standin_run, subset_corpus

TOKEN = "s3cret-token"


# ---------------------------------------------------------------------------------------
# Fixtures: a stand-in run over mathlib-src-mini, a service over it, a server, and the
# in-process retrievers the answers are compared with.

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, mini_root: Path) -> Path:
    return standin_run(tmp_path_factory, mini_root)


@pytest.fixture(scope="module")
def models(tmp_path_factory, run_dir: Path, mini_root: Path) -> Path:
    return models_yaml(tmp_path_factory.mktemp("models"), run_dir, mini_root)


def make_cfg(run_dir: Path, corpus: Path, models: Path, *overrides: str):
    return load_config(ServeConfig, None, [f"retriever.run_dir={run_dir}", f"retriever.corpus={corpus}",
                                           f"retriever.models={models}", "retrievers=[cfr,bm25,hybrid]",
                                           "retriever.device=cpu", *overrides])


@pytest.fixture(scope="module")
def service(run_dir: Path, mini_root: Path, models: Path, one_thread):
    svc = SearchService(make_cfg(run_dir, mini_root, models))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def server(service):
    with BackgroundServer(create_app(service)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def reference(run_dir: Path, mini_root: Path, models: Path, service):
    """The registry's own retrievers over their own corpus copy: nothing shared with the service."""
    corpus = Dataset(mini_root).corpus()
    section = OmegaConf.merge(OmegaConf.structured(RetrieverConfig),
                              {"models": str(models), "run_dir": str(run_dir), "device": "cpu"})
    cfg = OmegaConf.create({"retriever": section})
    return {name: build_retriever(name, corpus, cfg) for name in ("cfr", "bm25", "hybrid", "cfr+car")}


@pytest.fixture(scope="module")
def states(mini_root: Path) -> list[str]:
    theorems = Dataset(mini_root).theorems("random/test")
    picked = [t.traced_tactics[0].state_before for t in theorems[:40:10] if t.traced_tactics]
    return [ServeConfig.example_state, *picked]


def post(client: httpx.Client, **body) -> httpx.Response:
    return client.post("/search", json=body)


def names(results: list[dict]) -> list[str]:
    return [r["full_name"] for r in results]


# ---------------------------------------------------------------------------------------
# Search answers equal the in-process retriever's.

@pytest.mark.parametrize("retriever,rerank,ref", [("cfr", False, "cfr"), ("bm25", False, "bm25"),
                                                  ("hybrid", False, "hybrid"), ("cfr", True, "cfr+car")])
def test_search_equals_in_process_retriever(client, reference, states, retriever, rerank, ref):
    k = 12
    for state in states:
        r = post(client, state=state, k=k, rerank=rerank, retriever=retriever)
        assert r.status_code == 200, r.text
        body = r.json()
        want = reference[ref].retrieve([state], k, [None])[0]
        assert (body["retriever"], body["rerank"], body["k"]) == (retriever, rerank, k)
        assert names(body["results"]) == [h.premise.full_name for h in want]
        assert [h["index"] for h in body["results"]] == [h.index for h in want]
        assert [h["score"] for h in body["results"]] == pytest.approx([h.score for h in want], rel=1e-5, abs=1e-6)
        assert [h["rank"] for h in body["results"]] == list(range(1, k + 1))


def test_rerank_changes_the_order_and_car_suffix_is_an_alias(client, reference, states):
    state = states[1]
    plain = post(client, state=state, k=8, retriever="cfr").json()
    reranked = post(client, state=state, k=8, retriever="cfr", rerank=True).json()
    alias = post(client, state=state, k=8, retriever="cfr+car").json()
    assert names(alias["results"]) == names(reranked["results"])
    assert alias["rerank"] is True and alias["retriever"] == "cfr"
    # CAR re-orders CFR's top k1=8 (the stand-in's car.k1): same premises, CAR's order.
    assert set(names(reranked["results"])) == set(names(plain["results"]))
    assert names(reranked["results"]) != names(plain["results"])


def test_hits_carry_statement_kind_and_location(client, service):
    body = post(client, state=ServeConfig.example_state, k=5, retriever="bm25").json()
    corpus = service.loaded.corpus
    for hit in body["results"]:
        p = corpus.premises[hit["index"]]
        assert hit["full_name"] == p.full_name
        assert hit["statement"] == p.render()
        assert hit["statement"].startswith("<VAR>") and "<GOAL>" in hit["statement"]
        assert (hit["kind"], hit["path"], hit["line"], hit["end_line"]) == (p.kind, p.path, p.start[0], p.end[0])
        assert hit["args"] == list(p.args) and hit["goal"] == p.goal


def test_default_retriever_and_k(client, reference, states):
    body = post(client, state=states[0]).json()
    assert (body["retriever"], body["rerank"], body["k"]) == ("cfr", False, 10)
    assert names(body["results"]) == [h.premise.full_name for h in reference["cfr"].retrieve([states[0]], 10, [None])[0]]


def test_concurrent_requests_are_batched_and_answered_right(client, service, reference, states):
    """16 clients at once: the model thread batches them, and each still gets its own answer."""
    want = {s: reference["cfr"].retrieve([s], 10, [None])[0] for s in states}
    barrier = threading.Barrier(16)
    got: list[tuple[str, dict]] = []

    def one(i: int) -> None:
        state = states[i % len(states)]
        with httpx.Client(base_url=str(client.base_url), timeout=60) as c:
            barrier.wait()
            got.append((state, post(c, state=state, k=10, retriever="cfr").json()))

    before = service.health()["batching"]["batches"]
    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 16
    for state, body in got:
        ref = want[state]
        # A batch pads states to a common length: scores may move in the last float bits, so
        # a rank may differ only between premises the reference itself scores as tied.
        assert [h["score"] for h in body["results"]] == pytest.approx([h.score for h in ref], abs=1e-5)
        for hit, r in zip(body["results"], ref):
            assert hit["full_name"] == r.premise.full_name or abs(hit["score"] - r.score) < 1e-5
    stats = service.health()["batching"]
    assert stats["batches"] - before < 16  # some requests shared a model call
    assert stats["largest_batch"] > 1


# ---------------------------------------------------------------------------------------
# Bad input: a 4xx with a clear message, and the service keeps serving.

BAD = [
    ({"state": ""}, 400, "state", "state is empty"),
    ({"state": "  \n\t "}, 400, "state", "state is empty"),
    ({"state": "x" * 20_001}, 413, "state", "20,001 characters; the limit is 20,000"),
    ({"state": "⊢ True", "k": 0}, 400, "k", "k must be an integer from 1 to 100"),
    ({"state": "⊢ True", "k": 101}, 400, "k", "k must be an integer from 1 to 100"),
    ({"state": "⊢ True", "k": -3}, 400, "k", "k must be an integer from 1 to 100"),
    ({"state": "⊢ True", "k": "5"}, 422, "k", "k: Input should be a valid integer"),
    ({"state": "⊢ True", "k": 2.5}, 422, "k", "k: Input should be a valid integer"),
    ({"state": "⊢ True", "k": True}, 422, "k", "k: Input should be a valid integer"),
    ({"state": "⊢ True", "retriever": "nope"}, 400, "retriever", "unknown retriever 'nope'; this service has cfr, bm25, hybrid"),
    ({"state": "⊢ True", "retriever": "bm25-plain"}, 400, "retriever", "unknown retriever 'bm25-plain'"),
    # Informal search not served: which setting loads it, and a config that does (issue 61).
    ({"state": "two is prime", "mode": "informal"}, 400, "mode",
     "informal search is not loaded in this service: start it with informal among its retrievers "
     "(`--retrievers bm25,informal`, or `retrievers:` in its config; configs/serve/demo.yaml loads it)"),
    ({"state": "⊢ True", "rerank": "yes"}, 422, "rerank", "rerank: Input should be a valid boolean"),
    ({"state": "⊢ True", "top_k": 5}, 422, "top_k", "top_k: Extra inputs are not permitted"),
    ({"k": 5}, 422, "state", "state: Field required"),
    ({"state": 42}, 422, "state", "state: Input should be a valid string"),
]


@pytest.mark.parametrize("body,status,field,message", BAD, ids=[f"{s}-{m[:24]}" for _, s, _, m in BAD])
def test_bad_request_is_4xx_with_a_clear_message(client, body, status, field, message):
    r = client.post("/search", json=body)
    assert r.status_code == status, r.text
    err = r.json()
    assert message in err["error"]
    assert err.get("field") == field


def test_malformed_and_oversized_bodies(client):
    r = client.post("/search", content=b"{not json", headers={"Content-Type": "application/json"})
    # The field is the body, not the character offset pydantic locates the error at (issue 48).
    assert r.status_code == 422 and r.json() == {
        "error": "body: not valid JSON (Expecting property name enclosed in double quotes at character 1)",
        "field": "body"}
    r = client.post("/search", content=b"x" * 1_000_001, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "1,000,001 bytes is over the 1,000,000-byte limit" in r.json()["error"]


def test_service_keeps_serving_after_bad_input(client, reference, states):
    before = client.get("/health").json()["counts"]
    for body, *_ in BAD[:6]:
        client.post("/search", json=body)
    r = post(client, state=states[2], k=7, retriever="bm25")
    assert r.status_code == 200
    assert names(r.json()["results"]) == [h.premise.full_name for h in reference["bm25"].retrieve([states[2]], 7, [None])[0]]
    after = client.get("/health").json()["counts"]
    assert after["rejected"] - before["rejected"] == 6
    assert after["failed"] == 0


def test_limits_are_configurable(service):
    strict = SearchService(OmegaConf.merge(service.cfg, {"limits": {"max_state_chars": 50, "max_k": 3}}),
                           loaded=service.loaded)
    try:
        assert len(strict.search("⊢ " + "a" * 48, 3, retriever="bm25").hits) == 3  # exactly 50 chars
        with pytest.raises(StateTooLong, match="51 characters; the limit is 50"):
            strict.search("⊢ " + "a" * 49, 3, retriever="bm25")
        with pytest.raises(Exception, match="k must be an integer from 1 to 3"):
            strict.search("⊢ True", 4, retriever="bm25")
    finally:
        strict.close()


def test_state_at_the_limit_is_served(client):
    r = post(client, state="⊢ " + "a" * 19_998, k=3, retriever="bm25")
    assert r.status_code == 200 and len(r.json()["results"]) == 3


# ---------------------------------------------------------------------------------------
# Premise lookup, health, schema, page.

def test_premise_by_name(client, service):
    corpus = service.loaded.corpus
    p = next(p for p in corpus.premises if "." in p.full_name and any(ord(c) > 127 for c in p.full_name))
    r = client.get(f"/premise/{p.full_name}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["full_name"] == p.full_name
    got = body["premises"][0]
    assert (got["statement"], got["path"], got["line"], got["kind"]) == (p.render(), p.path, p.start[0], p.kind)
    missing = client.get("/premise/Definitely.not.a.premise")
    assert missing.status_code == 404
    assert "no premise named 'Definitely.not.a.premise'" in missing.json()["error"]


def test_health(client, service):
    h = client.get("/health").json()
    assert h["status"] == "ok"
    assert h["n_premises"] == len(service.loaded.corpus) == 9375
    assert h["retrievers"] == ["cfr", "bm25", "hybrid"]
    assert h["rerank"] is True and h["admin"] is False
    assert h["limits"] == {"max_state_chars": 20_000, "max_k": 100, "default_k": 10}


def test_openapi_schema(client):
    schema = client.get("/openapi.json").json()
    assert {"/search", "/premise/{full_name}", "/health", "/admin/reload", "/generate", "/encode"} <= set(schema["paths"])
    req = schema["components"]["schemas"]["SearchRequest"]
    assert set(req["properties"]) == {"state", "k", "rerank", "retriever", "mode", "file_path", "position", "imports"}
    assert req["required"] == ["state"]
    hit = schema["components"]["schemas"]["Hit"]
    assert {"full_name", "statement", "kind", "path", "line", "score", "rank"} <= set(hit["properties"])
    assert "400" in schema["paths"]["/search"]["post"]["responses"]


def test_page_is_self_contained_with_the_example_state(client, service):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "f : α → β\nhf : Function.Injective f" in page  # the example state, prefilled
    assert "__EXAMPLE_STATE__" not in page and 'max="100"' in page
    for external in ('src="http', "src='http", 'href="http', "@import", "cdn"):
        assert external not in page.lower()


# ---------------------------------------------------------------------------------------
# Reload: only with a token; a new corpus and index without restarting.

def test_reload_is_disabled_without_a_token(client):
    r = client.post("/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 404 and "admin endpoints are disabled" in r.json()["error"]


@pytest.fixture(scope="module")
def small(tmp_path_factory, run_dir: Path, mini_root: Path) -> tuple[Path, Path]:
    """A new corpus (the first 25 files of mini) and a run folder indexing it with the same models."""
    tmp = tmp_path_factory.mktemp("small")
    corpus = subset_corpus(mini_root, tmp / "data", 25)
    return corpus, index_other_corpus(run_dir, corpus, tmp / "run")


def test_reload_needs_the_token_and_swaps_in_a_new_corpus(service, small, models, reference):
    corpus_dir, small_run = small
    cfg = OmegaConf.merge(service.cfg, {"admin_token": TOKEN})
    svc = SearchService(cfg, loaded=service.loaded)
    try:
        with BackgroundServer(create_app(svc)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
            assert c.post("/admin/reload").status_code == 403
            assert c.post("/admin/reload", headers={"Authorization": "Bearer wrong"}).status_code == 403
            r = c.post("/admin/reload", headers={"X-Admin-Token": "wrong"})
            assert r.status_code == 403 and "wrong admin token" in r.json()["error"]
            assert c.get("/health").json()["generation"] == 0

            # Searches keep being answered while the reload runs.
            answers: list[httpx.Response] = []
            stop = threading.Event()

            def keep_searching() -> None:
                with httpx.Client(base_url=srv.url, timeout=120) as c2:
                    while not stop.is_set():
                        answers.append(post(c2, state=ServeConfig.example_state, k=5, retriever="bm25"))

            searcher = threading.Thread(target=keep_searching)
            searcher.start()
            try:
                r = c.post("/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"},
                           json={"corpus": str(corpus_dir), "index": str(small_run)})
            finally:
                stop.set()
                searcher.join()
            assert r.status_code == 200, r.text
            new = Dataset(corpus_dir).corpus()
            assert r.json()["generation"] == 1 and r.json()["n_premises"] == len(new) < 9375
            assert answers and all(a.status_code == 200 for a in answers)
            gens = [a.json()["generation"] for a in answers]
            assert gens == sorted(gens)  # never back to the old load once the new one answers

            h = c.get("/health").json()
            assert (h["generation"], h["n_premises"], h["corpus"]) == (1, len(new), str(corpus_dir))
            # The new corpus is searched, exactly as an in-process retriever over it ranks.
            section = OmegaConf.merge(OmegaConf.structured(RetrieverConfig),
                                      {"models": str(models), "run_dir": str(small_run), "device": "cpu"})
            for name, rerank, ref in (("cfr", False, "cfr"), ("cfr", True, "cfr+car"), ("bm25", False, "bm25")):
                want = build_retriever(ref, new, OmegaConf.create({"retriever": section})).retrieve(
                    [ServeConfig.example_state], 6, [None])[0]
                body = post(c, state=ServeConfig.example_state, k=6, retriever=name, rerank=rerank).json()
                assert body["generation"] == 1
                assert names(body["results"]) == [h.premise.full_name for h in want]

            # An index built for another corpus is refused; the service keeps the current load.
            r = c.post("/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"},
                       json={"corpus": str(service.loaded.corpus_path), "index": str(small_run)})
            assert r.status_code == 409 and "still serving generation 1" in r.json()["error"]
            assert "built for another corpus" in r.json()["error"]
            r = c.post("/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"},
                       json={"index": "/no/such/run"})
            assert r.status_code == 400 and "does not exist" in r.json()["error"]
            body = post(c, state=ServeConfig.example_state, k=3, retriever="bm25")
            assert body.status_code == 200 and body.json()["generation"] == 1
    finally:
        svc.close()


# ---------------------------------------------------------------------------------------
# Startup, the CLI, the batcher.

def test_missing_index_is_refused_with_the_command_to_build_it(tmp_path, run_dir, mini_root, models):
    bare = tmp_path / "run"
    (bare / "cfr").mkdir(parents=True)
    (bare / "cfr" / "model").symlink_to(run_dir / "cfr" / "model", target_is_directory=True)
    with pytest.raises(UserInputError, match="prover retriever index"):
        load(make_cfg(bare, mini_root, models))
    with pytest.raises(ValueError, match="need trained models: pass --index"):
        load(load_config(ServeConfig, None, [f"retriever.corpus={mini_root}"]))
    with pytest.raises(ValueError, match="cannot serve retriever 'cfr\\+car'"):
        load(make_cfg(run_dir, mini_root, models, "retrievers=[cfr+car]", "retriever.name=cfr+car"))


def test_index_may_name_the_cfr_index_folder(run_dir, mini_root, models):
    loaded = load(make_cfg(run_dir / "cfr" / "index", mini_root, models, "retrievers=[cfr]", "load_car=false"))
    assert loaded.index_path == str(run_dir) and list(loaded.first_stages) == ["cfr"]


def test_cli_flags_and_token_from_the_environment(monkeypatch):
    args = build_parser().parse_args(["serve", "--index", "/runs/r", "--corpus", "/data/mini", "--port", "9001",
                                      "--retrievers", "cfr,bm25", "limits.max_k=50"])
    assert args.func.__name__ == "_cmd_serve"
    monkeypatch.setenv("PROVER_SERVE_TOKEN", "from-env")
    cfg = serve_config(args.config, args.index, args.corpus, args.host, args.port, args.retrievers, args.overrides)
    assert (cfg.retriever.run_dir, cfg.retriever.corpus, cfg.port, cfg.host) == ("/runs/r", "/data/mini", 9001,
                                                                                 "127.0.0.1")
    assert list(cfg.retrievers) == ["cfr", "bm25"] and cfg.limits.max_k == 50
    assert cfg.admin_token == "from-env"
    assert list(cfg.generators) == []
    args = build_parser().parse_args(["serve", "--corpus", "/data/mini", "--generator", "tiny=/runs/g/model",
                                      "--generator", "/runs/h/model"])
    cfg = serve_config(args.config, args.index, args.corpus, args.host, args.port, args.retrievers,
                       args.overrides, args.generator)
    assert [(g.name, g.model, g.num_tactics, g.batching.max_queued) for g in cfg.generators] == [
        ("tiny", "/runs/g/model", 8, 8), ("generator", "/runs/h/model", 8, 8)]
    with pytest.raises(UserInputError, match="expected MODEL or NAME=MODEL"):
        serve_config(None, None, None, None, None, None, [], ["tiny="])
    shipped = sorted((REPO / "configs" / "serve").glob("*.yaml"))
    assert len(shipped) >= 3
    for path in shipped:  # every shipped config fits its schema and resolves
        schema = ServeBenchmarkConfig if "serve" in OmegaConf.load(path) else ServeConfig
        cfg = OmegaConf.to_container(load_config(schema, str(path), []), resolve=True)
        assert (cfg.get("serve", cfg))["host"] == "127.0.0.1"


def test_prover_serve_command_binds_loopback(small, tmp_path):
    """`prover serve` as a user runs it, in its own process: BM25 over the small corpus."""
    corpus_dir, _ = small
    env = {**os.environ, "PROVER_SERVE_TOKEN": ""}
    with serving(["serve", "--corpus", str(corpus_dir), "--retrievers", "bm25"], REPO, env,
                 tmp_path / "serve.log") as (url, h):
        assert h["retrievers"] == ["bm25"] and h["rerank"] is False and h["admin"] is False
        r = httpx.post(f"{url}/search", json={"state": "⊢ True", "rerank": True})
        assert r.status_code == 400 and "re-ranking is not available" in r.json()["error"]
        r = httpx.post(f"{url}/search", json={"state": ServeConfig.example_state, "k": 4})
        assert r.status_code == 200 and len(r.json()["results"]) == 4
        assert f"{url}/" in (tmp_path / "serve.log").read_text()


def test_batcher_groups_by_key_and_reports_errors():
    calls: list[tuple[str, list[int]]] = []
    started, gate = threading.Event(), threading.Event()

    def run(key, items):
        started.set()
        gate.wait(5)
        if key == "boom":
            raise RuntimeError("model failed")
        calls.append((key, list(items)))
        return [i * 10 for i in items]

    b = Batcher(run, max_batch_size=3)
    try:
        first = b.submit("a", 0)  # occupies the thread while the rest queue up
        assert started.wait(5)
        futs = [b.submit(k, i) for k, i in (("a", 1), ("b", 2), ("a", 3), ("a", 4), ("a", 5), ("boom", 6))]
        gate.set()
        assert first.result(5) == 0
        assert [f.result(5) for f in futs[:5]] == [10, 20, 30, 40, 50]
        with pytest.raises(RuntimeError, match="model failed"):
            futs[5].result(5)
        # After [0]: a's first three queued jobs, then b (kept its place), then a's last.
        assert calls == [("a", [0]), ("a", [1, 3, 4]), ("b", [2]), ("a", [5])]
        assert b.stats()["largest_batch"] == 3
    finally:
        b.close()


def test_committed_load_results_cover_every_mode_and_shed_only_past_the_bound():
    result = json.loads((REPO / "benchmarks" / "results" / "serve-tiny.json").read_text())
    rows = {(r["mode"], r["clients"]): r for r in result["rows"]}
    modes = ("cfr", "cfr+car", "generate:tiny", "generate:tiny-unbounded")
    assert set(rows) == {(m, c) for m in modes for c in (1, 8, 64)}
    assert result["total_errors"] == 0 and all(r["errors"] == 0 and r["requests"] > 0 for r in rows.values())
    for r in rows.values():
        assert r["throughput_rps"] == pytest.approx(r["requests"] / r["seconds"], rel=0.01)
        assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"]
    # Only the bounded generator refuses work (503), and only with more clients than it admits.
    shed = {key: r["shed"] for key, r in rows.items() if r["shed"]}
    assert list(shed) == [("generate:tiny", 64)] and result["total_shed"] == shed[("generate:tiny", 64)]
    assert rows[("generate:tiny", 64)]["shed_p50_ms"] < rows[("generate:tiny", 1)]["p50_ms"]  # refused at once
    # What it answers waits far less than the unbounded generator's answers under the same load.
    assert rows[("generate:tiny", 64)]["p95_ms"] < rows[("generate:tiny-unbounded", 64)]["p50_ms"] / 2
    assert {"git_commit", "machine", "config", "wall_s", "startup_s"} <= set(result)
    assert not result["git_commit"].endswith("-dirty")
    md = (REPO / "benchmarks" / "results" / "serve-tiny.md").read_text()
    assert "| cfr+car | 64 |" in md and "| generate:tiny | 64 |" in md and "no bound on waiting requests" in md


def test_old_rerank_key_is_read_as_load_car_with_a_warning(caplog):
    """`rerank: true` in a serve config meant "load CAR"; it is `load_car` now (issue 48), and the
    old key still works, said once."""
    from prover.serve.loading import load_car_setting
    assert load_car_setting(load_config(ServeConfig, None, [])) is None  # default: when the run has one
    with caplog.at_level("WARNING"):
        assert load_car_setting(load_config(ServeConfig, None, ["rerank=false"])) is False
    assert "serve config key `rerank` is now `load_car`" in caplog.text
    assert load_car_setting(load_config(ServeConfig, None, ["load_car=true"])) is True
