"""Shared fixtures: where the reference data lives, and tiny hand-written datasets.

The data folder is `$PROVER_DATA`, or else `../shared/data` beside the repository. It is
referenced by path, never copied into the project. Tests that need it skip (with the path
they looked at) only when the folder is truly missing.
"""
from __future__ import annotations

import json
import os

# Before torch is imported anywhere: spinning OpenMP threads slow small models 5-10x on 2 cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def clean_commit(monkeypatch):
    """A fixed, clean commit for whatever a test writes: results rows from a dirty checkout are
    marked "(dirty tree)", and tests must not change with uncommitted edits of whoever runs them.
    Tests of the commit itself set or unset $PROVER_GIT_COMMIT on top of this."""
    monkeypatch.setenv("PROVER_GIT_COMMIT", "0000000-test")


def find_data_root() -> Path:
    """`$PROVER_DATA` if set, else `<repo>/../shared/data` (it may not exist)."""
    env = os.environ.get("PROVER_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


DATA_ROOT = find_data_root()
# Configs name datasets in the data folder (`${data:NAME}`, prover/data/location.py), which is
# $PROVER_DATA, else the per-user folder: the tests' default is ours, beside the repository.
os.environ.setdefault("PROVER_DATA", str(DATA_ROOT))


def require(path: Path) -> Path:
    """`path`, or skip the calling test saying which data is missing and how to provide it."""
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set PROVER_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The shared data folder (leandojo-sample/, mathlib-src-mini/, mathlib-src/)."""
    return require(DATA_ROOT)


@pytest.fixture(scope="session")
def leandojo_sample(data_root: Path) -> Path:
    """`leandojo-sample/test.json`: 20 real LeanDojo Benchmark 4 records."""
    return require(data_root / "leandojo-sample" / "test.json")


@pytest.fixture(scope="session")
def mini_root(data_root: Path) -> Path:
    """`mathlib-src-mini/`: 362 files, 9,375 premises, random + novel_premises splits."""
    return require(data_root / "mathlib-src-mini")


# ---------------------------------------------------------------------------------------
# Tiny hand-written datasets (LeanDojo layout) for exact assertions.

def premise(name: str, start: tuple[int, int], end: tuple[int, int], code: str | None = None,
            kind: str = "theorem", **extra) -> dict:
    return {"full_name": name, "code": code or f"theorem {name} : True", "start": list(start),
            "end": list(end), "kind": kind, **extra}


def tactic(text: str, premises: list[tuple[str, str]] = (), before: str = "⊢ True",
           after: str = "no goals") -> dict:
    """A traced tactic using `premises` [(full_name, def_path), ...]."""
    return {
        "tactic": text,
        "annotated_tactic": [text, [{"full_name": n, "def_path": p, "def_pos": [1, 1],
                                     "def_end_pos": [1, 2]} for n, p in premises]],
        "state_before": before, "state_after": after,
    }


def theorem_record(name: str, file_path: str, tactics: list[dict],
                   start: tuple[int, int] = (10, 1), end: tuple[int, int] = (12, 1)) -> dict:
    return {"url": "https://example.org/repo", "commit": "abc", "file_path": file_path,
            "full_name": name, "start": list(start), "end": list(end), "traced_tactics": tactics}


def benchmark_script(name: str):
    """A script under benchmarks/ (not a package) imported as a module, for its functions;
    `name` may be `tried/<script>` (benchmarks/tried/)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name.replace("/", "."), REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_json(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


TINY_CORPUS = [
    # A <- B <- C (C imports B, B imports A); D is unrelated.
    {"path": "A.lean", "imports": [], "premises": [
        premise("a1", (1, 1), (1, 20)),
        premise("a2", (3, 1), (3, 20)),
        premise("dup", (5, 1), (5, 20)),
    ]},
    {"path": "B.lean", "imports": ["A.lean", "Lean/Core.lean"], "premises": [
        premise("b1", (1, 1), (1, 20)),
        premise("dup", (3, 1), (3, 20)),
    ]},
    {"path": "C.lean", "imports": ["B.lean"], "premises": [
        premise("c1", (1, 1), (2, 10)),
        premise("c2", (4, 1), (5, 8)),       # ends exactly where the theorem at (5, 8) starts
        premise("c3", (20, 1), (21, 5)),     # after the theorem
    ]},
    {"path": "D.lean", "imports": [], "premises": [
        premise("d1", (1, 1), (1, 20)),
    ]},
]


@pytest.fixture
def tiny_corpus_path(tmp_path: Path) -> Path:
    """corpus.jsonl of four files: A <- B <- C import chain plus unrelated D (10 premises)."""
    return write_jsonl(tmp_path / "corpus.jsonl", TINY_CORPUS)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on shared cores: a second thread mostly waits on the first, and results
    must not depend on the thread count."""
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
