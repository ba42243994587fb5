"""LeanCopilot's external-model protocol on `prover serve`, and searches with a theorem context.

Requests to /generate and /encode are built byte for byte as LeanCopilot builds them
(`LeanCopilot/Models/External.lean`: `(toJson req).pretty 99999999999999999`, sent by curl with
`accept: application/json` and `Content-Type: application/json`), and replies are read with its
field names. Answers must equal the in-process generator's and retriever's; a prefix constrains
every tactic; a context removes the premises its file cannot use; bad requests get a 4xx and
the service keeps serving; a full queue answers 503 with Retry-After at once.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import math
import threading
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from generator.inputs import format_input
from generator.model import TacticGenerator
from prover.config import load_config
from retriever.settings import RetrieverConfig
from prover.data.corpus import module_name
from prover.data.dataset import Dataset
from prover.serve.app import create_app
from prover.utils.batching import Batcher, QueueFull
from prover.serve.server import BackgroundServer
from prover.serve.service import SearchService
from prover.serve.settings import ServeConfig
from retriever.base import ImportsContext, TheoremContext
from retriever.registry import build_retriever
from search_doubles import save_untrained_generator
from serve_models import models_yaml, standin_run

STATE = "n : ℕ\n⊢ gcd n n = n"  # LeanCopilot's own example state
LEAN_HEADERS = {"accept": "application/json", "Content-Type": "application/json"}


# ---------------------------------------------------------------------------------------
# LeanCopilot's request bytes.

def lean_string(s: str) -> str:
    """Lean's `Json.renderString`: `"`, `\\`, newline and carriage return escaped, other
    characters below 0x20 as `\\u00xx` (lowercase hex), everything else as is (UTF-8)."""
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def lean_request(**fields: str) -> bytes:
    """`(toJson req).pretty 99999999999999999` for a structure of string fields. A Lean `Json`
    object is a map ordered by key, and `Json.render` conses its fields in a left fold, so they
    come out in descending key order; at that width every `Format.line` is one space."""
    items = sorted(fields.items(), reverse=True)
    return ("{" + ", ".join(f"{lean_string(k)}: {lean_string(v)}" for k, v in items) + "}").encode()


def test_lean_request_bytes():
    assert lean_request(name="g", input="a\n⊢ \"b\"\t", prefix="rw [") == (
        '{"prefix": "rw [", "name": "g", "input": "a\\n⊢ \\"b\\"\\u0009"}'.encode())
    assert json.loads(lean_request(name="g", input="x\r\\")) == {"name": "g", "input": "x\r\\"}


def generate_as_leancopilot(client: httpx.Client, name: str, state: str, prefix: str = "") -> list[tuple[str, float]]:
    """`ExternalGenerator.generate`: the request, and the reply read as `GeneratorResponse`."""
    r = client.post("/generate", content=lean_request(name=name, input=state, prefix=prefix), headers=LEAN_HEADERS)
    assert r.status_code == 200, r.text
    outputs = json.loads(r.text)["outputs"]
    pairs = [(g["output"], g["score"]) for g in outputs]
    for output, score in pairs:  # Lean reads `output : String` and `score : Float`
        assert isinstance(output, str) and isinstance(score, float) and math.isfinite(score)
    return pairs


def encode_as_leancopilot(client: httpx.Client, name: str, state: str) -> list[float]:
    """`ExternalEncoder.encode`: the request, and the reply read as `EncoderResponse`."""
    r = client.post("/encode", content=lean_request(name=name, input=state), headers=LEAN_HEADERS)
    assert r.status_code == 200, r.text
    outputs = json.loads(r.text)["outputs"]
    assert all(isinstance(x, float) and math.isfinite(x) for x in outputs)
    return outputs


# ---------------------------------------------------------------------------------------
# Fixtures: the stand-in retriever run, an untrained tiny generator, a service over both.

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, mini_root: Path) -> Path:
    return standin_run(tmp_path_factory, mini_root)


@pytest.fixture(scope="module")
def models(tmp_path_factory, run_dir: Path, mini_root: Path) -> Path:
    return models_yaml(tmp_path_factory.mktemp("models"), run_dir, mini_root)


@pytest.fixture(scope="module")
def generator_dir(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    return save_untrained_generator(tmp_path_factory.mktemp("generator") / "model")


def make_cfg(run_dir: Path, corpus: Path, models: Path, generator_dir: Path, **generator):
    cfg = load_config(ServeConfig, None, [f"retriever.run_dir={run_dir}", f"retriever.corpus={corpus}",
                                          f"retriever.models={models}", "retrievers=[cfr,bm25]",
                                          "retriever.device=cpu"])
    gens = [{"name": "tiny-tacgen", "model": str(generator_dir), "num_tactics": 4, **generator},
            {"name": "tiny-tacgen+cfr", "model": str(generator_dir), "num_tactics": 4,
             "premises": {"name": "cfr", "k": 3}}]
    return OmegaConf.merge(cfg, {"generators": gens})


@pytest.fixture(scope="module")
def service(run_dir, mini_root, models, generator_dir, one_thread):
    svc = SearchService(make_cfg(run_dir, mini_root, models, generator_dir))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def client(service):
    with BackgroundServer(create_app(service)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def generator(generator_dir) -> TacticGenerator:
    """The same generator, loaded apart from the service: what the answers are compared with."""
    return TacticGenerator.load(generator_dir)


@pytest.fixture(scope="module")
def reference(run_dir, mini_root, models, service):
    corpus = Dataset(mini_root).corpus()
    section = OmegaConf.merge(OmegaConf.structured(RetrieverConfig),
                              {"models": str(models), "run_dir": str(run_dir), "device": "cpu"})
    cfg = OmegaConf.create({"retriever": section})
    return {name: build_retriever(name, corpus, cfg) for name in ("cfr", "bm25", "cfr+car")}


# ---------------------------------------------------------------------------------------
# /generate and /encode, as LeanCopilot calls them.

def test_generate_as_leancopilot_calls_it(client, generator):
    got = generate_as_leancopilot(client, "tiny-tacgen", STATE)
    want = generator.generate([format_input(STATE, [], generator.input_cfg.max_bytes)[0]], num_tactics=4)[0]
    assert [t for t, _ in got] == [s.tactic for s in want] and got
    assert [s for _, s in got] == pytest.approx([s.logprob for s in want], abs=1e-4)
    # Scores are log-probabilities of the whole tactic: best first, below 0, and what the
    # model gives each tactic when scored on its own.
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
    assert scores == pytest.approx(generator.tactic_logprobs([STATE] * len(got), [t for t, _ in got]), abs=1e-4)
    assert len({t for t, _ in got}) == len(got)


def test_prefix_at_the_output_limit(generator):
    limit = generator.input_cfg.max_target_bytes
    out = generator.generate([STATE], num_tactics=2, prefix="y" * limit)[0]
    assert out and all(s.tactic.startswith("y" * limit) for s in out)
    with pytest.raises(ValueError, match=f"prefix of {limit + 1} bytes is longer than the tactics"):
        generator.generate([STATE], prefix="y" * (limit + 1))


def test_generate_with_a_prefix(client, generator):
    for prefix in ("rw [", "simp only [Nat.", "exact ⟨"):
        got = generate_as_leancopilot(client, "tiny-tacgen", STATE, prefix)
        assert got and all(t.startswith(prefix) for t, _ in got), (prefix, got)
        want = generator.generate([STATE], num_tactics=4, prefix=prefix)[0]
        assert [t for t, _ in got] == [s.tactic for s in want]
        full = generator.tactic_logprobs([STATE] * len(got), [t for t, _ in got])
        assert [s for _, s in got] == pytest.approx(full, abs=1e-4)  # the prefix's bytes are scored too
    # Without a prefix the model's best tactic starts otherwise: the prefix really constrains.
    free = generate_as_leancopilot(client, "tiny-tacgen", STATE)
    assert not any(t.startswith("rw [") for t, _ in free)
    # `prefix: null` (LeanCopilot's Python server treats it as "") and no prefix at all both work.
    for body in ({"name": "tiny-tacgen", "input": STATE, "prefix": None}, {"name": "tiny-tacgen", "input": STATE}):
        r = client.post("/generate", json=body)
        assert r.status_code == 200 and [o["output"] for o in r.json()["outputs"]] == [t for t, _ in free]


def test_generator_with_retrieved_premises(client, generator, reference):
    """`premises: {name: cfr, k: 3}` puts CFR's top 3 premises before the state, as proof search does."""
    got = generate_as_leancopilot(client, "tiny-tacgen+cfr", STATE)
    premises = [h.premise for h in reference["cfr"].retrieve([STATE], 3, [None])[0]]
    text, kept = format_input(STATE, premises, generator.input_cfg.max_bytes)
    assert kept >= 1 and text.endswith(STATE)
    want = generator.generate([text], num_tactics=4)[0]
    assert [t for t, _ in got] == [s.tactic for s in want]
    assert [s for _, s in got] == pytest.approx([s.logprob for s in want], abs=1e-4)


def test_encode_as_leancopilot_calls_it(client, reference, service):
    vec = encode_as_leancopilot(client, "cfr", STATE)
    want = reference["cfr"].encode_states([STATE])[0]
    assert len(vec) == len(want) and np.allclose(vec, want, atol=1e-5)
    # It is the vector /search ranks with: its best premise by inner product is /search's first.
    scores = reference["cfr"].premise_vectors @ np.asarray(vec, dtype=np.float32)
    top = client.post("/search", json={"state": STATE, "k": 1, "retriever": "cfr"}).json()["results"][0]
    assert top["index"] == int(np.argmax(scores))


def test_concurrent_generations_are_batched_and_answered_right(client, service, generator):
    states = [STATE, "⊢ True", "a b : ℕ\n⊢ a + b = b + a", "p q : Prop\nhp : p\n⊢ p ∨ q"]
    want = {s: [x.tactic for x in generator.generate([s], num_tactics=4)[0]] for s in states}
    before = service.health()["batching"]["batches"]
    barrier = threading.Barrier(8)
    got: list[tuple[str, list[str]]] = []

    def one(i: int) -> None:
        state = states[i % len(states)]
        with httpx.Client(base_url=str(client.base_url), timeout=60) as c:
            barrier.wait()
            got.append((state, [t for t, _ in generate_as_leancopilot(c, "tiny-tacgen", state)]))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(tactics == want[state] for state, tactics in got)
    assert service.health()["batching"]["batches"] - before < 8  # some shared a model call


# ---------------------------------------------------------------------------------------
# Bad requests: a 4xx with a clear message, and the service keeps serving.

BAD = [
    ("/generate", {"name": "tiny-tacgen", "input": "", "prefix": ""}, 400, "input", "input is empty"),
    ("/generate", {"name": "tiny-tacgen", "input": " \n", "prefix": ""}, 400, "input", "input is empty"),
    ("/generate", {"name": "tiny-tacgen", "input": "x" * 20_001, "prefix": ""}, 413, "input",
     "input has 20,001 characters; the limit is 20,000"),
    ("/generate", {"name": "tiny-tacgen", "input": STATE, "prefix": "x" * 33}, 400, "prefix",
     "prefix has 33 bytes; generator 'tiny-tacgen' writes tactics of at most 32 bytes"),
    ("/generate", {"name": "tiny-tacgen", "input": STATE, "prefix": "⊢" * 11}, 400, "prefix",
     "prefix has 33 bytes"),
    ("/generate", {"name": "reprover", "input": STATE, "prefix": ""}, 404, "name",
     "unknown generator 'reprover'; this service has: tiny-tacgen, tiny-tacgen+cfr"),
    ("/generate", {"name": "tiny-tacgen", "input": STATE, "prefx": "rw"}, 422, "prefx",
     "prefx: Extra inputs are not permitted"),
    ("/generate", {"input": STATE, "prefix": ""}, 422, "name", "name: Field required"),
    ("/encode", {"name": "bm25", "input": STATE}, 404, "name",
     "no encoder named 'bm25' (bm25 ranks without a state embedding); this service encodes with: cfr"),
    ("/encode", {"name": "nope", "input": STATE}, 404, "name", "no encoder named 'nope'; this service encodes with: cfr"),
    ("/encode", {"name": "cfr", "input": ""}, 400, "input", "input is empty"),
    ("/encode", {"name": "cfr", "input": 42}, 422, "input", "input: Input should be a valid string"),
]


@pytest.mark.parametrize("path,body,status,field,message", BAD, ids=[f"{p[1:]}-{s}-{f}" for p, _, s, f, _ in BAD])
def test_bad_copilot_request_is_4xx_with_a_clear_message(client, path, body, status, field, message):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    assert message in r.json()["error"] and r.json().get("field") == field


def test_service_keeps_serving_after_bad_copilot_requests(client, generator):
    before = client.get("/health").json()["counts"]
    for path, body, status, *_ in BAD:
        assert client.post(path, json=body).status_code == status
    assert generate_as_leancopilot(client, "tiny-tacgen", "⊢ True")
    after = client.get("/health").json()
    rejected_by_us = sum(1 for _, _, status, _, _ in BAD if status != 422)  # 422s never reach the service
    assert after["counts"]["rejected"] - before["rejected"] == rejected_by_us
    assert after["counts"]["failed"] == 0
    assert after["generators"] == ["tiny-tacgen", "tiny-tacgen+cfr"] and after["encoders"] == ["cfr"]


def test_openapi_documents_both_endpoints(client):
    schema = client.get("/openapi.json").json()
    comp = schema["components"]["schemas"]
    assert set(comp["GenerateRequest"]["properties"]) == {"name", "input", "prefix"}
    assert comp["GenerateRequest"]["required"] == ["name", "input"]
    assert set(comp["Generation"]["properties"]) == {"output", "score"}
    assert set(comp["EncodeRequest"]["properties"]) == {"name", "input"}
    assert comp["EncodeResponse"]["properties"]["outputs"]["items"]["type"] == "number"
    for path in ("/generate", "/encode"):
        responses = schema["paths"][path]["post"]["responses"]
        assert {"200", "400", "404", "413", "422", "503"} <= set(responses)
    assert {"file_path", "position", "imports"} <= set(comp["SearchRequest"]["properties"])


# ---------------------------------------------------------------------------------------
# Load shedding: past the bound, 503 and Retry-After at once; the queued ones still answered.

def test_a_full_generator_queue_sheds_load_with_503(run_dir, mini_root, models, generator_dir, service):
    cfg = make_cfg(run_dir, mini_root, models, generator_dir,
                   batching={"max_batch_size": 1, "max_queued": 2})
    svc = SearchService(cfg, loaded=service.loaded)
    gate, entered = threading.Event(), threading.Event()
    served = svc.generators["tiny-tacgen"]
    real = served.generate

    def held(*args, **kwargs):  # the first batch holds the model thread until the gate opens
        entered.set()
        assert gate.wait(30)
        return real(*args, **kwargs)

    served.generate = held
    try:
        with BackgroundServer(create_app(svc)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
            running = svc.submit_generate("tiny-tacgen", STATE)
            assert entered.wait(30)
            waiting = [svc.submit_generate("tiny-tacgen", s) for s in ("⊢ True", "⊢ False")]
            r = c.post("/generate", content=lean_request(name="tiny-tacgen", input=STATE, prefix=""),
                       headers=LEAN_HEADERS)
            assert r.status_code == 503, r.text
            assert int(r.headers["Retry-After"]) >= 1 and r.headers["Connection"] == "close"
            assert r.json()["error"] == (f"generator 'tiny-tacgen' has 2 requests waiting, its limit; retry "
                                         f"in {r.headers['Retry-After']} s")
            # Another kind of request has its own queue: a search is taken, not refused.
            search = svc.submit("⊢ True", 3, retriever="bm25")
            gate.set()
            assert [len(f.result(60).suggestions) > 0 for f in (running, *waiting)] == [True] * 3
            assert len(search.result(60).hits) == 3
            assert generate_as_leancopilot(c, "tiny-tacgen", STATE)  # and it serves again
            h = c.get("/health").json()
            assert h["counts"]["shed"] == 1 and h["counts"]["rejected"] == 0 and h["batching"]["refused"] == 1
    finally:
        gate.set()
        svc.close()


def test_batcher_bounds_each_key_and_estimates_the_wait():
    import time
    gate = threading.Event()
    calls: list[tuple[str, list[int]]] = []

    def run(key, items):
        if key == "slow":
            time.sleep(0.3)
        else:
            gate.wait(10)
        calls.append((key, list(items)))
        return items

    b = Batcher(run, max_batch_size=8, batch_size_of=lambda key: 2 if key == "g" else None)
    try:
        assert b.submit("slow", 0, max_queued=1).result(10) == 0
        first = b.submit("g", 1)  # runs, held by the gate
        time.sleep(0.1)
        queued = [b.submit("g", i, max_queued=3) for i in (2, 3, 4)]
        with pytest.raises(QueueFull) as full:
            b.submit("g", 5, max_queued=3)
        assert full.value.queued == 3 and full.value.retry_after_s == 1  # no "g" batch timed yet
        other = b.submit("h", 6, max_queued=3)  # another key's queue is its own
        gate.set()
        assert [f.result(10) for f in (first, *queued, other)] == [1, 2, 3, 4, 6]
        # "g" in batches of 2; a batch takes the first waiting job's key, so g's last job goes before h.
        assert calls[1:] == [("g", [1]), ("g", [2, 3]), ("g", [4]), ("h", [6])]
        # The estimate follows measured batch times: 3 waiting "slow" jobs (batch size 8) are one
        # batch after the running one; 17 are three.
        t = b._batch_seconds["slow"]
        assert 0.3 <= t < 1.0
        assert b._drain_estimate("slow", 3) == max(1, math.ceil(2 * t))
        assert b._drain_estimate("slow", 17) == math.ceil(4 * t) >= 2
        assert b.stats()["refused"] == 1
    finally:
        gate.set()
        b.close()


# ---------------------------------------------------------------------------------------
# Theorem context on /search: inaccessible premises disappear.

def search(client, **body) -> dict:
    r = client.post("/search", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def names(body: dict) -> list[str]:
    return [h["full_name"] for h in body["results"]]


@pytest.mark.parametrize("retriever", ["cfr", "bm25", "cfr+car"])
def test_context_removes_premises_the_file_cannot_use(client, service, reference, retriever):
    corpus = service.loaded.corpus
    k = 10
    free = search(client, state=STATE, k=k, retriever=retriever)
    assert free["context"] is None
    top = corpus.premises[free["results"][0]["index"]]

    # In its own file, at the line where it is declared: it has not ended yet, so it is gone.
    body = search(client, state=STATE, k=k, retriever=retriever, file_path=top.path, position=list(top.start))
    mask = corpus.accessible_mask(top.path, top.start)
    assert not mask[free["results"][0]["index"]]
    assert free["results"][0]["index"] not in [h["index"] for h in body["results"]]
    assert all(mask[h["index"]] for h in body["results"])
    want = reference[retriever].retrieve([STATE], k, [TheoremContext(top.path, top.start)])[0]
    assert [h["index"] for h in body["results"]] == [h.index for h in want]
    assert body["context"] == {"file_path": top.path, "position": list(top.start), "imports": [],
                               "unknown_imports": [], "accessible": int(mask.sum())}

    # A file of the user's own that imports a module which does not reach the top premise's file.
    f_top = corpus.file_index[top.path]
    other = next(p for i, p in enumerate(corpus.files)
                 if i != f_top and not corpus.closure_mask(i)[f_top] and corpus.imports[i])
    body = search(client, state=STATE, k=k, retriever=retriever, imports=[module_name(other), "Init.Core"])
    allowed = corpus.imports_mask([other])
    assert free["results"][0]["index"] not in [h["index"] for h in body["results"]]
    assert all(allowed[h["index"]] for h in body["results"])
    want = reference[retriever].retrieve([STATE], k, [ImportsContext((other,))])[0]
    assert [h["index"] for h in body["results"]] == [h.index for h in want]
    assert body["context"]["imports"] == [other] and body["context"]["unknown_imports"] == ["Init.Core"]
    assert body["context"]["accessible"] == int(allowed.sum())

    # Importing the premise's own module brings it back (first, for a retriever that scores
    # each premise on its own; CAR's fusion standardizes over the candidates it is given).
    body = search(client, state=STATE, k=k, retriever=retriever, imports=[module_name(top.path)])
    want = reference[retriever].retrieve([STATE], k, [ImportsContext((top.path,))])[0]
    assert [h["index"] for h in body["results"]] == [h.index for h in want]
    assert free["results"][0]["index"] in [h["index"] for h in body["results"]]
    if retriever != "cfr+car":
        assert body["results"][0]["index"] == free["results"][0]["index"]


def test_file_may_be_named_by_module_or_by_a_path_on_disk(client, service):
    corpus = service.loaded.corpus
    path = next(p for p in corpus.files if p.startswith("Mathlib/") and corpus.imports[corpus.file_index[p]])
    line = 40
    want = search(client, state=STATE, k=5, retriever="bm25", file_path=path, position=[line, 1])
    for name in (module_name(path), f"/home/me/mathlib4/{path}"):
        body = search(client, state=STATE, k=5, retriever="bm25", file_path=name, position=[line, 1])
        assert names(body) == names(want) and body["context"]["file_path"] == path
    # Without a position, the whole file: everything declared in it is accessible too.
    whole = search(client, state=STATE, k=5, retriever="bm25", file_path=path)
    lo, hi = corpus.file_ranges[corpus.file_index[path]]
    assert whole["context"]["position"] is None
    assert whole["context"]["accessible"] == int(corpus.closure_mask(corpus.file_index[path])[corpus.premise_file].sum()) + hi - lo


def test_a_context_the_reloaded_corpus_lacks_fails_alone(service):
    """A search checked against one corpus and run after a reload to another that lacks its
    file gets 409; the searches batched with it are answered."""
    import time
    from prover.serve.context import ResolvedContext
    from prover.serve.errors import Conflict
    gone = ResolvedContext(TheoremContext("Gone/File.lean", (3, 1)), 10, file_path="Gone/File.lean")
    path = service.loaded.corpus.files[5]
    kept = ResolvedContext(TheoremContext(path, (1_000_000_000, 0)), 1, file_path=path)
    t0 = time.perf_counter()
    out = service._run_search(("search", "bm25", False), [(STATE, 3, gone, t0), (STATE, 4, None, t0),
                                                          (STATE, 2, kept, t0)])
    assert isinstance(out[0], Conflict) and out[0].status == 409 and "send it again" in out[0].message
    assert [len(r.hits) for r in out[1:]] == [4, 2] and out[2].context is kept
    assert out[1].hits == service.search(STATE, 4, retriever="bm25").hits


def test_batcher_fails_one_job_alone():
    b = Batcher(lambda key, items: [ValueError(f"bad {i}") if i < 0 else i * 2 for i in items])
    try:
        futures = [b.submit("k", i) for i in (1, -1, 3)]
        assert futures[0].result(10) == 2 and futures[2].result(10) == 6
        with pytest.raises(ValueError, match="bad -1"):
            futures[1].result(10)
    finally:
        b.close()


CONTEXT_BAD = [
    # The hint names a file of this corpus (issue 48: it named Mathlib/Data/Nat/Basic.lean, not in it).
    ({"file_path": "Mathlib/Nope.lean"}, "file_path", "file 'Mathlib/Nope.lean' is not in the corpus (362 files); "
     "give a corpus path such as Mathlib/Init/Data/Nat/Notation.lean or a module such as Mathlib.Init.Data.Nat.Notation"),
    ({"file_path": ""}, "file_path", "file '' is not in the corpus"),
    ({"position": [3, 1]}, "position", "position needs file_path"),
    ({"file_path": "Mathlib.Init.Data.Nat.Notation", "position": [3]}, "position", "position must be [line, column]"),
    ({"file_path": "Mathlib.Init.Data.Nat.Notation", "position": [0, 1]}, "position", "line >= 1"),
    ({"file_path": "Mathlib.Init.Data.Nat.Notation", "imports": ["Aesop"]}, "imports", "not both"),
    ({"imports": ["Init.Core", "Lean"]}, "imports", "none of the imports is a file of the corpus ('Init.Core', 'Lean')"),
    ({"imports": []}, "imports", "none of the imports is a file of the corpus (an empty list)"),
]


@pytest.mark.parametrize("extra,field,message", CONTEXT_BAD, ids=[m[:30] for _, _, m in CONTEXT_BAD])
def test_bad_context_is_400_with_a_clear_message(client, extra, field, message):
    r = client.post("/search", json={"state": STATE, **extra})
    assert r.status_code == 400, r.text
    assert message in r.json()["error"] and r.json()["field"] == field


def test_page_has_the_optional_file_path(client):
    page = client.get("/").text
    assert 'id="file_path"' in page and 'id="line"' in page
    assert "body.file_path" in page and "body.position" in page
